"""One stored page as a picture, and where a quoted sentence lies on it: the page's web view shows a PDF
page or a scan as the image it is, with the quote marked.

* :func:`render_page` — a PNG of one page: a PDF page rendered with PDFium (pypdfium2, as
  :mod:`app.formats.ocr` renders pages for OCR; only that page is loaded, so a 2,000-page PDF costs one
  page), a page of a multi-page TIFF (Pillow's ``seek``), or a single image as it is; scaled to
  ``width_px`` (an image is only ever scaled down);
* :func:`quote_boxes` — the rectangles covering a quote on a PDF page, from PDFium's text page;
* :func:`scan_quote_boxes` — the same on a page image, from Tesseract's word boxes read on demand for
  that one page (:func:`word_boxes` from the words the sync kept: :mod:`app.formats.page_words`);
* :class:`PageUnits` — a page's text as units with their boxes, what :mod:`app.formats.quote_marks`
  searches across a page break.

Rectangles are fractions of the page, top-left origin: ``{"x", "y", "w", "h"}`` in 0..1. A quote is
found ignoring whitespace and width differences (NFKC, whitespace dropped on both sides: the stored
chunk text and the page's own text differ in spaces and line breaks); one not found gives ``[]``.
Bad input (a page past the end, an unreadable file, an unknown kind) raises ValueError with one line.
"""

from __future__ import annotations

import io
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.formats.ocr import MAX_PIXELS, PDFIUM_LOCK
from app.formats.page_words import PageWords

PDF_SUFFIXES = (".pdf",)
SCAN_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")  # app.formats.IMAGE_SUFFIXES
DEFAULT_WIDTH = 1200
MAX_WIDTH = 3000
Box = dict[str, float]


def is_paged(path: Path | str) -> bool:
    """Whether a file renders as page images here: a PDF or a scanned image."""
    return str(path).lower().endswith(PDF_SUFFIXES + SCAN_SUFFIXES)


def check_page(page_number: int, count: int, name: str) -> None:
    """ValueError naming the page count when ``page_number`` is not a page of the file."""
    if not 1 <= page_number <= count:
        raise ValueError(f"{name}: no page {page_number} (the file has {count} page{'s' if count != 1 else ''})")


def _width(width_px: int) -> int:
    """``width_px`` checked: 1..MAX_WIDTH."""
    if not 1 <= int(width_px) <= MAX_WIDTH:
        raise ValueError(f"width {width_px} px is outside 1..{MAX_WIDTH}")
    return int(width_px)


def open_pdf(path: Path):
    """A PDFium document (pages load when asked for); ValueError when PDFium cannot open it."""
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise ValueError(f"{Path(path).name}: PDFium cannot open it ({exc})") from None


