"""A version's effective date: pure functions, no I/O.

The date a document's text states beside 施行, 改定, 改訂, 制定 or 作成 (``2024年4月1日改定``,
``施行日: 令和6年4月1日``, ``R6.4.1 改訂``, ``2024/4/1から施行する``; the latest when it states several,
as a revision history does), else a date in its file name (``規程_20240401.docx``, ``規程_2024-04-01``,
``規程_令和6年4月1日``, ``規程_2024.docx`` → 2024-01-01), else the file's modification time. The
forms are read by app.text.normalize (Western, era and abbreviated era forms all become
``YYYY年M月D日`` first).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, date, datetime

from app.text.normalize import canonical

__all__ = ["EFFECTIVE_WORDS", "effective_date", "name_date", "parse_date", "stated_date"]

EFFECTIVE_WORDS = ("施行", "改定", "改訂", "制定", "作成")
# Only the head and the tail of a long text are read: a rule states its dates on its first page
# (改定日) or in its closing provisions (附則: この規程は…から施行する).
TEXT_WINDOW = 6000

_DATE = r"(?P<y>\d{4})年(?P<m>\d{1,2})月(?P<d>\d{1,2})日"
_WORD = "|".join(EFFECTIVE_WORDS)
# a date, then within a few characters one of the words (2024年4月1日から施行, 2024年4月1日 改定)
_DATE_THEN_WORD = re.compile(_DATE + r"[\s　]*(?:付け?|より|から)?[\s　]*(?:で)?[\s　]*(?:" + _WORD + ")")
# a word, then a date (施行日: 2024年4月1日, 改定 2024年4月1日, 制定 令和6年4月1日)
_WORD_THEN_DATE = re.compile(r"(?:" + _WORD + r")(?:日|年月日)?[\s　]*[:：]?[\s　]*" + _DATE)
_NAME_COMPACT = re.compile(r"(?<!\d)(?P<y>(?:19|20)\d{2})(?P<m>\d{2})(?P<d>\d{2})(?!\d)")
_NAME_YEAR = re.compile(r"(?<![\d.])(?P<y>(?:19|20)\d{2})(?![\d])")


def parse_date(year: int | str, month: int | str, day: int | str) -> date | None:
    """``date(year, month, day)``, or None when it is no calendar date."""
    try:
        return date(int(year), int(month), int(day))
    except ValueError:
        return None


def stated_date(text: str | None) -> date | None:
    """The latest date ``text`` states as its 施行/改定/改訂/制定/作成 date, or None:
    ``stated_date("令和6年4月1日改定")`` is ``date(2024, 4, 1)``."""
    if not text:
        return None
    window = text if len(text) <= 2 * TEXT_WINDOW else text[:TEXT_WINDOW] + "\n" + text[-TEXT_WINDOW:]
    normal = canonical(window)
    found = [
        parse_date(m["y"], m["m"], m["d"])
        for pattern in (_DATE_THEN_WORD, _WORD_THEN_DATE)
        for m in pattern.finditer(normal)
    ]
    dates = [d for d in found if d is not None]
    return max(dates) if dates else None


def name_date(name: str) -> date | None:
    """A date in a file name (folders and extension included or not), or None: ``20240401``,
    ``2024-04-01``, ``2024.4.1``, ``令和6年4月1日``, ``R6.4.1``; a year alone is its 1 January."""
    stem = unicodedata.normalize("NFKC", name.rsplit("/", 1)[-1])
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", stem)
    compact = _NAME_COMPACT.search(stem)
    if compact and (d := parse_date(compact["y"], compact["m"], compact["d"])):
        return d
    normal = canonical(stem.replace("_", " "))
    full = re.search(_DATE, normal)
    if full and (d := parse_date(full["y"], full["m"], full["d"])):
        return d
    month = re.search(r"(?P<y>\d{4})年(?P<m>\d{1,2})月", normal)
    if month and (d := parse_date(month["y"], month["m"], 1)):
        return d
    year = _NAME_YEAR.search(normal)
    return date(int(year["y"]), 1, 1) if year else None


def effective_date(text: str | None, name: str, mtime: float | None) -> tuple[date | None, str]:
    """A version's effective date and where it was read: ``(date, "text" | "name" | "mtime")``, or
    ``(None, "")`` when there is none."""
    if (d := stated_date(text)) is not None:
        return d, "text"
    if (d := name_date(name)) is not None:
        return d, "name"
    if mtime is not None:
        return datetime.fromtimestamp(mtime, tz=UTC).date(), "mtime"
    return None, ""
