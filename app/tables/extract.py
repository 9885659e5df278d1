"""The tables a sync stores as tables: a CSV file, and each visible sheet of a workbook.

Read with the same rules as their text units (app.formats.csv_rows, app.formats.excel): the header row
found under a title block and through merged cells, data rows numbered as their citations number them
(``faq.csv:r2``, ``file.xlsx:Sheet!r12``), each cell kept as its text and its typed value
(:func:`app.tables.values.parse_cell`). Column names keep the header's Japanese; an empty header cell,
or one holding a formula, is named by its position (``列3``); a repeated name gets ``_2``, ``_3``
(:func:`column_names`). Word, HTML and PowerPoint tables are read by app.tables.documents;
app.tables.reading reads any of them.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import DataSourceError
from app.formats.limits import Limits, display_name
from app.tables.runner import ROW_COLUMN
from app.tables.values import Cell, column_kind, column_unit, parse_cell

__all__ = [
    "SourceTable",
    "TABLE_SUFFIXES",
    "column_names",
    "csv_tables",
    "make_table",
    "sheet_table",
    "workbook_tables",
]

TABLE_SUFFIXES = (".csv", ".xlsx", ".xlsm", ".xls")


@dataclass(frozen=True)
class SourceTable:
    """One table of a file: its sheet (``""`` for a CSV; ``表2`` in a document), unique column names,
    each column's kind and unit, its data rows as ``(row number in the citation, cells)``, and the
    source ID its rows are cited by when that is not the row's own (a Word section, a slide; ``""``)."""

    sheet: str
    columns: list[str]
    kinds: list[str]
    units: list[str]
    rows: list[tuple[int, list[Cell]]]
    anchor: str = ""


def column_names(header: Iterable[str], width: int) -> list[str]:
    """``width`` unique column names from a header row: the header's text (whitespace runs as one
    space), ``列N`` for an empty cell, a formula (``=SUM(A1:A3)``) or a cell past the header, and
    ``name_2``, ``name_3`` … for a repeated name (the reserved row-number column's name counts as taken)."""
    texts = [" ".join(str(h).split()) for h in header][:width]
    texts += [""] * (width - len(texts))
    names: list[str] = []
    taken = {ROW_COLUMN}
    for position, text in enumerate(texts, start=1):
        name = f"列{position}" if not text or text.startswith("=") else text
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}_{n}"
        taken.add(candidate)
        names.append(candidate)
    return names


def make_table(sheet: str, header: list[str], rows: Iterable[tuple[int, list[str]]]) -> SourceTable | None:
    """A :class:`SourceTable` from a header and ``(row number, cell texts)`` rows; None without rows."""
    parsed = [(number, [parse_cell(text) for text in texts]) for number, texts in rows]
    if not parsed:
        return None
    width = max(len(header), max(len(cells) for _, cells in parsed))
    parsed = [(number, cells + [Cell("", "empty")] * (width - len(cells))) for number, cells in parsed]
    by_column = [[cells[i] for _, cells in parsed] for i in range(width)]
    return SourceTable(
        sheet,
        column_names(header, width),
        [column_kind(column) for column in by_column],
        [column_unit(column) for column in by_column],
        parsed,
    )


def csv_tables(path: Path, limits: Limits = Limits()) -> list[SourceTable]:
    """A CSV's one table (the first row its header; data rows numbered as ``file.csv:r1`` numbers them).
    DataSourceError as app.formats.csv_rows.read_csv_rows raises it."""
    import pandas as pd

    from app.formats.text import decode_text

    name = display_name(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataSourceError(f"{name}: cannot read ({exc.__class__.__name__})") from exc
    text = decode_text(raw, name) if raw.strip() else ""
    if not text.strip():
        return []
    try:
        frame = pd.read_csv(
            io.StringIO(text), dtype=str, header=None, keep_default_na=False, skipinitialspace=True,
            nrows=limits.max_rows + 2,
        )  # fmt: skip
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise DataSourceError(f"{name}: unreadable CSV ({type(exc).__name__})") from exc
    if len(frame) - 1 > limits.max_rows:
        raise DataSourceError(f"{name}: more than MAX_ROWS={limits.max_rows} data rows; skipped")
    records = frame.values.tolist()
    header = [str(h).strip() for h in records[0]]
    rows = [
        (number, [str(v).strip() for v in record])
        for number, record in enumerate(records[1:], start=1)
        if any(str(v).strip() for v in record)
    ]
    table = make_table("", header, rows)
    return [table] if table else []


def sheet_table(sheet) -> SourceTable | None:
    """One visible sheet (app.formats.excel.Sheet) as a table, its header found as the sheet's text
    units find it (title block, merged cells, a second header row); None when it has no data row."""
    from app.formats import excel

    rows = excel.fill_merged(sheet.rows, sheet.merges)
    head: list[tuple[int, list[Any]]] = []
    for number, row in enumerate(rows, start=1):
        if excel._filled(row):
            head.append((number, row))
            if len(head) >= excel.HEADER_SCAN_ROWS:
                break
    at = excel.find_header([row for _, row in head])
    header: list[str] = []
    first = 0
    if at is not None:
        spans = {
            col
            for min_col, min_row, max_col, max_row in sheet.merges
            if min_col < max_col and min_row <= head[at][0] <= max_row
            for col in range(min_col, max_col + 1)
        }
        below = head[at + 1][1] if at + 1 < len(head) else None
        header, two_rows = excel.header_names(head[at][1], below, spans)
        first = at + (2 if two_rows else 1)

    def data_rows() -> Iterator[list[Any]]:
        yield from (row for _, row in head[first:])
        yield from (row for row in rows if excel._filled(row))

    numbered: list[tuple[int, list[str]]] = []
    for row in data_rows():
        values = [excel.format_value(v) for v in row]
        if any(values):  # numbered as the sheet's text units are (a row with no text is none)
            numbered.append((len(numbered) + 1, values))
    return make_table(sheet.name, header, numbered)


def workbook_tables(path: Path, settings, on_page=None) -> list[SourceTable]:
    """Every visible sheet's table of an ``.xlsx``/``.xlsm``/``.xls`` workbook (the container checked
    as app.formats.excel checks it). DataSourceError when it cannot be read."""
    from app.formats import excel
    from app.formats.zipguard import check_office_zip

    limits, name = Limits.from_settings(settings), display_name(path)
    try:
        if path.suffix.lower() == ".xls":
            import xlrd

            book = xlrd.open_workbook(str(path), formatting_info=True, on_demand=True)
            try:
                return [t for s in excel._xlrd_sheets(book) if not s.hidden and (t := sheet_table(s))]
            finally:
                book.release_resources()
        from openpyxl import load_workbook

        check_office_zip(path, name, limits.max_zip_mb, limits.max_zip_entries)
        workbook = load_workbook(path, read_only=True, data_only=True, keep_links=False)
        try:
            return [t for s in excel._openpyxl_sheets(workbook) if not s.hidden and (t := sheet_table(s))]
        finally:
            workbook.close()
    except DataSourceError:
        raise
    except Exception as exc:  # a damaged workbook: this file's tables only
        raise DataSourceError(f"{name}: unreadable workbook ({exc.__class__.__name__})") from exc