def _png(image) -> bytes:
    """A PIL image as PNG bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def scan_page(path: Path, page_number: int):
    """Page ``page_number`` (1-based) of an image file as a PIL image (RGB or L): a multi-page TIFF's frame
    by ``seek``, a single image as page 1. ValueError when unreadable, too large (MAX_PIXELS) or past the end."""
    from PIL import Image, UnidentifiedImageError

    name = Path(path).name
    try:
        with Image.open(path) as image:
            check_page(page_number, getattr(image, "n_frames", 1), name)
            image.seek(page_number - 1)
            if image.width * image.height > MAX_PIXELS:
                raise ValueError(f"{name}: {image.width}×{image.height} pixels, more than {MAX_PIXELS:,}")
            return image.convert("L" if image.mode in ("1", "L", "I;16") else "RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError) as exc:
        raise ValueError(f"{name}: unreadable image ({exc.__class__.__name__}: {exc})") from None


def frame_count(path: Path | str) -> int:
    """The pages of an image file (a multi-page TIFF's frames; 1 for any other image), read without
    decoding them. ValueError when unreadable."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            return int(getattr(image, "n_frames", 1))
    except (UnidentifiedImageError, OSError) as exc:
        raise ValueError(f"{Path(path).name}: unreadable image ({exc.__class__.__name__}: {exc})") from None


def render_page(path: Path | str, page_number: int, width_px: int = DEFAULT_WIDTH) -> bytes:
    """Page ``page_number`` (1-based) of a PDF or a scanned image as a PNG ``width_px`` wide (an image
    narrower than that stays as it is). ValueError for a page past the end or < 1 (naming the page
    count), an unreadable file, a width outside 1..MAX_WIDTH or a file that is neither."""
    path = Path(path)
    width = _width(width_px)
    if path.suffix.lower() in PDF_SUFFIXES:
        with PDFIUM_LOCK:
            document = open_pdf(path)
            try:
                check_page(page_number, len(document), path.name)
                page = document[page_number - 1]  # only this page is loaded
                try:
                    scale = width / max(page.get_width(), 1.0)
                    image = page.render(scale=scale, may_draw_forms=True).to_pil()
                finally:
                    page.close()
            finally:
                document.close()
        return _png(image)
    if path.suffix.lower() in SCAN_SUFFIXES:
        image = scan_page(path, page_number)
        if image.width > width:
            image = image.resize((width, max(1, round(image.height * width / image.width))))
        return _png(image)
    raise ValueError(f"{path.name}: not a PDF or a scanned image")


def squeezed(text: str) -> tuple[str, list[int]]:
    """``text`` NFKC-normalised with whitespace dropped, and for each character kept the index of the
    character of ``text`` it came from (the map back to the page's characters)."""
    out: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        for piece in unicodedata.normalize("NFKC", char):
            if not piece.isspace():
                out.append(piece)
                where.append(index)
    return "".join(out), where


def found(units: Sequence[str], quote: str) -> list[int]:
    """The indices of ``units`` (one string each: a character, or a word) the quote covers, by its first
    occurrence in their text with whitespace ignored; ``[]`` when it is not there (or empty)."""
    wanted, _ = squeezed(quote)
    if not wanted:
        return []
    text, where = squeezed("".join(units))
    at = text.find(wanted)
    if at < 0:
        return []
    owner = [i for i, unit in enumerate(units) for _ in unit]  # character of the joined text -> unit
    return sorted({owner[where[k]] for k in range(at, at + len(wanted))})


def merged(boxes: Sequence[tuple[float, float, float, float]]) -> list[tuple[float, float, float, float]]:
    """Boxes ``(left, top, right, bottom)`` in reading order merged into one rectangle per run on one line:
    a box joins the run while it overlaps the run vertically by at least half its height and does not
    step back to the left."""
    runs: list[list[float]] = []
    for left, top, right, bottom in boxes:
        if runs:
            run = runs[-1]
            overlap = min(run[3], bottom) - max(run[1], top)
            if overlap >= 0.5 * max(min(bottom - top, run[3] - run[1]), 1e-9) and left >= run[0] - 1e-9:
                run[:] = [min(run[0], left), min(run[1], top), max(run[2], right), max(run[3], bottom)]
                continue
        runs.append([left, top, right, bottom])
    return [tuple(run) for run in runs]  # type: ignore[misc]


def turned(left: float, top: float, right: float, bottom: float, rotation: int) -> tuple[float, float, float, float]:
    """A rectangle in fractions of a page, top-left origin, as it lies once the page is turned ``rotation``
    degrees clockwise (a PDF's /Rotate: 0, 90, 180 or 270; PDFium renders the page turned, while its
    text page measures it unturned). ValueError for any other angle."""
    turns = {
        0: (left, top, right, bottom),
        90: (1 - bottom, left, 1 - top, right),  # the unturned left edge is now the top
        180: (1 - right, 1 - bottom, 1 - left, 1 - top),
        270: (top, 1 - right, bottom, 1 - left),  # the unturned left edge is now the bottom
    }
    if rotation % 360 not in turns:
        raise ValueError(f"a page turns by 0, 90, 180 or 270 degrees, not {rotation}")
    return turns[rotation % 360]


def fractions(
    boxes: Sequence[tuple[float, float, float, float]], width: float, height: float, rotation: int = 0
) -> list[Box]:
    """Rectangles ``(left, top, right, bottom)`` in a ``width`` × ``height`` page, top-left origin, as
    ``{"x", "y", "w", "h"}`` fractions of the page clipped to 0..1 (rounded to 5 places), on the page
    shown turned ``rotation`` degrees clockwise (:func:`turned`)."""

    def clip(v: float) -> float:
        return min(max(v, 0.0), 1.0)

    out = []
    for left, top, right, bottom in boxes:
        x0, y0, x1, y1 = turned(
            clip(left / width), clip(top / height), clip(right / width), clip(bottom / height), rotation
        )
        out.append({"x": round(x0, 5), "y": round(y0, 5), "w": round(x1 - x0, 5), "h": round(y1 - y0, 5)})
    return out


@dataclass(frozen=True)
class PageUnits:
    """A page's text as units (the characters of a PDF's text layer, or a scan's words), and ``mark``:
    the rectangles (fractions of the page as rendered) covering the units at some indices, merged per line."""

    units: tuple[str, ...]
    mark: Callable[[Sequence[int]], list[Box]]

    def boxes(self, quote: str) -> list[Box]:
        """The rectangles covering ``quote`` on this page; ``[]`` when it is not there."""
        return self.mark(found(self.units, quote))


def pdf_units(page, textpage) -> PageUnits | None:
    """A PDFium page's text layer as characters; None when it has no text (a scan). ``mark`` reads the
    char boxes (measured unturned, merged per line there, then turned as PDFium renders the page) while
    ``textpage`` is open."""
    import pypdfium2.raw as pdfium_c

    count = textpage.count_chars()
    chars = tuple(chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, i) or 32) for i in range(count))
    if all(c.isspace() for c in chars):
        return None
    left0, bottom0, right0, top0 = page.get_cropbox()
    rotation = page.get_rotation()

    def mark(covered: Sequence[int]) -> list[Box]:
        boxes = []
        for i in covered:
            if chars[i].isspace():
                continue
            left, bottom, right, top = textpage.get_charbox(i)
            boxes.append((left - left0, top0 - top, right - left0, top0 - bottom))
        return fractions(merged(boxes), right0 - left0, top0 - bottom0, rotation)

    return PageUnits(chars, mark)


