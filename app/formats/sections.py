"""Sections cut at headings, named the way Markdown sections are (``file#slug``).

Word and HTML documents are read into ``(heading path, body)`` sections; this module turns them
into text units with :func:`app.formats.text.section_units`, as Markdown's are, so a section of a
``.docx`` and of a ``.md`` with the same headings get the same kind of source ID.
"""

from __future__ import annotations


def cut_at_headings(blocks: list[tuple[int | None, str]]) -> list[tuple[list[str], str]]:
    """Blocks in reading order, ``(heading level or None, text)``, as ``[(heading path, body), ...]``:
    a new section starts at each heading (level 1 = top); its path holds the headings above it.
    Body blocks are joined by blank lines."""
    sections: list[tuple[list[str], list[str]]] = [([], [])]
    stack: list[tuple[int, str]] = []
    for level, text in blocks:
        if level is None:
            sections[-1][1].append(text)
            continue
        stack = [(lv, h) for lv, h in stack if lv < level] + [(level, text)]
        sections.append(([h for _, h in stack], []))
    return [(path, "\n\n".join(body)) for path, body in sections]
