"""The tables inside Word, PowerPoint and HTML documents, stored as tables like a CSV's.

Each table the format readers render as ``column:value`` lines (app.formats.tables.grid_text) is read
again as a grid: its first row the header, each further row a data row numbered from 1, a merged
cell's text filling every cell it spans. A table of one row or one column is text, not a table, and
is left out, as is an HTML table that holds another table (a layout table). Tables are named
``表1``, ``表2`` … in reading order (``スライド3の表1`` on a slide), and each keeps as its ``anchor``
the source ID its rows are cited by today: the section whose text holds them (``報告.docx#料金``),
the slide (``説明.pptx:s3``), or the file when no section holds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from app.errors import DataSourceError
from app.formats.limits import Limits, display_name
from app.formats.tables import cell_text
from app.tables.extract import SourceTable, make_table

__all__ = ["DOCUMENT_TABLE_SUFFIXES", "document_tables", "grid_table", "html_grids", "section_of"]

DOCUMENT_TABLE_SUFFIXES = (".docx", ".pptx", ".html", ".htm")


def grid_table(name: str, grid: Sequence[Sequence[str]], anchor: str, header_rows: int = 1) -> SourceTable | None:
    """A grid of cell texts as a table named ``name`` (empty rows dropped), cited as ``anchor``: its
    first ``header_rows`` rows name the columns (``料金/月額`` under a spanning ``料金``); None for a
    grid of fewer than two rows or two columns (text, not a table)."""
    rows = [list(row) for row in grid if any(cell for cell in row)]
    if len(rows) < 2 or max(len(row) for row in rows) < 2:
        return None
    head = max(1, min(header_rows, len(rows) - 1))
    width = max(len(row) for row in rows[:head])
    header = ["/".join(dict.fromkeys(row[c] for row in rows[:head] if c < len(row) and row[c])) for c in range(width)]
    table = make_table(name, header, list(enumerate(rows[head:], start=1)))
    return replace(table, anchor=anchor) if table else None


def section_of(grid: Sequence[Sequence[str]], units: Sequence[tuple[str, str, str]], fallback: str) -> str:
    """The source ID of the first text unit holding the grid's first data row's longest cell (the
    section its rows are read in today), ``fallback`` when none does."""
    cells = [cell for row in grid[1:2] for cell in row if cell]
    if not cells:
        return fallback
    needle = " ".join(max(cells, key=len).split())
    for text, source, _ in units:
        if needle in " ".join(text.split()):
            return source
    return fallback


def docx_tables(path: Path, limits: Limits) -> list[SourceTable]:
    """The tables of a ``.docx`` body in reading order, each cited by the section that holds it."""
    from docx import Document as open_docx

    from app.formats.word import docx_document, table_rows
    from app.formats.zipguard import check_office_zip

    name = display_name(path)
    check_office_zip(path, name, limits.max_zip_mb, limits.max_zip_entries)
    grids = [table_rows(table) for table in open_docx(str(path)).tables]
    if not grids:
        return []
    units = docx_document(path, limits)
    found = (grid_table(f"表{i}", grid, section_of(grid, units, name)) for i, grid in enumerate(grids, start=1))
    return [table for table in found if table]


def _slide_grids(shapes) -> list[list[list[str]]]:
    """The table grids among ``shapes`` in reading order, groups recursed."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    from app.formats.slides import _position, table_grid

    grids: list[list[list[str]]] = []
    for shape in sorted(shapes, key=_position):
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            grids.extend(_slide_grids(shape.shapes))
        elif getattr(shape, "has_table", False) and shape.has_table:
            grids.append(table_grid(shape.table))
    return grids


def pptx_tables(path: Path, limits: Limits) -> list[SourceTable]:
    """The tables of a ``.pptx``, each cited by its slide (``file.pptx:s3``)."""
    from pptx import Presentation

    from app.formats.zipguard import check_office_zip

    name = display_name(path)
    check_office_zip(path, name, limits.max_zip_mb, limits.max_zip_entries)
    tables: list[SourceTable] = []
    for number, slide in enumerate(Presentation(str(path)).slides, start=1):
        for i, grid in enumerate(_slide_grids(slide.shapes), start=1):
            table = grid_table(f"スライド{number}の表{i}", grid, f"{name}:s{number}")
            if table:
                tables.append(table)
    return tables