def word_units(page: PageWords) -> PageUnits:
    """Tesseract's words of a page as units; ``mark`` joins the marked words of one line into one
    rectangle (a word partly quoted is marked whole), as fractions of the image Tesseract read."""

    def mark(covered: Sequence[int]) -> list[Box]:
        runs: list[tuple[int, list[float]]] = []
        for i in covered:
            _, left, top, width, height, line = page.words[i]
            box = [left, top, left + width, top + height]
            if runs and runs[-1][0] == line:
                run = runs[-1][1]
                run[:] = [min(run[0], box[0]), min(run[1], box[1]), max(run[2], box[2]), max(run[3], box[3])]
            else:
                runs.append((line, box))
        return fractions([tuple(run) for _, run in runs], page.width, page.height)  # type: ignore[misc]

    return PageUnits(tuple(word[0] for word in page.words), mark)


@contextmanager
def _text_page(path: Path | str, page_number: int) -> Iterator[tuple]:
    """``(page, textpage)`` of page ``page_number`` of a PDF, closed (with the document) afterwards;
    ValueError as :func:`render_page`."""
    path = Path(path)
    with PDFIUM_LOCK:  # held while the caller reads the text page
        document = open_pdf(path)
        try:
            check_page(page_number, len(document), path.name)
            page = document[page_number - 1]
            textpage = page.get_textpage()
            try:
                yield page, textpage
            finally:
                textpage.close()
                page.close()
        finally:
            document.close()


def quote_boxes(path: Path | str, page_number: int, quote: str) -> list[Box]:
    """The rectangles covering ``quote`` on page ``page_number`` of a PDF, from PDFium's text page (char
    boxes of the matched characters, merged per line), as fractions of the rendered (crop) box. ``[]``
    when the quote is not on the page (or the page has no text layer). ValueError as :func:`render_page`.
    A page with a /Rotate is measured unturned, merged per line there, then turned as PDFium renders it."""
    with _text_page(path, page_number) as (page, textpage):
        units = pdf_units(page, textpage)
        return units.boxes(quote) if units else []


def tesseract_words(image, langs: str = "jpn+eng", command: str = "tesseract", timeout_s: float = 120.0) -> PageWords:
    """The words Tesseract reads in a PIL image now, as the sync's OCR reads them (:mod:`app.formats.ocr`,
    one run). ValueError when Tesseract is missing, fails or takes longer than ``timeout_s``."""
    from app.errors import DataSourceError
    from app.formats.ocr import Ocr

    try:
        return Ocr(langs, command=command).read_page(image, "page", "the page", timeout_s)[1]
    except DataSourceError as exc:
        raise ValueError(f"tesseract did not read the page ({exc})") from None


def word_boxes(words: PageWords, quote: str) -> list[Box]:
    """The rectangles covering ``quote`` among a page's Tesseract words, merged per line, as fractions
    of the image Tesseract read; ``[]`` when not found."""
    return word_units(words).boxes(quote)


def scan_image(path: Path | str, page_number: int, dpi: int = 300):
    """Page ``page_number`` of a scan as the sync's OCR read it: an image file's page, or a PDF page
    rendered as :mod:`app.formats.ocr` renders it. ValueError as :func:`render_page`."""
    path = Path(path)
    if path.suffix.lower() not in PDF_SUFFIXES:
        return scan_page(path, page_number)
    from app.formats.ocr import render_page as ocr_render

    with PDFIUM_LOCK:
        document = open_pdf(path)
        try:
            check_page(page_number, len(document), path.name)
            page = document[page_number - 1]
            try:
                return ocr_render(page, dpi)
            finally:
                page.close()
        finally:
            document.close()


def scan_quote_boxes(
    path: Path | str, page_number: int, quote: str, langs: str = "jpn+eng", command: str = "tesseract"
) -> list[Box]:
    """The rectangles covering ``quote`` on page ``page_number`` of a scan (an image file, or a PDF page
    with no text layer), from Tesseract's word boxes read now for that one page (seconds). ``[]`` when
    not found; ValueError as :func:`render_page` or :func:`tesseract_words`."""
    return word_boxes(tesseract_words(scan_image(path, page_number), langs, command), quote)


def has_text_layer(path: Path | str, page_number: int) -> bool:
    """Whether page ``page_number`` of a PDF has text PDFium can read (False: a scanned page, OCR'd)."""
    with _text_page(path, page_number) as (page, textpage):
        return pdf_units(page, textpage) is not None
