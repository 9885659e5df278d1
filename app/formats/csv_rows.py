"""CSV files: one unit per data row (``column:value`` lines), source ``file.csv:r1`` (1-based data rows);
read by pandas with the encodings of :mod:`app.formats.text`, within the file's limits."""

from __future__ import annotations

import io
from pathlib import Path

from app.errors import DataSourceError
from app.formats.limits import Limits, display_name
from app.formats.text import decode_text
from app.text.chunks import row_source


def read_csv_rows(path: Path, limits: Limits = Limits()) -> list[dict[str, str]]:
    """Read a CSV as a list of {column: value} dicts (UTF-8/16/32 by BOM, UTF-8 or CP932).

    Empty cells are left out. An empty file gives ``[]``. DataSourceError if the
    file cannot be read, decoded or parsed, or has more rows than ``limits.max_rows`` or a cell
    longer than ``limits.max_cell_chars``.
    """
    import pandas as pd

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataSourceError(
            f"{display_name(path)}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})"
        ) from exc
    if not raw.strip():
        return []
    text = decode_text(raw, display_name(path))
    if not text.strip():
        return []
    try:
        frame = pd.read_csv(
            io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True, nrows=limits.max_rows + 1
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise DataSourceError(f"{display_name(path)}: unreadable CSV ({reason})") from exc
    if len(frame) > limits.max_rows:
        raise DataSourceError(
            f"{display_name(path)}: more than MAX_ROWS={limits.max_rows} data rows; skipped "
            "(raise MAX_ROWS, or split the file)"
        )
    rows = []
    for number, record in enumerate(frame.to_dict(orient="records"), start=1):
        row = {str(k).strip(): str(v).strip() for k, v in record.items() if str(v).strip()}
        longest = max((len(v) for v in row.values()), default=0)
        if longest > limits.max_cell_chars:
            raise DataSourceError(
                f"{display_name(path)}: row {number} has a cell of {longest} characters, more than "
                f"MAX_CELL_CHARS={limits.max_cell_chars}; skipped (raise MAX_CELL_CHARS to read it)"
            )
        rows.append(row)
    return rows


def row_to_text(row: dict[str, str]) -> str:
    """Render a CSV row as ``column:value`` lines (§4.7)."""
    return "\n".join(f"{column}:{value}" for column, value in row.items())


def csv_table(path: Path, limits: Limits = Limits()) -> tuple[list[str], list[tuple[str, str]]]:
    """One CSV as ``(header, [("col:val\\n...", "file.csv:r1"), ...])``.

    DataSourceError if it cannot be decoded or parsed, has no data rows, or passes a limit.
    """
    records = read_csv_rows(path, limits)
    if not records:
        raise DataSourceError(f"{display_name(path)}: empty CSV (no data rows)")
    header = list(dict.fromkeys(column for record in records for column in record))
    rows = ((row_to_text(record), number) for number, record in enumerate(records, start=1))
    return header, [(text, row_source(display_name(path), number)) for text, number in rows if text]