def html_grids(raw: bytes) -> list[tuple[list[list[str]], int]]:
    """The grids of a page's ``<table>`` elements that hold no other table, in order, each with its
    number of header rows (the leading rows of ``<th>`` cells only; at least 1): a row per ``<tr>``,
    ``colspan``/``rowspan`` cells filling every cell they span (spans capped at 100)."""
    from trafilatura.utils import load_html  # decodes as the page's text is decoded

    root = load_html(raw)
    if root is None:
        return []
    grids = []
    for table in root.iter("table"):
        if table.xpath(".//table"):
            continue  # a layout table: its inner tables are read on their own
        grid: list[list[str]] = []
        heads: list[bool] = []
        pending: dict[tuple[int, int], str] = {}  # (row, column) filled by a rowspan from above
        for r, tr in enumerate(table.iter("tr")):
            row: list[str] = []
            cells = [td for td in tr if isinstance(td.tag, str) and td.tag in ("td", "th")]
            for td in cells:
                while (r, len(row)) in pending:
                    row.append(pending.pop((r, len(row))))
                text = cell_text(td.text_content())
                width, height = (_span(td.get(attr)) for attr in ("colspan", "rowspan"))
                for _ in range(width):
                    for below in range(1, height):
                        pending[(r + below, len(row))] = text
                    row.append(text)
            while (r, len(row)) in pending:
                row.append(pending.pop((r, len(row))))
            grid.append(row)
            heads.append(bool(cells) and all(td.tag == "th" for td in cells))
        header_rows = next((i for i, head in enumerate(heads) if not head), len(heads))
        grids.append((grid, max(header_rows, 1)))
    return grids


def _span(value: str | None) -> int:
    """A ``colspan``/``rowspan`` value as a count from 1 to 100 (1 when absent or not a number)."""
    try:
        return min(max(int(str(value).strip()), 1), 100)
    except (TypeError, ValueError):
        return 1


def html_tables(path: Path, limits: Limits) -> list[SourceTable]:
    """The tables of an HTML page, each cited by the section whose text holds it."""
    from app.formats.html import html_document

    name = display_name(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataSourceError(f"{name}: cannot read ({exc.__class__.__name__})") from exc
    grids = html_grids(raw)
    if not grids:
        return []
    _, units = html_document(path, limits)
    found = (
        grid_table(f"表{i}", grid, section_of(grid[head - 1 :], units, name), head)
        for i, (grid, head) in enumerate(grids, start=1)
    )
    return [table for table in found if table]


def document_tables(path: Path, settings) -> list[SourceTable]:
    """The tables of a Word, PowerPoint or HTML file (``[]`` for another). DataSourceError (one line)
    when the file cannot be read."""
    limits, suffix = Limits.from_settings(settings), path.suffix.lower()
    readers = {".docx": docx_tables, ".pptx": pptx_tables, ".html": html_tables, ".htm": html_tables}
    if suffix not in readers:
        return []
    try:
        return readers[suffix](path, limits)
    except DataSourceError:
        raise
    except Exception as exc:  # a damaged file: this file's tables only
        raise DataSourceError(f"{display_name(path)}: unreadable tables ({exc.__class__.__name__})") from exc


_MARKERS = {".docx": (b"<w:tbl",), ".pptx": (b"<a:tbl",), ".html": (b"<table",), ".htm": (b"<table",)}
_SCAN_BYTES = 1 << 20  # bytes read at a time while looking for a table's mark


def may_hold_tables(path: Path) -> bool:
    """Whether a Word, PowerPoint or HTML file may hold a table, found cheaply in this process (its
    XML's or markup's table tag), so that the bounded child that reads tables is started only for
    those that do; True when unsure (an unreadable file is left to the reader's one-line error)."""
    import zipfile

    suffix = path.suffix.lower()
    marks = _MARKERS.get(suffix)
    if marks is None:
        return False
    try:
        if suffix in (".html", ".htm"):
            with path.open("rb") as handle:
                return _holds(handle, marks, fold=True)
        with zipfile.ZipFile(path) as archive:
            parts = [n for n in archive.namelist() if n == "word/document.xml" or n.startswith("ppt/slides/slide")]
            for part in parts:
                with archive.open(part) as handle:
                    if _holds(handle, marks):
                        return True
            return False
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError):
        return True


def _holds(handle, marks: tuple[bytes, ...], fold: bool = False) -> bool:
    """Whether a stream holds one of ``marks`` (ASCII case folded with ``fold``), read in pieces."""
    tail = b""
    while piece := handle.read(_SCAN_BYTES):
        window = tail + (piece.lower() if fold else piece)
        if any(mark in window for mark in marks):
            return True
        tail = window[-16:]
    return False
