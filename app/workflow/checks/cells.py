"""Table rows (CSV, Excel) read as cells: the ``column:value`` lines of a row chunk (app.formats), the
values (and Latin-letter names) a question names that no candidate row of the table it asks about holds,
and the cell a question asks for when it names the row and the column (pure functions).

A question about version 20 of a product whose table ends at 13 names a value that other text may still
state (a date's day, a size, another column), so the ``absent_value`` check over whole texts passes it and
the model answers from a neighbouring row. Here the value is looked for in the cells of the rows only: when
the best re-ranked chunk is a table row, and the question names a code, a version, a year or a number of
two or more digits whose kind the table's cells have (bare numbers, versions and dates; codes), and no cell
of any candidate row of that table holds it, the question is refused before the model (issue 39).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from app.text.chunks import row_pairs, table_of
from app.text.normalize import contains

# The values a question names: codes (letters with digits: E3011, s390), versions and numbers.
_NAMED = re.compile(r"(?<![A-Za-z0-9_.-])(?:[A-Za-z][A-Za-z_-]*\d[A-Za-z0-9_-]*|\d+(?:\.\d+)*)(?![A-Za-z0-9_])")
# What follows a number that is a quantity the question asks about, not a value it names (``3文字``, ``2つ``).
_COUNTER = re.compile(r"^\s*(?:文字|桁|つ|個|件|人|名|回|日|時間|分|秒|円|ビット|バイト|%|％)")
_NUMBER_CELL = re.compile(r"^\d+(?:[.,]\d+)*$")
_DATE_CELL = re.compile(r"^\d{4}[-/.年]\d{1,2}(?:[-/.月]\d{1,2}日?)?$")
_CODE_CELL = re.compile(r"^[A-Za-z][A-Za-z_-]*\d[A-Za-z0-9_-]*$|^[A-Z]{2,4}$")
# A name a question gives in Latin letters (``Wakanda``, ``New Zealand``): capitalized words of 3+ letters.
_NAME = re.compile(r"(?<![A-Za-z0-9_])[A-Z][a-z]{2,}(?:[ ][A-Z][a-z]{2,})*(?![A-Za-z0-9_])")
# A cell holding such a name: Latin words, the first capitalized (``Japan``, ``Republic of Korea``).
_NAME_CELL = re.compile(r"^[A-Z][a-z][A-Za-z'.-]*(?:[ ,]+[A-Za-z'.()-]+)*$")


def row_cells(text: str) -> dict[str, str]:
    """The ``column:value`` lines of a row chunk as ``{column: value}`` (app.text.chunks.row_pairs; a
    repeated column keeps its first value, a value its first line: the answer may be read from it)."""
    cells: dict[str, str] = {}
    for column, value in row_pairs(text):
        cells.setdefault(column, value.split("\n", 1)[0])
    return cells


def named_values(query: str) -> list[str]:
    """The values ``query`` names that a key column would hold: codes (``E3011``), versions (``2.0``), and
    numbers of two or more digits (``20``, ``2005``) not followed by a counter (``12文字``); in order, once."""
    text = unicodedata.normalize("NFKC", query or "")
    found: list[str] = []
    for match in _NAMED.finditer(text):
        value = match.group(0)
        if value[0].isdigit():
            if _COUNTER.match(text[match.end() :]) or ("." not in value and len(value) < 2):
                continue
        if value not in found:
            found.append(value)
    return found


def named_names(query: str) -> list[str]:
    """The names ``query`` gives in Latin letters (capitalized words of three or more letters, a run of
    them as one: ``New Zealand``), in order, once."""
    text = unicodedata.normalize("NFKC", query or "")
    return list(dict.fromkeys(m.group(0) for m in _NAME.finditer(text)))


def _same_kind(value: str, cell: str) -> bool:
    """Whether ``cell`` is a value of the kind ``value`` is: a bare number, version or date for a number,
    a code for a code."""
    if value[0].isdigit():
        return bool(_NUMBER_CELL.match(cell) or _DATE_CELL.match(cell))
    return bool(_CODE_CELL.match(cell))


def absent_from_rows(query: str, ranked: Sequence[tuple[str, str]], candidates: Sequence[tuple[str, str]]) -> list[str]:
    """The values ``query`` names that no candidate row of the table it asks about holds in a cell.

    ``ranked`` (the re-ranked chunks) and ``candidates`` (all SEARCH_K) are ``(source, text)`` pairs. The
    table asked about is the best re-ranked chunk's, when that chunk is a table row; none otherwise (``[]``).
    A name in Latin letters (``Wakanda``) counts when the table has cells of names (``Japan``) and no candidate
    text, nor any candidate's source, holds it as a word (``Debian`` of ``debian.csv:r3`` is held).
    A value counts only when some candidate row of that table has a cell of its kind: ``20`` against rows
    whose version cells are ``2.0`` and ``12`` and whose date cell is ``2005-06-06`` is absent; ``2005`` is
    held by that date. Cells of its kind are compared as the number check compares
    (app.text.normalize.contains: ``20`` is not in ``2005`` nor in ``2.0``); any other cell holds it only as
    a word of its own (``Foo 20``, not ``20MB``).
    """
    if not ranked:
        return []
    table = table_of(ranked[0][0])
    if table is None:
        return []
    cells = [
        cell
        for source, text in [*ranked, *candidates]
        if table_of(source) == table
        for cell in row_cells(text).values()
        if cell
    ]
    absent = []
    for value in named_values(query):
        kind = [cell for cell in cells if _same_kind(value, cell)]
        if kind and not any(contains(cell, value) for cell in kind) and not any(_as_word(value, c) for c in cells):
            absent.append(value)
    if any(_NAME_CELL.match(cell) for cell in cells):  # a table of names: a name no text holds is absent too
        pairs = [*ranked, *candidates]
        absent += [
            name
            for name in named_names(query)
            if not any(_as_word(name, text) or name.casefold() in source.casefold() for source, text in pairs)
        ]
    return absent


def _as_word(value: str, cell: str) -> bool:
    """Whether ``cell`` holds ``value`` as a word of its own (``Foo 20``, not ``20MB`` nor ``2.0``)."""
    return bool(re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.]|\.\d)", cell, re.IGNORECASE))


# The English words of column names (ISO-style tables: ``alpha_3``, ``official_name``, ``numeric``) and the
# words a Japanese question uses for them. A column's name as written in the question always counts.
COLUMN_HINTS: dict[str, tuple[str, ...]] = {
    "name": ("名前", "名称", "国名", "英語名", "正式名"),
    "official": ("正式",),
    "numeric": ("数字", "数値", "番号"),
    "number": ("番号", "数字", "数値"),
    "code": ("コード", "記号"),
    "alpha": ("文字", "英字"),
    "ja": ("日本語", "和名", "カナ", "読み"),
    "en": ("英語",),
    "date": ("日付", "年月日"),
    "price": ("価格", "料金", "値段"),
    "version": ("版", "バージョン"),
    "release": ("リリース", "公開"),
}
_COLUMN_WORDS = re.compile(r"[a-z]+|\d+")
_ROW_NAME_PARTS = re.compile(r"[()（）,、/・;；\s]+")


def asked_column(query: str, columns: Sequence[str]) -> str | None:
    """The column ``query`` asks for: its name as written in the question, or the column whose English
    words (``official``, ``name``; a digit as in ``3文字``) the question names the most of by
    COLUMN_HINTS, fewer unnamed words breaking ties (``name`` before ``name_ja``); None when no column is
    named, or two are named equally."""
    text = unicodedata.normalize("NFKC", query or "").casefold()
    scores: list[tuple[int, int, str]] = []
    for column in columns:
        name = unicodedata.normalize("NFKC", column).casefold().strip()
        if len(name) >= 2 and name in text:
            scores.append((100, 0, column))
            continue
        words = _COLUMN_WORDS.findall(name)
        named = sum(
            bool(re.search(rf"(?<!\d){word}(?!\d)", text))
            if word.isdigit()
            else any(hint in text for hint in COLUMN_HINTS.get(word, ()))
            for word in words
        )
        if named:
            scores.append((named, -(len(words) - named), column))
    scores.sort(reverse=True)
    if not scores or (len(scores) > 1 and scores[0][:2] == scores[1][:2]):
        return None
    return scores[0][2]


def names_row(query: str, cells: dict[str, str], but: str = "") -> bool:
    """Whether ``query`` names the row: a cell other than ``but`` (of at most 40 characters), or a part of
    one (``韓国`` of ``大韓民国 (韓国)``), of two or more characters occurs in it."""
    text = unicodedata.normalize("NFKC", query or "").casefold()
    for column, value in cells.items():
        if column == but or not value or len(value) > 40:
            continue
        parts = {value, *_ROW_NAME_PARTS.split(value)}
        if any(len(p) >= 2 and not p.isdigit() and p.casefold() in text for p in parts):
            return True
    return False


def cell_answer(query: str, rows: Sequence[tuple[str, str]]) -> tuple[int, str, str] | None:
    """``(number, column, value)`` when the question names a row of the first table among ``rows`` (the
    numbered contexts' ``(source, text)``, 1-based) and the one column it asks for, that cell having a
    value: the answer read from the cell (``日本の3文字の国コードは？`` → ``alpha_3``: ``JPN``). The first
    such row in context order; None when there is none. Rows of other tables are not read: a row named
    further down may be another table's (``日本`` of a country table, asked about the yen)."""
    tables = [table_of(source) for source, _ in rows]
    first = next((t for t in tables if t), None)
    for number, ((_, text), table) in enumerate(zip(rows, tables, strict=True), start=1):
        if first is None or table != first:
            continue
        cells = row_cells(text)
        column = asked_column(query, list(cells))
        if column and cells.get(column) and names_row(query, cells, but=column):
            return number, column, cells[column]
    return None


def wrong_cell(answer: str, query: str, source: str, text: str) -> tuple[str, str] | None:
    """``(column, value)`` of the cell the question asks for when ``answer``, citing the table row
    ``(source, text)``, states another cell of that row instead (``JP`` for the three-letter code ``JPN``,
    the kana name for the English one); None when the row is not a table row, no single column is asked
    for, the answer states the asked value, or it states no other cell (cells the question itself holds
    do not count)."""
    if table_of(source) is None:
        return None
    cells = row_cells(text)
    column = asked_column(query, list(cells))
    if not column or not cells.get(column) or contains(answer, cells[column]):
        return None
    others = [
        value for name, value in cells.items() if name != column and len(value) >= 2 and not contains(query, value)
    ]
    return (column, cells[column]) if any(contains(answer, value) for value in others) else None
