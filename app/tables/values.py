"""Typed cell values: pure functions, no I/O.

A table cell keeps its text and, where it holds one, a typed value (:class:`Cell`):

* a **number** — ``1,234``, full-width digits (``１２３``), ``1.5万`` (15000), ``3万2千`` (32000),
  ``1億2000万``, with a unit and notes around it: ``月額9800円（税別）`` is 9800 (unit ``円``), ``23人``
  is 23 (``人``), ``-5%`` and ``▲5%`` are -5 (``%``), ``1ユーザーあたり月額500円`` is 500 (a number
  followed by あたり/当たり/につき is the quantity the price is per, not the value). A cell is a
  number when, with its bracketed notes removed, it holds exactly one such number with at most
  :data:`MAX_AFFIX` characters before and after it (``従業員300名以下の中小企業`` is text);
* a **date** — ``2024/4/1``, ``2024-04-01``, ``2024年4月1日``, ``令和6年4月1日``, ``R6.4.1``,
  ``平成31年4月30日`` (the forms :func:`app.text.normalize.canonical` reads), a time after it
  ignored (``2024-04-01 09:30``); an impossible date (``2024/2/30``) is text;
* otherwise **text**; an empty cell is ``empty``.

A column's type (:func:`column_kind`) is the kind most of its non-empty cells have (text on a tie);
its unit (:func:`column_unit`) the unit most of its numbers carry.

Not read as numbers: kanji numerals without arabic digits (``三万円``), two numbers in one cell
(``10〜20人``), numbers inside words (``第3条`` is text: ``第`` is refused as a prefix).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from app.text.normalize import canonical
from app.versions.dates import parse_date

__all__ = [
    "Cell",
    "MAX_AFFIX",
    "column_kind",
    "column_unit",
    "format_number",
    "parse_cell",
    "parse_date_cell",
    "parse_number",
]

KINDS = ("number", "date", "text")
MAX_AFFIX = 4  # characters a number's prefix (月額) or unit (円, 営業日) may have
_NOTE = re.compile(r"[(\[【〔<《][^()\[\]【】〔〕<>《》]*[)\]】〕>》]")  # (税別), 【注】, after NFKC
_NUMBER = re.compile(
    r"(?P<sign>[-−▲△])?(?P<run>\d+(?:\.\d+)?(?:[万億千百]\d*(?:\.\d+)?)*)"
    r"(?P<per>[^\d]{0,6}?(?:あたり|当たり|につき))?"  # 1ユーザーあたり: what a price is per
)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_MULTIPLIERS = {"百": Decimal(100), "千": Decimal(1000), "万": Decimal(10_000), "億": Decimal(100_000_000)}
_BAD_PREFIX = ("第", "No", "NO", "no", "#", "№")
_DATE = re.compile(r"^(?P<y>\d{4})年(?P<m>\d{1,2})月(?P<d>\d{1,2})日(?:\s*\d{1,2}:\d{2}(?::\d{2})?)?$")


@dataclass(frozen=True)
class Cell:
    """One cell: its text as read, its kind (``number``, ``date``, ``text``, ``empty``), its typed
    value (a Decimal or a date; None for text) and a number's unit (``円``, ``%``; ``""`` if none)."""

    text: str
    kind: str
    value: Decimal | date | None = None
    unit: str = ""


def _run_value(run: str) -> Decimal:
    """The value of ``1234``, ``1.5万``, ``3万2千``, ``1億2000万`` (arabic digits with multipliers)."""
    total, section = Decimal(0), Decimal(0)
    for digits, unit in re.findall(r"(\d+(?:\.\d+)?)?([万億千百])?", run):
        if not digits and not unit:
            continue
        amount = Decimal(digits) if digits else Decimal(1)
        if unit in ("万", "億"):
            total += (section + amount) * _MULTIPLIERS[unit]
            section = Decimal(0)
        elif unit:
            section += amount * _MULTIPLIERS[unit]
        else:
            section += amount
    return total + section


def parse_number(text: str | None) -> tuple[Decimal, str] | None:
    """``(value, unit)`` of a cell holding one number (see the module docstring), else None:
    ``parse_number("月額9800円（税別）")`` is ``(Decimal(9800), "円")``."""
    plain = _THOUSANDS.sub("", unicodedata.normalize("NFKC", text or ""))
    plain = "".join(_NOTE.sub("", plain).split())
    if not plain:
        return None
    found = [m for m in _NUMBER.finditer(plain) if not m.group("per")]
    per = [m for m in _NUMBER.finditer(plain) if m.group("per")]
    if len(found) != 1:
        return None
    m = found[0]
    prefix = plain[per[-1].end() if per and per[-1].end() <= m.start() else 0 : m.start()]
    unit = plain[m.end() :]
    if len(prefix) > MAX_AFFIX or len(unit) > MAX_AFFIX or prefix.endswith(_BAD_PREFIX):
        return None
    if any(ch.isdigit() or ch in ".,/:" for ch in prefix + unit) or re.search(r"[A-Za-z]", prefix):
        return None  # 2.0.1, 12:30, A-100: a version, a time, a code
    try:
        value = _run_value(m.group("run"))
    except InvalidOperation:
        return None
    return (-value if m.group("sign") else value), unit


def parse_date_cell(text: str | None) -> date | None:
    """The date a cell holds (``2024/4/1``, ``令和6年4月1日``, ``R6.4.1`` …; a time after it ignored), else
    None; an impossible date is None."""
    plain = _NOTE.sub("", unicodedata.normalize("NFKC", text or "")).strip()
    if (
        not plain
        or not plain[0].isdigit()
        and not plain.startswith(("令和", "平成", "昭和", "大正", "R", "H", "S", "T"))
    ):
        return None
    m = _DATE.match(canonical(plain).strip())
    return parse_date(m["y"], m["m"], m["d"]) if m else None


def parse_cell(text: str | None) -> Cell:
    """A cell's text as a :class:`Cell`: a date first (``2024-04-01`` is no number), then a number."""
    text = (text or "").strip()
    if not text:
        return Cell("", "empty")
    if (day := parse_date_cell(text)) is not None:
        return Cell(text, "date", day)
    if (number := parse_number(text)) is not None:
        return Cell(text, "number", number[0], number[1])
    return Cell(text, "text")


def column_kind(cells: Iterable[Cell]) -> str:
    """The kind most of the column's non-empty cells have: ``number``, ``date`` or ``text`` (text on a
    tie, or when the column is empty)."""
    counts = Counter(c.kind for c in cells if c.kind != "empty")
    if not counts:
        return "text"
    best = max(counts.values())
    winners = [kind for kind in KINDS if counts.get(kind) == best]
    return winners[0] if len(winners) == 1 else "text"


def column_unit(cells: Iterable[Cell]) -> str:
    """The unit most of the column's numbers carry (the first seen on a tie; ``""`` when none)."""
    counts = Counter(c.unit for c in cells if c.kind == "number")
    return counts.most_common(1)[0][0] if counts else ""


def format_number(value: Decimal | float | int) -> str:
    """A number as an answer writes it: ``9800``, ``1,200,000`` (thousands separated), ``3.5``
    (no trailing zeros), ``-5``; a float is rounded to 10 significant digits first."""
    number = Decimal(f"{value:.10g}") if isinstance(value, float) else Decimal(value)
    if number == number.to_integral_value():
        return f"{int(number):,}"
    return format(number.normalize(), ",f")
