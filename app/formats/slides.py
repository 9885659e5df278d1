"""PowerPoint (``.pptx``) decks read with python-pptx: one unit per slide.

A slide's unit is its title (the heading), then the text of its other shapes top to bottom, left to
right (grouped shapes inside their group), tables as ``column:value`` lines under their first row
(merged cells filled across their span), then the speaker notes after ``ノート:``. Source
``file.pptx:s<N>`` (N = the slide's number in the deck), context ``stem — slide title``. Pictures,
charts and SmartArt are not read. A slide with no text is left out; a deck with none is an error.
"""

from __future__ import annotations

from pathlib import Path

from app.errors import DataSourceError
from app.formats.limits import Deadline, Limits, display_name, strip_nul, this_file_only
from app.formats.tables import cell_text, grid_text
from app.formats.zipguard import check_office_zip

DEFAULT_LIMITS = Limits()  # the defaults of every limit (app.config's defaults)

NOTES_LABEL = "ノート:"


def table_grid(table) -> list[list[str]]:
    """A python-pptx table's cell texts, a merged cell's text filling every cell it spans."""
    rows = [[cell_text(cell.text) for cell in row.cells] for row in table.rows]
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            if cell.is_merge_origin:
                for rr in range(r, min(r + cell.span_height, len(rows))):
                    for cc in range(c, min(c + cell.span_width, len(rows[rr]))):
                        rows[rr][cc] = rows[r][c]
    return rows


def _position(shape) -> tuple[int, int]:
    """Top, then left (shapes without a position first)."""
    return (shape.top or 0, shape.left or 0)


def shape_texts(shapes, skip=None) -> list[str]:
    """The texts of ``shapes`` in reading order (top to bottom, left to right), groups recursed."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    texts = []
    for shape in sorted(shapes, key=_position):
        if skip is not None and shape.shape_id == skip:
            continue
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            texts.extend(shape_texts(shape.shapes))
        elif getattr(shape, "has_table", False) and shape.has_table:
            text = grid_text(table_grid(shape.table))
            if text:
                texts.append(text)
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            text = "\n".join(line.strip() for line in strip_nul(shape.text_frame.text).splitlines() if line.strip())
            if text:
                texts.append(text)
    return texts


def slide_text(slide) -> tuple[str, str]:
    """``(title, text)`` of one slide: the title, the other shapes' texts and the notes, blank-line separated."""
    title_shape = slide.shapes.title
    title = " ".join(strip_nul(title_shape.text_frame.text).split()) if title_shape is not None else ""
    parts = ([title] if title else []) + shape_texts(slide.shapes, title_shape.shape_id if title_shape else None)
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        notes = strip_nul(slide.notes_slide.notes_text_frame.text).strip()
        if notes:
            parts.append(f"{NOTES_LABEL}\n{notes}")
    return title, "\n\n".join(parts)


def pptx_document(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[tuple[str, str, str]]:
    """A ``.pptx`` as ``[(text, "file.pptx:s<N>", slide title), ...]`` (slides without text left out).
    The container is checked first (:mod:`app.formats.zipguard`). DataSourceError if the deck is
    encrypted, corrupt, too large inflated, unreadable, or has no text (an empty deck)."""
    from pptx import Presentation

    name = display_name(path)
    check_office_zip(path, name, limits.max_zip_mb, limits.max_zip_entries)
    deadline = Deadline(name, limits.parse_timeout_s)
    units = []
    with this_file_only(name, "PowerPoint file"):
        for number, slide in enumerate(Presentation(str(path)).slides, start=1):
            deadline.check(f"slide {number}")
            title, text = slide_text(slide)
            if text:
                units.append((text, f"{name}:s{number}", title))
    if not units:
        raise DataSourceError(f"{name}: no text on any slide (an empty deck)")
    return units
