"""Where a quote lies on the pages of a PDF or a scan, by page: on the page it cites, or running across a
page break from the end of one page onto the start of the next (the sentence a page ends with).

:func:`page_marks` gives ``{page number: [rectangles]}`` (app.formats.page_image's fractions): the cited
page alone, or the two pages a quote spans. Each page is read as :class:`app.formats.page_image.PageUnits`:
a PDF page's text layer as characters; a scan (an image file, a PDF page without a text layer) as the
words Tesseract read when the sync OCR'd it (``stored(page)``, app.storage.page_words), else as Tesseract
reads it now (seconds a page). A neighbouring page is read only when the cited page's text ends with the
quote's beginning, or starts with its end (:func:`may_continue`), so a quote that is not there costs one
page. The quote is found in the pages' text as one, whitespace and width ignored
(app.formats.page_image.found): a running header or footer between the two halves keeps it from matching.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from app.formats.ocr import PDFIUM_LOCK
from app.formats.page_image import (
    PDF_SUFFIXES,
    Box,
    PageUnits,
    check_page,
    found,
    frame_count,
    is_paged,
    open_pdf,
    pdf_units,
    scan_image,
    scan_page,
    squeezed,
    tesseract_words,
    word_units,
)
from app.formats.page_words import PageWords

StoredWords = Callable[[int], PageWords | None]  # page number -> the words the sync kept, or None


def spread(first: Sequence[str], second: Sequence[str], quote: str) -> tuple[list[int], list[int]]:
    """The units of two pages in a row that ``quote`` covers when it runs from the end of ``first`` onto
    the start of ``second`` (found in their text as one, whitespace ignored); ``([], [])`` when it does
    not cover units of both."""
    covered = found([*first, *second], quote)
    before = [i for i in covered if i < len(first)]
    after = [i - len(first) for i in covered if i >= len(first)]
    return (before, after) if before and after else ([], [])


def may_continue(units: Sequence[str], quote: str, onto_next: bool) -> bool:
    """Whether a page's text ends with the quote's beginning (``onto_next``: the quote may go on on the
    next page), or starts with its end (it may have begun on the page before); whitespace ignored. A
    cheap test before reading the neighbouring page."""
    text, _ = squeezed("".join(units))
    wanted, _ = squeezed(quote)
    if onto_next:
        return any(text.endswith(wanted[:k]) for k in range(1, len(wanted)))
    return any(text.startswith(wanted[k:]) for k in range(1, len(wanted)))


class PageReader:
    """The pages of one PDF or scan as :class:`PageUnits`, each read once; a PDF opened once, and closed
    with :meth:`close`. ValueError for a file that is neither, or unreadable."""

    def __init__(
        self, path: Path | str, stored: StoredWords | None = None, langs: str = "jpn+eng", command: str = "tesseract"
    ) -> None:
        self.path, self.stored, self.langs, self.command = Path(path), stored, langs, command
        if not is_paged(self.path):
            raise ValueError(f"{self.path.name}: not a PDF or a scanned image")
        self.pdf = open_pdf(self.path) if self.path.suffix.lower() in PDF_SUFFIXES else None
        self.count = len(self.pdf) if self.pdf is not None else frame_count(self.path)
        self.read: dict[int, PageUnits] = {}
        self.open: list = []  # PDFium pages and text pages, closed with the document

    def units(self, number: int) -> PageUnits:
        """Page ``number``'s units (ValueError past the end, naming the page count)."""
        check_page(number, self.count, self.path.name)
        if number not in self.read:
            self.read[number] = self._text_layer(number) or self._words(number)
        return self.read[number]

    def _text_layer(self, number: int) -> PageUnits | None:
        """A PDF page's text layer (None for a scan)."""
        if self.pdf is None:
            return None
        page = self.pdf[number - 1]
        textpage = page.get_textpage()
        self.open += [textpage, page]
        return pdf_units(page, textpage)

    def _words(self, number: int) -> PageUnits:
        """A scanned page's words: those the sync kept, else Tesseract's now."""
        words = self.stored(number) if self.stored is not None else None
        if words is None:
            image = scan_image(self.path, number) if self.pdf is not None else scan_page(self.path, number)
            words = tesseract_words(image, self.langs, self.command)
        return word_units(words)

    def close(self) -> None:
        """Close the PDF's pages and document."""
        for item in self.open:
            item.close()
        if self.pdf is not None:
            self.pdf.close()


def page_marks(
    path: Path | str,
    page_number: int,
    quote: str,
    stored: StoredWords | None = None,
    langs: str = "jpn+eng",
    command: str = "tesseract",
) -> dict[int, list[Box]]:
    """The rectangles covering ``quote`` by page: ``{page_number: [...]}`` when it is on that page, ``{N:
    [...], N + 1: [...]}`` when it runs across the break between two pages one of which is
    ``page_number``, else ``{page_number: []}``. ``stored(page)`` gives the words the sync kept for a
    scanned page (None: Tesseract reads it now). ValueError as :func:`app.formats.page_image.render_page`
    or :func:`app.formats.page_image.tesseract_words`."""
    with PDFIUM_LOCK:  # the reader keeps a PDF's document and text pages open while it marks
        reader = PageReader(path, stored, langs, command)
        try:
            cited = reader.units(page_number)
            covered = found(cited.units, quote)
            if covered:
                return {page_number: cited.mark(covered)}
            for first, onto_next in ((page_number, True), (page_number - 1, False)):
                second = first + 1
                if first < 1 or second > reader.count or not may_continue(cited.units, quote, onto_next):
                    continue
                before, after = spread(reader.units(first).units, reader.units(second).units, quote)
                if before:
                    return {first: reader.units(first).mark(before), second: reader.units(second).mark(after)}
            return {page_number: []}
        finally:
            reader.close()
