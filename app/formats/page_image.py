"""One stored page as a picture, and where a quoted sentence lies on it: the page's web view shows a PDF
page or a scan as the image it is, with the quote marked.

* :func:`render_page` — a PNG of one page: a PDF page rendered with PDFium (pypdfium2, as
  :mod:`app.formats.ocr` renders pages for OCR; only that page is loaded, so a 2,000-page PDF costs one
  page), a page of a multi-page TIFF (Pillow's ``seek``), or a single image as it is; scaled to
  ``width_px`` (an image is only ever scaled down);
* :func:`quote_boxes` — the rectangles covering a quote on a PDF page, from PDFium's text page;
* :func:`scan_quote_boxes` — the same on a page image, from Tesseract's word boxes (TSV output),
  read on demand for that one page.

Rectangles are fractions of the page, top-left origin: ``{"x", "y", "w", "h"}`` in 0..1. A quote is
found ignoring whitespace and width differences (NFKC, whitespace dropped on both sides: the stored
chunk text and the page's own text differ in spaces and line breaks); one not found gives ``[]``.
Bad input (a page past the end, an unreadable file, an unknown kind) raises ValueError with one line.
"""

from __future__ import annotations

import io
import os
import subprocess
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from app.formats.ocr import MAX_PIXELS

PDF_SUFFIXES = (".pdf",)
SCAN_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")  # app.formats.IMAGE_SUFFIXES
DEFAULT_WIDTH = 1200
MAX_WIDTH = 3000
Box = dict[str, float]


def is_paged(path: Path | str) -> bool:
    """Whether a file renders as page images here: a PDF or a scanned image."""
    return str(path).lower().endswith(PDF_SUFFIXES + SCAN_SUFFIXES)


def _check(page_number: int, count: int, name: str) -> None:
    """ValueError naming the page count when ``page_number`` is not a page of the file."""
    if not 1 <= page_number <= count:
        raise ValueError(f"{name}: no page {page_number} (the file has {count} page{'s' if count != 1 else ''})")


def _width(width_px: int) -> int:
    """``width_px`` checked: 1..MAX_WIDTH."""
    if not 1 <= int(width_px) <= MAX_WIDTH:
        raise ValueError(f"width {width_px} px is outside 1..{MAX_WIDTH}")
    return int(width_px)


def _open_pdf(path: Path):
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
            _check(page_number, getattr(image, "n_frames", 1), name)
            image.seek(page_number - 1)
            if image.width * image.height > MAX_PIXELS:
                raise ValueError(f"{name}: {image.width}×{image.height} pixels, more than {MAX_PIXELS:,}")
            return image.convert("L" if image.mode in ("1", "L", "I;16") else "RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError) as exc:
        raise ValueError(f"{name}: unreadable image ({exc.__class__.__name__}: {exc})") from None


def render_page(path: Path | str, page_number: int, width_px: int = DEFAULT_WIDTH) -> bytes:
    """Page ``page_number`` (1-based) of a PDF or a scanned image as a PNG ``width_px`` wide (an image
    narrower than that stays as it is). ValueError for a page past the end or < 1 (naming the page
    count), an unreadable file, a width outside 1..MAX_WIDTH or a file that is neither."""
    path = Path(path)
    width = _width(width_px)
    if path.suffix.lower() in PDF_SUFFIXES:
        document = _open_pdf(path)
        try:
            _check(page_number, len(document), path.name)
            page = document[page_number - 1]  # only this page is loaded
            try:
                scale = width / max(page.get_width(), 1.0)
                bitmap = page.render(scale=scale, may_draw_forms=True)
                return _png(bitmap.to_pil())
            finally:
                page.close()
        finally:
            document.close()
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


def _found(units: Sequence[str], quote: str) -> list[int]:
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


@contextmanager
def _text_page(path: Path | str, page_number: int) -> Iterator[tuple]:
    """``(page, textpage)`` of page ``page_number`` of a PDF, closed (with the document) afterwards;
    ValueError as :func:`render_page`."""
    path = Path(path)
    document = _open_pdf(path)
    try:
        _check(page_number, len(document), path.name)
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
    import pypdfium2.raw as pdfium_c

    with _text_page(path, page_number) as (page, textpage):
        count = textpage.count_chars()
        chars = [chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, i) or 32) for i in range(count)]
        covered = _found(chars, quote)
        left0, bottom0, right0, top0 = page.get_cropbox()
        boxes = []
        for i in covered:
            if chars[i].isspace():
                continue
            left, bottom, right, top = textpage.get_charbox(i)
            boxes.append((left - left0, top0 - top, right - left0, top0 - bottom))
        return fractions(merged(boxes), right0 - left0, top0 - bottom0, page.get_rotation())


