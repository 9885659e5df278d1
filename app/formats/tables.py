"""A table's rows as ``column:value`` lines, the way CSV rows are rendered (:func:`app.formats.csv_rows.row_to_text`)."""

from __future__ import annotations

from app.formats.limits import strip_nul


def cell_text(value: str) -> str:
    """A cell's text on one line: whitespace runs (line breaks inside the cell) become one space."""
    return " ".join(strip_nul(value).split())


def row_lines(header: list[str], values: list[str]) -> str:
    """``header[i]:values[i]`` lines for the non-empty values; a value past the header, or under an
    empty header cell, is named ``列N`` (N = its 1-based column)."""
    lines: list[str] = []
    for column, value in enumerate(values, start=1):
        if value:
            name = header[column - 1] if column <= len(header) and header[column - 1] else f"列{column}"
            line = f"{name}:{value}"
            if not lines or lines[-1] != line:  # a cell merged across columns under a merged header: once
                lines.append(line)
    return "\n".join(lines)


def grid_text(rows: list[list[str]]) -> str:
    """A small table (Word, PowerPoint) as text: the first row is the header, each further row its
    ``column:value`` lines, rows separated by blank lines; a table of one row or one column is its
    cells, one per line."""
    rows = [row for row in rows if any(row)]
    if not rows:
        return ""
    if len(rows) == 1 or max(len(row) for row in rows) == 1:
        return "\n".join(" | ".join(cell for cell in row if cell) for row in rows)
    header = rows[0]
    return "\n\n".join(text for text in (row_lines(header, row) for row in rows[1:]) if text)
