"""One normalizer for the numbers in Japanese text: pure functions, no I/O.

Used by the number check (app.workflow.checks.numbers.unsupported_numbers) and the keyword metrics
(app.metrics.found_keywords), so that the same fact written two ways counts as one.

:func:`canonical` rewrites a text, in this order:

1. NFKC: full-width digits and letters to half-width (``１２`` → ``12``, ``ＡＢ`` → ``AB``),
   ``～`` → ``~``, ``㍻`` → ``平成``;
2. thousands separators: a comma between a digit and exactly three digits is dropped
   (``1,200`` → ``1200``; ``1,2,3`` and ``1,23`` are left as they are);
3. numbers written with kanji or with 万/億: a run of 〇零一二三四五六七八九十百千万億 directly
   followed by a counter (年 月 日 時 分 人 名 件 円 営業日 か月 …) becomes arabic digits
   (``三営業日`` → ``3営業日``, ``十五日`` → ``15日``, ``二〇二七年`` → ``2027年``); arabic digits with
   万/億 are multiplied out with or without a counter (``3万円`` → ``30000円``, ``1.5万`` → ``15000``,
   ``1億2000万`` → ``120000000``). Words where the numeral is not a count are left alone:
   ``一時`` (temporarily), ``一部``, ``一番``, ``一日``, ``一月``, ``一年``, ``一人``, ``一本``, ``一分``,
   ``十分`` (enough), ``三日月``, ``四日市``; a run not followed by a counter stays (``一般``, ``統一``);
4. dates to one form, ``YYYY年M月D日`` (no zero padding): ``2002-07-19``, ``2002/7/19``,
   ``2002.7.19``, ``2002年07月19日`` and the eras ``平成14年7月19日`` and ``H14.7.19`` (令和/R 2019-,
   平成/H 1989-2019, 昭和/S 1926-1989, 大正/T 1912-1926; ``元年`` = 1) all become ``2002年7月19日``;
   year and month (``2002-07``, ``2002/7``, ``平成14年7月``) become ``2002年7月``; month and day
   without a year, ``07月19日`` and ``7/19``, become ``7月19日`` (so a lone ``1/2`` is read as a
   date); an era year alone becomes the western year (``平成14年`` → ``2002年``). The Japanese form
   is chosen over ISO ``2002-07-19`` because partial keywords then stay substrings of the full
   date: ``2002年``, ``2002年7月``, ``7月19日`` and ``19日`` all occur in ``2002年7月19日``;
5. ranges: ``から``, ``~``, ``〜``, ``～`` between a number (with a unit of up to four letters) and a
   following number become ``〜`` (``9時から18時`` → ``9時〜18時``, ``1000~2000円`` → ``1000〜2000円``).

:func:`numbers` gives the numeric facts of a text as keys: a date ``2002-07-19``, a year and month
``2002-07``, a month and day ``--07-19`` (ISO 8601), a time ``9:30`` (from ``9:30``, ``09:30``,
``9時30分``, ``9時半``), a plain number without leading or trailing zeros (``06`` → ``6``,
``1,200`` → ``1200``, ``3.50`` → ``3.5``), plus what each fact implies: a date gives its year and
month, its month and day, and its year, month and day as plain numbers; a time ``H:MM`` its hour and
minute; ``H時`` the time ``H:00``. The rule of the number check (:func:`is_stated`): a number in an
answer is supported when its key (:func:`mentions`) is among the :func:`numbers` of the contexts or
the question, or, for a date, its year and its month-day are (a year-month: its year and month); so
``6月30日`` (``--06-30``) is supported by ``2027-06-30``, ``2027年6月31日`` (``2027-06-31``) is not,
and ``12`` is not supported by ``2012`` (a plain number must occur as a whole number or a date part).

:func:`contains` is the keyword test of the metrics: containment after :func:`canonical` (or after
NFKC and dropping thousands separators only), case-folded and without whitespace, where a keyword
that starts or ends with a digit must not continue a longer number (``12`` is not in ``2012``,
``9時`` is not in ``19時``, ``200円`` is not in ``1,200円``).

Not handled (left as written): two-digit years and era letters other than in ``H14.7.19``
(``02年7月19日``, ``R5年``), weekday names, times in :func:`canonical`
(``9:00`` and ``9時`` are one fact for :func:`numbers` but not the same text for :func:`contains`),
kanji numerals without a counter (``三つ``, ``一部``, ``二十``), 兆 and larger, calendar validity
beyond 1 ≤ month ≤ 12 and 1 ≤ day ≤ 31 (``6月31日`` is a date, and is unsupported unless stated),
negative numbers and percentages as such (``-5`` and ``5%`` are the number 5).
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from typing import NamedTuple

__all__ = ["Mention", "canonical", "contains", "is_stated", "mentions", "numbers"]

_ERAS = {"令和": 2018, "平成": 1988, "昭和": 1925, "大正": 1911}  # western year = start + era year
_ERA_LETTERS = {"R": "令和", "H": "平成", "S": "昭和", "T": "大正"}  # H14.7.19
_ERA = "令和|平成|昭和|大正"

# 2. A comma between a digit and exactly three digits (not four) is a thousands separator.
_SEPARATOR = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")

# 3. Numbers with kanji or 万/億. Longer counters first, so that 一時間 is read as 1 + 時間.
_KANJI_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
_LARGE_UNITS = {"万": 10_000, "億": 100_000_000}
_COUNTERS = (
    "営業日",
    "日間",
    "か月",
    "ヶ月",
    "カ月",
    "ヵ月",
    "箇月",
    "週間",
    "年間",
    "時間",
    "分間",
    "年",
    "月",
    "日",
    "時",
    "分",
    "秒",
    "人",
    "名",
    "個",
    "件",
    "円",
    "回",
    "台",
    "割",
    "週",
    "歳",
    "枚",
    "本",
    "階",
    "号",
    "番",
    "章",
    "条",
)
_NUMERAL_RUN = re.compile(
    r"(?<![\d.])(?P<run>(?:\d+(?:\.\d+)?|[〇零一二三四五六七八九十百千])"
    r"(?:\d+(?:\.\d+)?|[〇零一二三四五六七八九十百千万億])*)"
    r"(?P<counter>" + "|".join(_COUNTERS) + ")?"
)
# Words whose numeral is not a count: left alone when the match is the word or the word's start.
_WORDS = (
    "一時",
    "一部",
    "一番",
    "一日",
    "一月",
    "一年",
    "一人",
    "一本",
    "一分",
    "十分",
    "三日月",
    "四日市",
    "五日市",
    "八日市",
    "十日町",
    "二日酔",
)

# 4. Dates, times and numbers: one pattern, the first alternative that matches at a place wins.
_Y_OR_ERA = r"(?:(?P<{p}_era>" + _ERA + r")\s*(?P<{p}_ey>元|\d{{1,2}})|(?<!\d)(?P<{p}_y>\d{{4}}))\s*年"
_FACT = re.compile(
    "|".join(
        [
            _Y_OR_ERA.format(p="jd") + r"\s*(?P<jd_m>\d{1,2})\s*月\s*(?P<jd_d>\d{1,2})\s*日",
            _Y_OR_ERA.format(p="jy") + r"\s*(?P<jy_m>\d{1,2})\s*月",
            r"(?P<ey_era>" + _ERA + r")\s*(?P<ey_ey>元|\d{1,2})\s*年",
            r"(?<![\d./\-])(?P<sd_y>(?:19|20|21)\d{2})(?P<sd_sep>[-/.])(?P<sd_m>\d{1,2})(?P=sd_sep)(?P<sd_d>\d{1,2})"
            r"(?!\d|\.\d)",
            r"(?<![A-Za-z])(?P<ab_era>[RHST])(?P<ab_ey>\d{1,2})(?P<ab_sep>[./])(?P<ab_m>\d{1,2})(?P=ab_sep)"
            r"(?P<ab_d>\d{1,2})(?!\d|\.\d)",
            r"(?<![\d./\-])(?P<sy_y>(?:19|20|21)\d{2})[-/](?P<sy_m>\d{1,2})(?!\d|[-/.]\d)",
            r"(?<![\d.])(?P<md_m>\d{1,2})\s*月\s*(?P<md_d>\d{1,2})\s*日",
            r"(?<![A-Za-z\d/.\-_:])(?P<sl_m>\d{1,2})/(?P<sl_d>\d{1,2})(?![A-Za-z\d/]|\.\d)",
            r"(?<![\d.])(?P<jt_h>\d{1,2})\s*時\s*(?:(?P<jt_m>\d{1,2})\s*分|(?P<jt_half>半))",
            r"(?<![\d.])(?P<hr_h>\d{1,2})\s*時(?!間)",
            r"(?<![\d:.])(?P<tm_h>\d{1,2}):(?P<tm_m>\d{2})(?::\d{2})?(?![\d:])",
            r"(?P<num>\d+(?:\.\d+)*)",
        ]
    )
)
_DIGITS = re.compile(r"\d+(?:\.\d+)*")

# 5. A range: a number with a unit of up to four letters, then から or a wave dash, then a number.
_RANGE = re.compile(r"(\d[^\W\d_]{0,4}?)\s*(?:から|[~〜～])\s*(?=\d)")


class Mention(NamedTuple):
    """One number as written (``surface``), its key (``2002-07-19``, ``--06-30``, ``9:30``, ``1200``),
    the keys it implies (a date's year, month and day …) and the keys that state it together when
    they are stated apart (a date's year and month-day, a year-month's year and month)."""

    surface: str
    key: str
    implied: frozenset[str] = frozenset()
    parts: frozenset[str] = frozenset()


def canonical(text: str | None) -> str:
    """``text`` with its numbers, dates and ranges in one form (see the module docstring for the
    rules): ``平成14年7月19日`` → ``2002年7月19日``, ``１，２００円`` → ``1200円``, ``9時から18時`` →
    ``9時〜18時``, ``三営業日`` → ``3営業日``. Case and whitespace are kept."""
    rewritten = _FACT.sub(lambda m: _read_fact(m)[0], _prepare(text))
    return _RANGE.sub(r"\1〜", rewritten)


def mentions(text: str | None) -> list[Mention]:
    """The numbers of ``text`` in order, as written after steps 1-3 of :func:`canonical`
    (``2027年6月31日``, ``1200``, ``9時``), each with its key and the keys it implies."""
    return [mention for m in _FACT.finditer(_prepare(text)) for mention in _read_fact(m)[1]]


def numbers(text: str | None) -> set[str]:
    """Every key :func:`mentions` gives for ``text``, and every key those imply: ``2027-06-30`` gives
    ``2027-06-30``, ``2027-06``, ``--06-30``, ``2027``, ``6`` and ``30``."""
    return {key for mention in mentions(text) for key in (mention.key, *mention.implied)}


def is_stated(mention: Mention, stated: set[str]) -> bool:
    """The rule of the number check: ``mention`` (from an answer) is stated by ``stated`` (the
    :func:`numbers` of the contexts and the question) when its key is there, or all its parts are:
    ``2027年6月30日`` is stated by ``2027-06-30``, and by ``2027年度`` with ``6月30日``."""
    return mention.key in stated or (bool(mention.parts) and mention.parts <= stated)


def contains(haystack: str | None, needle: str | None) -> bool:
    """True if ``needle`` occurs in ``haystack``, both case-folded and without whitespace, either after
    NFKC and dropping thousands separators only, or after :func:`canonical`; a needle that starts
    (ends) with a digit must not be preceded (followed) by a digit or a decimal part there.
    False for a blank needle.

    ``contains("設立は2002年7月19日", "2002-07-19")`` and ``contains("2002-07-19", "平成14年")`` are True;
    ``contains("2012年", "12")`` and ``contains("19時まで", "9時")`` are False.
    """
    for form in (_plain_form, canonical):
        wanted = _fold(form(needle))
        if not wanted:
            return False
        if _occurs(_fold(form(haystack)), wanted):
            return True
    return False


def _nfkc(text: str | None) -> str:
    return unicodedata.normalize("NFKC", text or "")


def _plain_form(text: str | None) -> str:
    """NFKC without thousands separators: the text as written, for keywords :func:`canonical` would
    rewrite (``から`` in ``9時から18時``)."""
    return _SEPARATOR.sub("", _nfkc(text))


def _fold(text: str) -> str:
    return "".join(text.casefold().split())


def _occurs(haystack: str, needle: str) -> bool:
    """``needle`` in ``haystack``, not as a piece of a longer number."""
    before = r"(?<!\d)(?<!\d\.)" if needle[0].isdigit() else ""
    after = r"(?!\d)(?!\.\d)" if needle[-1].isdigit() else ""
    return re.search(before + re.escape(needle) + after, haystack) is not None


def _prepare(text: str | None) -> str:
    """Steps 1-3 of :func:`canonical`: NFKC, thousands separators, kanji and 万/億 numbers."""
    return _NUMERAL_RUN.sub(_read_numeral, _SEPARATOR.sub("", _nfkc(text)))


def _read_numeral(m: re.Match[str]) -> str:
    run, counter = m.group("run"), m.group("counter") or ""
    if not any(ch in _KANJI_DIGITS or ch in _SMALL_UNITS or ch in _LARGE_UNITS for ch in run):
        return m.group(0)  # arabic digits only
    has_kanji = any(ch in _KANJI_DIGITS or ch in _SMALL_UNITS for ch in run)
    if has_kanji and not counter:
        return m.group(0)  # 一般, 統一, 三つ: not a count
    if has_kanji and any(
        m.group(0) == w or (len(w) > len(m.group(0)) and m.string.startswith(w, m.start())) for w in _WORDS
    ):
        return m.group(0)
    return _format(_numeral_value(run)) + counter


def _numeral_value(run: str) -> Decimal:
    """The value of ``二千二十七``, ``二〇二七``, ``3万5千``, ``1.5万``, ``1億2000万``."""
    total, section, current = Decimal(0), Decimal(0), None
    for token in re.findall(r"\d+(?:\.\d+)?|.", run):
        if token[0].isdigit():
            current = Decimal(token) if current is None else current * 10 ** len(token) + Decimal(token)
        elif token in _KANJI_DIGITS:
            current = Decimal(_KANJI_DIGITS[token]) if current is None else current * 10 + _KANJI_DIGITS[token]
        elif token in _SMALL_UNITS:
            section += (Decimal(1) if current is None else current) * _SMALL_UNITS[token]
            current = None
        else:  # 万, 億
            section += current or 0
            total += (section or Decimal(1)) * _LARGE_UNITS[token]
            section, current = Decimal(0), None
    return total + section + (current or 0)


def _format(value: Decimal) -> str:
    """``15000`` for 15000.0, ``3.5`` for 3.50, ``100`` (not ``1E+2``)."""
    return format(value.normalize(), "f") if value != value.to_integral_value() else str(int(value))


def short_decimals(text: str) -> str:
    """``text`` with each decimal number in its shortest form, as the number check reads it
    (``0.250`` → ``0.25``, ``3.0`` → ``3``)."""
    return re.sub(r"[0-9]+\.[0-9]+", lambda m: _format(Decimal(m.group())), text)


def _plain_key(digits: str) -> str:
    """A plain number's key: no leading zeros, no trailing decimal zeros; ``1.2.3`` as it is."""
    return _format(Decimal(digits)) if digits.count(".") <= 1 else digits


def _plain(text: str) -> list[Mention]:
    return [Mention(d, _plain_key(d)) for d in _DIGITS.findall(text)]


def _year(m: re.Match[str], p: str) -> int:
    era = m.group(f"{p}_era")
    if era is None:
        return int(m.group(f"{p}_y"))
    era = _ERA_LETTERS.get(era, era)
    era_year = m.group(f"{p}_ey")
    return _ERAS[era] + (1 if era_year == "元" else int(era_year))


def _read_fact(m: re.Match[str]) -> tuple[str, list[Mention]]:
    """The canonical text of one match of ``_FACT`` and its mentions (a match that is not a valid
    date or time stays as written and gives its plain numbers)."""
    surface, groups = m.group(0), m.groupdict()
    if groups["jd_m"] is not None:
        return _date(surface, _year(m, "jd"), int(groups["jd_m"]), int(groups["jd_d"]))
    if groups["sd_y"] is not None:
        return _date(surface, int(groups["sd_y"]), int(groups["sd_m"]), int(groups["sd_d"]))
    if groups["ab_m"] is not None:
        return _date(surface, _year(m, "ab"), int(groups["ab_m"]), int(groups["ab_d"]))
    if groups["jy_m"] is not None or groups["sy_y"] is not None:
        year = _year(m, "jy") if groups["jy_m"] is not None else int(groups["sy_y"])
        month = int(groups["jy_m"] or groups["sy_m"])
        if not 1 <= month <= 12:
            return surface, _plain(surface)
        year_month = frozenset({str(year), str(month)})
        return f"{year}年{month}月", [Mention(surface, f"{year}-{month:02d}", year_month, year_month)]
    if groups["ey_era"] is not None:
        year = _year(m, "ey")
        return f"{year}年", [Mention(surface, str(year))]
    if groups["md_m"] is not None or groups["sl_m"] is not None:
        month, day = int(groups["md_m"] or groups["sl_m"]), int(groups["md_d"] or groups["sl_d"])
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return surface, _plain(surface)
        return f"{month}月{day}日", [Mention(surface, f"--{month:02d}-{day:02d}", frozenset({str(month), str(day)}))]
    if groups["jt_h"] is not None or groups["tm_h"] is not None:
        hour = int(groups["jt_h"] or groups["tm_h"])
        minute = 30 if groups["jt_half"] else int(groups["jt_m"] or groups["tm_m"])
        if hour > 30 or minute > 59:
            return surface, _plain(surface)
        return surface, [Mention(surface, f"{hour}:{minute:02d}", frozenset({str(hour), str(minute)}))]
    if groups["hr_h"] is not None:
        hour = int(groups["hr_h"])
        return surface, [Mention(surface, str(hour), frozenset({f"{hour}:00"}) if hour <= 30 else frozenset())]
    return surface, _plain(surface)


def _date(surface: str, year: int, month: int, day: int) -> tuple[str, list[Mention]]:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return surface, _plain(surface)
    implied = {f"{year:04d}-{month:02d}", f"--{month:02d}-{day:02d}", str(year), str(month), str(day)}
    parts = frozenset({str(year), f"--{month:02d}-{day:02d}"})
    key = f"{year:04d}-{month:02d}-{day:02d}"
    return f"{year}年{month}月{day}日", [Mention(surface, key, frozenset(implied), parts)]