def tesseract_words(image, langs: str = "jpn+eng", command: str = "tesseract", timeout_s: float = 120.0) -> list[dict]:
    """The words Tesseract reads in a PIL image, in reading order: ``{"text", "left", "top", "width",
    "height", "line"}`` in the image's pixels (``line``: block, paragraph and line numbers). ValueError
    when Tesseract is missing, fails or takes longer than ``timeout_s``."""
    buffer = io.BytesIO()
    image.convert("L").save(buffer, format="PNG")
    try:
        done = subprocess.run(
            [command, "stdin", "stdout", "-l", langs, "--psm", "3", "tsv"],
            input=buffer.getvalue(),
            capture_output=True,
            timeout=timeout_s,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"tesseract did not read the page ({exc.__class__.__name__})") from None
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ValueError(f"tesseract failed ({lines[-1] if lines else done.returncode})")
    words = []
    for row in done.stdout.decode("utf-8", "replace").splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5" or not cells[11].strip():
            continue
        words.append(
            {
                "text": cells[11].strip(),
                "left": int(cells[6]),
                "top": int(cells[7]),
                "width": int(cells[8]),
                "height": int(cells[9]),
                "line": (int(cells[2]), int(cells[3]), int(cells[4])),
            }
        )
    return words


def word_boxes(words: Sequence[dict], quote: str, width: float, height: float) -> list[Box]:
    """The rectangles covering ``quote`` among Tesseract ``words`` (as :func:`tesseract_words` gives them)
    of a ``width`` × ``height`` image, merged per line, as fractions; ``[]`` when not found."""
    covered = _found([w["text"] for w in words], quote)
    runs: list[tuple[tuple, list[float]]] = []
    for i in covered:
        w = words[i]
        box = [w["left"], w["top"], w["left"] + w["width"], w["top"] + w["height"]]
        if runs and runs[-1][0] == w["line"]:
            run = runs[-1][1]
            run[:] = [min(run[0], box[0]), min(run[1], box[1]), max(run[2], box[2]), max(run[3], box[3])]
        else:
            runs.append((w["line"], box))
    return fractions([tuple(run) for _, run in runs], width, height)  # type: ignore[misc]


def scan_quote_boxes(
    path: Path | str, page_number: int, quote: str, langs: str = "jpn+eng", command: str = "tesseract"
) -> list[Box]:
    """The rectangles covering ``quote`` on page ``page_number`` of a scan (an image file, or a PDF page
    with no text layer, rendered as :mod:`app.formats.ocr` renders it), from Tesseract's word boxes read
    now for that one page. ``[]`` when not found; ValueError as :func:`render_page` or :func:`tesseract_words`."""
    path = Path(path)
    if path.suffix.lower() in PDF_SUFFIXES:
        from app.formats.ocr import render_page as ocr_render

        document = _open_pdf(path)
        try:
            _check(page_number, len(document), path.name)
            page = document[page_number - 1]
            try:
                image = ocr_render(page, 300)
            finally:
                page.close()
        finally:
            document.close()
    else:
        image = scan_page(path, page_number)
    words = tesseract_words(image, langs, command)
    return word_boxes(words, quote, image.width, image.height)


def has_text_layer(path: Path | str, page_number: int) -> bool:
    """Whether page ``page_number`` of a PDF has text PDFium can read (False: a scanned page, OCR'd)."""
    with _text_page(path, page_number) as (_, textpage):
        return any(not c.isspace() for c in textpage.get_text_range())


def page_quote_boxes(
    path: Path | str, page_number: int, quote: str, langs: str = "jpn+eng", command: str = "tesseract"
) -> list[Box]:
    """The rectangles covering ``quote`` on a page: from the PDF's text layer where it has one
    (:func:`quote_boxes`), else from Tesseract's word boxes (:func:`scan_quote_boxes`: seconds). ValueError
    as those (Tesseract missing included)."""
    path = Path(path)
    if path.suffix.lower() in PDF_SUFFIXES and has_text_layer(path, page_number):
        return quote_boxes(path, page_number, quote)
    if not is_paged(path):
        raise ValueError(f"{path.name}: not a PDF or a scanned image")
    return scan_quote_boxes(path, page_number, quote, langs, command)
