"""Sections cut at headings, named the way Markdown sections are (``file#slug``).

Word and HTML documents are read into ``(heading path, body)`` sections; this module turns them
into text units exactly as :func:`app.loaders.text_document` does for Markdown, so a section of a
``.docx`` and of a ``.md`` with the same headings get the same kind of source ID.
"""

from __future__ import annotations

from app.loaders import heading_slug


def section_units(name: str, sections: list[tuple[list[str], str]]) -> list[tuple[str, str, str]]:
    """``[(text, source, heading path), ...]`` for the non-blank sections: a section's source is
    ``name#slug`` of its own heading (``-1``, ``-2`` … for a repeated one), ``name`` before the first
    heading; the heading path is ``H1 > H2 > …``."""
    units, seen = [], {}
    for headings, body in sections:
        source = name
        if headings:
            slug = heading_slug(headings[-1])
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            source = f"{name}#{slug}" + (f"-{count}" if count else "")
        if body.strip():
            units.append((body.strip(), source, " > ".join(headings)))
    return units


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
