"""Excel workbooks: ``.xlsx``/``.xlsm`` with openpyxl (read-only, cached formula values), ``.xls`` with xlrd.

Every visible worksheet is read (hidden ones are skipped and logged). On each sheet:

* merged cells are filled: a merged header cell names every column it spans, a merged data cell
  (a category written once beside several rows) gives its value to every row it spans;
* the header row is found under any title block (:func:`find_header`); a second header row under
  merged header cells names those columns ``上/下``; the title block is kept in the context line;
* every data row below is one unit, its non-empty cells as ``column:value`` lines (as CSV rows),
  source ``file.xlsx:<sheet>!r<N>`` (N = the sheet's data row, 1-based, blank rows not counted),
  context ``stem — sheet — header``.

Formulas give the value Excel cached when it last saved the file (``data_only=True``); a formula
never calculated (a file written by a program, not saved by Excel) has none and reads as empty.
MAX_ROWS counts the workbook's data rows, MAX_CELL_CHARS one cell.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import DataSourceError
from app.formats.limits import Deadline, Limits, display_name, this_file_only
from app.formats.tables import cell_text, row_lines
from app.formats.zipguard import check_office_zip
from app.text.chunks import row_source

DEFAULT_LIMITS = Limits()  # the defaults of every limit (app.config's defaults)

log = logging.getLogger(__name__)

HEADER_SCAN_ROWS = 20  # the header is looked for among the first non-blank rows of a sheet
TITLE_MAX_CHARS = 100  # the title block's text kept in the context line


@dataclass
class Sheet:
    """One worksheet as a reader gives it: its name, whether it is hidden, its merged ranges
    ``(min_col, min_row, max_col, max_row)`` (1-based, inclusive) and its rows of cell values
    (Python values: str, int, float, bool, datetime … or None), row 1 first."""

    name: str
    hidden: bool
    merges: list[tuple[int, int, int, int]]
    rows: Iterable[list[Any]]


class _Cell:
    """A cell value with its number format (what :func:`format_value` needs)."""

    __slots__ = ("value", "number_format")

    def __init__(self, value: Any, number_format: str | None) -> None:
        self.value, self.number_format = value, number_format


def format_value(value: Any, number_format: str | None = None) -> str:
    """A cell's value as text, close to what Excel shows: whole floats without ``.0``, a percent format
    as ``5%``, dates as ``2024-04-01`` (with ``09:30`` when there is a time), TRUE/FALSE."""
    if isinstance(value, _Cell):
        value, number_format = value.value, value.number_format
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d") if value.time() == dt.time() else value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.strftime("%H:%M:%S" if value.second else "%H:%M")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return ""
        if number_format and "%" in number_format:
            return f"{value * 100:.10g}%"
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}" if isinstance(value, float) else str(value)
    return cell_text(str(value))


MAX_MERGE_COLUMNS = 1024  # a merged range fills at most this many columns (a sheet's own tables are narrower)


def fill_merged(rows: Iterable[list[Any]], merges: list[tuple[int, int, int, int]]) -> Iterator[list[Any]]:
    """``rows`` with every cell of a merged range holding the value of the range's top-left cell
    (Excel keeps the value there only). Streams: only the ranges that reach the current row are held.

    Bounded whatever the ranges say: a row with no value of its own stays empty (a range down a
    million blank rows fills none of them), and a range fills at most :data:`MAX_MERGE_COLUMNS`
    columns — a 4.9 KB workbook with one range over the whole sheet once took 5.4 GB here."""
    starting: dict[int, list[tuple[int, int, int, int]]] = {}
    for merge in merges:
        starting.setdefault(merge[1], []).append(merge)
    active: list[tuple[tuple[int, int, int, int], Any]] = []
    for number, row in enumerate(rows, start=1):
        row = list(row)
        for merge in starting.pop(number, ()):
            min_col = merge[0]
            active.append((merge, row[min_col - 1] if min_col <= len(row) else None))
        if active:
            active = [(merge, value) for merge, value in active if merge[3] >= number]
        if not active or not _filled(row):
            yield row
            continue
        for (min_col, _, max_col, _), value in active:
            if value is None:
                continue
            max_col = min(max_col, min_col + MAX_MERGE_COLUMNS - 1)
            if len(row) < max_col:
                row.extend([None] * (max_col - len(row)))
            for col in range(min_col, max_col + 1):
                row[col - 1] = value
        yield row


def _filled(row: list[Any]) -> list[Any]:
    """The non-empty cells of a row."""
    return [value for value in row if value is not None and str(value).strip() != ""]


def find_header(rows: list[list[Any]]) -> int | None:
    """The index in ``rows`` (a sheet's first non-blank rows, merged cells filled) of its header row:
    of the rows with at least two distinct values, all text, the one with the most cells (the first of
    those). A title block above it (one title cell, even merged across the table; ``作成日 | 2024-04-01``
    lines) is narrower or not all text. None when no row qualifies (no header: columns are 列1, 列2 …)."""
    best, width = None, 0
    for index, row in enumerate(rows):
        cells = _filled(row)
        if len({str(c).strip() for c in cells}) >= 2 and all(isinstance(c, str) for c in cells) and len(cells) > width:
            best, width = index, len(cells)
    return best


def header_names(header: list[Any], below: list[Any] | None, spans: set[int]) -> tuple[list[str], bool]:
    """Column names from the header row, and whether the row ``below`` it is a second header row.

    ``spans`` holds the (1-based) columns where the header cell is merged across columns. The row
    below is a sub-header when it has text under a merged header cell and nothing but text, each
    cell under a merged header cell or repeating the header (a header cell merged down); those columns
    are then named ``top/sub``.
    """
    names = [format_value(value) for value in header]
    if not below or not spans:
        return names, False
    cells = {col: value for col, value in enumerate(below, start=1) if _filled([value])}
    under = {col for col in cells if col in spans}
    if (
        not under
        or not all(isinstance(v, str) for v in cells.values())
        or not all(col in spans or (col <= len(header) and header[col - 1] == value) for col, value in cells.items())
    ):
        return names, False
    for col in under:
        names[col - 1] = (
            f"{names[col - 1]}/{format_value(cells[col])}" if col <= len(names) else format_value(cells[col])
        )
    return names, True


def sheet_units(
    name: str, stem: str, sheet: Sheet, limits: Limits, deadline: Deadline, counted: list[int]
) -> list[tuple[str, str, str]]:
    """One visible sheet's data rows as ``[(text, "file.xlsx:<sheet>!r<N>", context), ...]``.
    ``counted[0]`` is the workbook's data rows so far (MAX_ROWS spans the workbook)."""
    rows = fill_merged(sheet.rows, sheet.merges)
    head: list[tuple[int, list[Any]]] = []
    for number, row in enumerate(rows, start=1):
        if _filled(row):
            head.append((number, row))
            if len(head) >= HEADER_SCAN_ROWS:
                break
    at = find_header([row for _, row in head])
    title, header, first = "", [], 0
    if at is not None:
        header_row_number = head[at][0]
        spans = {
            col
            for min_col, min_row, max_col, max_row in sheet.merges
            if min_col < max_col and min_row <= header_row_number <= max_row
            for col in range(min_col, max_col + 1)
        }
        below = head[at + 1][1] if at + 1 < len(head) else None
        header, two_rows = header_names(head[at][1], below, spans)
        title = " ".join(dict.fromkeys(format_value(v) for _, row in head[:at] for v in _filled(row)))
        first = at + (2 if two_rows else 1)
    context = " — ".join(
        part for part in (stem, sheet.name, title[:TITLE_MAX_CHARS], ", ".join(h for h in header if h)) if part
    )
    units: list[tuple[str, str, str]] = []

    def data_rows() -> Iterator[list[Any]]:
        yield from (row for _, row in head[first:])
        yield from (row for row in rows if _filled(row))

    for row in data_rows():
        counted[0] += 1
        if counted[0] > limits.max_rows:
            raise DataSourceError(
                f"{name}: more than MAX_ROWS={limits.max_rows} data rows; skipped "
                "(raise MAX_ROWS, or split the workbook)"
            )
        if counted[0] % 1000 == 0:
            deadline.check(f"sheet {sheet.name}, row {len(units) + 1}")
        values = [format_value(v) for v in row]
        longest = max((len(v) for v in values), default=0)
        if longest > limits.max_cell_chars:
            raise DataSourceError(
                f"{name}: sheet {sheet.name} data row {len(units) + 1} has a cell of {longest} "
                f"characters, more than MAX_CELL_CHARS={limits.max_cell_chars}; skipped "
                "(raise MAX_CELL_CHARS to read it)"
            )
        text = row_lines(header, values)
        if text:
            units.append((text, row_source(name, len(units) + 1, sheet.name), context))
    return units


def workbook_units(path: Path, sheets: Iterable[Sheet], limits: Limits) -> list[tuple[str, str, str]]:
    """Every visible sheet's rows (:func:`sheet_units`); hidden sheets are logged and skipped.
    DataSourceError when no sheet has a data row."""
    name = display_name(path)
    deadline = Deadline(name, limits.parse_timeout_s)
    units: list[tuple[str, str, str]] = []
    counted = [0]
    for sheet in sheets:
        if sheet.hidden:
            log.info("%s: hidden sheet %r skipped", name, sheet.name)
            continue
        units.extend(sheet_units(name, path.stem, sheet, limits, deadline, counted))
    if not units:
        raise DataSourceError(f"{name}: no data rows on any visible sheet (an empty workbook)")
    return units


def _openpyxl_sheets(workbook) -> Iterator[Sheet]:
    """The worksheets of an openpyxl read-only workbook as :class:`Sheet` (chart sheets have no rows)."""
    for ws in workbook.worksheets:
        hidden = ws.sheet_state != "visible"
        merges = [] if hidden else _merged_ranges(ws)
        if not hidden:
            ws.reset_dimensions()  # a wrong stored dimension must not cut rows off
        yield Sheet(ws.title, hidden, merges, () if hidden else _openpyxl_rows(ws))


def _openpyxl_rows(ws) -> Iterator[list[Any]]:
    """A read-only worksheet's rows from row 1 (missing rows as empty lists); a number keeps its
    number format (for percentages)."""
    expected = 1
    for row in ws.iter_rows(min_row=1):
        number = next((cell.row for cell in row if getattr(cell, "row", None)), expected)
        while expected < number:
            yield []
            expected += 1
        yield [
            _Cell(cell.value, cell.number_format)
            if isinstance(cell.value, (int, float))
            and not isinstance(cell.value, bool)
            and cell.number_format
            and "%" in cell.number_format
            else cell.value
            for cell in row
        ]
        expected += 1


def _merged_ranges(ws) -> list[tuple[int, int, int, int]]:
    """The merged ranges of a read-only worksheet. openpyxl's read-only sheets do not keep them, so the
    sheet's part is read once more for its ``mergeCell`` elements (after the cells; rows are dropped
    as they pass, so memory stays flat)."""
    from openpyxl.utils.cell import range_boundaries
    from openpyxl.xml.functions import iterparse

    source = getattr(ws, "_get_source", None)
    if source is None:
        return []
    ranges = []
    with source() as xml:
        for _, element in iterparse(xml):
            tag = element.tag.rsplit("}", 1)[-1]
            if tag == "mergeCell" and element.get("ref"):
                min_col, min_row, max_col, max_row = range_boundaries(element.get("ref"))
                ranges.append((min_col, min_row, max_col, max_row))
            if tag in ("row", "mergeCell"):
                element.clear()
    return ranges


def xlsx_document(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[tuple[str, str, str]]:
    """An ``.xlsx``/``.xlsm`` workbook as row units (:func:`workbook_units`). The container is checked
    first (:mod:`app.formats.zipguard`: encrypted, corrupt, zip bomb). DataSourceError on any failure."""
    from openpyxl import load_workbook

    name = display_name(path)
    check_office_zip(path, name, limits.max_zip_mb, limits.max_zip_entries)
    with this_file_only(name, "Excel workbook"):
        workbook = load_workbook(path, read_only=True, data_only=True, keep_links=False)
        try:
            units = workbook_units(path, _openpyxl_sheets(workbook), limits)
        finally:
            workbook.close()
    return units


def _xlrd_sheets(book) -> Iterator[Sheet]:
    """The sheets of an xlrd workbook as :class:`Sheet`."""
    import xlrd

    for sheet in book.sheets():
        merges = [(clo + 1, rlo + 1, chi, rhi) for rlo, rhi, clo, chi in sheet.merged_cells]

        def rows(sheet=sheet) -> Iterator[list[Any]]:
            for r in range(sheet.nrows):
                values = []
                for cell in sheet.row(r):
                    if cell.ctype == xlrd.XL_CELL_DATE:
                        values.append(xlrd.xldate_as_datetime(cell.value, book.datemode))
                    elif cell.ctype == xlrd.XL_CELL_BOOLEAN:
                        values.append(bool(cell.value))
                    elif cell.ctype == xlrd.XL_CELL_ERROR:
                        values.append(xlrd.error_text_from_code.get(cell.value, "#ERR"))
                    elif cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK):
                        values.append(None)
                    else:
                        values.append(cell.value)
                yield values

        yield Sheet(sheet.name, sheet.visibility != 0, merges, rows())


def xls_document(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[tuple[str, str, str]]:
    """An old binary ``.xls`` workbook (Excel 97–2003) read with xlrd, as :func:`xlsx_document` reads
    ``.xlsx``. DataSourceError if it is encrypted, corrupt or unreadable."""
    import xlrd

    name = display_name(path)
    with this_file_only(name, ".xls workbook"):
        try:
            book = xlrd.open_workbook(str(path), formatting_info=True, on_demand=True)
            try:
                return workbook_units(path, _xlrd_sheets(book), limits)
            finally:
                book.release_resources()
        except xlrd.biffh.XLRDError as exc:
            reason = (
                "password-protected (encrypted) workbook; remove the password"
                if "encrypt" in str(exc).lower()
                else f"unreadable .xls workbook ({exc})"
            )
            raise DataSourceError(f"{name}: {reason}; skipped") from exc
