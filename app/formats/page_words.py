"""The words Tesseract read on one page, with their boxes: kept when a page is OCR'd (the sync stores them
with the document, app.storage.page_words) so that the page's web view marks a quote on a scan without
running Tesseract again (app.formats.page_image).

A word is ``(text, left, top, width, height, line)``: pixels of the image Tesseract read (a PDF page
rendered at OCR_DPI, or the image file's own page), top-left origin, and ``line`` the 0-based ordinal of
Tesseract's line (block, paragraph, line) in reading order. :class:`PageWords` carries that image's size,
so a box becomes a fraction of the page whatever size the page is shown at. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

Word = tuple[str, int, int, int, int, int]  # text, left, top, width, height, line


@dataclass(frozen=True)
class PageWords:
    """One OCR'd page: the size in pixels of the image Tesseract read, and its words in reading order."""

    width: int
    height: int
    words: tuple[Word, ...]

    def as_json(self) -> str:
        """The words as compact JSON, ``[[text, left, top, width, height, line], …]`` (how they are stored)."""
        return json.dumps([list(word) for word in self.words], ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_rows(cls, width: int, height: int, rows: Sequence[Sequence]) -> PageWords:
        """Words read back from :meth:`as_json`'s form (a list of lists, or its JSON text)."""
        if isinstance(rows, str):
            rows = json.loads(rows)
        return cls(int(width), int(height), tuple((str(r[0]), *(int(v) for v in r[1:6])) for r in rows))  # type: ignore[misc]


def pages_to_json(pages: dict[int, PageWords]) -> str:
    """A file's pages of words as one JSON object, ``{"3": [width, height, [[text, …], …]], …}`` (a queue
    worker hands them to the writer through the database, app.storage.queue)."""
    return json.dumps(
        {str(page): [w.width, w.height, [list(word) for word in w.words]] for page, w in sorted(pages.items())},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def pages_from_json(raw: str | dict | None) -> dict[int, PageWords]:
    """:func:`pages_to_json` read back (its JSON text, or the object a jsonb column gives); ``{}`` for None."""
    if raw is None:
        return {}
    pages = json.loads(raw) if isinstance(raw, str) else raw
    return {int(page): PageWords.from_rows(width, height, rows) for page, (width, height, rows) in pages.items()}


def words_from_tsv(tsv: str, width: int, height: int) -> PageWords:
    """Tesseract's TSV output (``tesseract … tsv``) of a ``width`` × ``height`` image as :class:`PageWords`:
    its word rows (level 5) with non-blank text, each line numbered in the order it first appears."""
    lines: dict[tuple[str, str, str], int] = {}
    words: list[Word] = []
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        line = lines.setdefault((cells[2], cells[3], cells[4]), len(lines))
        words.append((cells[11].strip(), int(cells[6]), int(cells[7]), int(cells[8]), int(cells[9]), line))
    return PageWords(width, height, tuple(words))
