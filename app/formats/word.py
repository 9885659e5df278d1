"""Word (``.docx``) files read with python-docx: paragraphs and tables in reading order, cut at headings.

A heading is a paragraph whose style is a heading style (``Heading 1`` … ``Heading 9``, ``見出し 1`` …,
``Title`` above them), else one with an outline level (its own or its style's), else a short
paragraph drawn all bold and large (≥ 14 pt). List items are marked ``・`` (indented by level);
a table's rows become ``column:value`` lines under its first row. Headers, footers, text boxes and
comments are not read.
"""

from __future__ import annotations

import re
from pathlib import Path

from app.errors import DataSourceError
from app.formats.limits import Deadline, Limits, display_name, strip_nul, this_file_only
from app.formats.sections import cut_at_headings
from app.formats.tables import cell_text, grid_text
from app.formats.text import section_units
from app.formats.zipguard import check_office_zip

DEFAULT_LIMITS = Limits()  # the defaults of every limit (app.config's defaults)

_HEADING_STYLE = re.compile(r"^(?:heading|見出し)\s*([1-9])$", re.IGNORECASE)
BOLD_HEADING_PT = 14  # an all-bold paragraph at least this large (and short) is a heading
BOLD_HEADING_MAX_CHARS = 60


def paragraph_level(paragraph) -> int | None:
    """The heading level of a python-docx paragraph (0 for ``Title``, 1 … 9), or None for body text."""
    style = paragraph.style
    name = (style.name or "").strip() if style is not None else ""
    match = _HEADING_STYLE.match(name)
    if match:
        return int(match.group(1))
    if name.lower() == "title":
        return 0
    own = paragraph._p.xpath("./w:pPr/w:outlineLvl/@w:val")
    inherited = style.element.xpath("./w:pPr/w:outlineLvl/@w:val") if style is not None else []
    for value in own or inherited:
        if value.isdigit() and int(value) < 9:  # 9 is "body text"
            return int(value) + 1
    return _bold_large_level(paragraph)


def _bold_large_level(paragraph) -> int | None:
    """Level 1 (≥ 18 pt), 2 (≥ 16 pt) or 3 for a short paragraph all of whose text runs are bold and at
    least BOLD_HEADING_PT; None otherwise."""
    runs = [run for run in paragraph.runs if run.text.strip()]
    text = paragraph.text.strip()
    if not runs or len(text) > BOLD_HEADING_MAX_CHARS or not all(run.bold for run in runs):
        return None
    sizes = [run.font.size.pt for run in runs if run.font.size is not None]
    if len(sizes) != len(runs) or min(sizes) < BOLD_HEADING_PT:
        return None
    return 1 if min(sizes) >= 18 else 2 if min(sizes) >= 16 else 3


def list_depth(paragraph) -> int | None:
    """The list level (0 = top) of a numbered or bulleted paragraph, None if it is not a list item."""
    levels = paragraph._p.xpath("./w:pPr/w:numPr/w:ilvl/@w:val")
    if paragraph._p.xpath("./w:pPr/w:numPr"):
        return int(levels[0]) if levels and levels[0].isdigit() else 0
    name = (paragraph.style.name or "") if paragraph.style is not None else ""
    return 0 if name.lower().startswith("list") else None


def table_rows(table) -> list[list[str]]:
    """A python-docx table's rows as cell texts, one per grid column: a merged cell's text fills every
    column and row it spans (a merged header names each column under it)."""
    return [[cell_text(cell.text) for cell in row.cells] for row in table.rows]


def docx_blocks(document, deadline: Deadline) -> list[tuple[int | None, str]]:
    """The document body in reading order as ``(heading level or None, text)`` blocks."""
    from docx.table import Table

    blocks: list[tuple[int | None, str]] = []
    for number, item in enumerate(document.iter_inner_content(), start=1):
        if number % 200 == 0:
            deadline.check(f"block {number}")
        if isinstance(item, Table):
            text = grid_text(table_rows(item))
            if text:
                blocks.append((None, text))
            continue
        text = strip_nul(item.text).strip()
        if not text:
            continue
        level = paragraph_level(item)
        if level is not None:
            blocks.append((level, " ".join(text.split())))
            continue
        depth = list_depth(item)
        blocks.append((None, text if depth is None else "　" * depth + "・" + text))
    return blocks


def _join_lists(blocks: list[tuple[int | None, str]]) -> list[tuple[int | None, str]]:
    """Consecutive list items as one block (one item per line, not a paragraph each)."""
    out: list[tuple[int | None, str]] = []
    for level, text in blocks:
        if (
            out
            and level is None
            and out[-1][0] is None
            and text.lstrip("　").startswith("・")
            and out[-1][1].rsplit("\n", 1)[-1].lstrip("　").startswith("・")
        ):
            out[-1] = (None, out[-1][1] + "\n" + text)
        else:
            out.append((level, text))
    return out


def docx_document(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[tuple[str, str, str]]:
    """A ``.docx`` as ``[(text, "file.docx#heading-slug", heading path), ...]``, cut at headings as
    Markdown is. The container is checked first (:mod:`app.formats.zipguard`). DataSourceError if it
    is encrypted, corrupt, too large inflated, unreadable, or has no text."""
    from docx import Document as open_docx

    name = display_name(path)
    check_office_zip(path, name, limits.max_zip_mb, limits.max_zip_entries)
    deadline = Deadline(name, limits.parse_timeout_s)
    with this_file_only(name, "Word file"):
        blocks = docx_blocks(open_docx(str(path)), deadline)
    units = section_units(name, cut_at_headings(_join_lists(blocks)))
    if not units:
        raise DataSourceError(f"{name}: no text (an empty document)")
    return units
