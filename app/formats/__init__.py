"""Readers for the office formats a sync takes besides PDF, CSV, Markdown and text (issue 26).

One module per format, each built on a maintained reader:

* :mod:`.word` — ``.docx`` (python-docx): sections cut at headings, ``file.docx#slug``;
* :mod:`.excel` — ``.xlsx``/``.xlsm`` (openpyxl), ``.xls`` (xlrd): one unit per data row,
  ``file.xlsx:<sheet>!r<N>``;
* :mod:`.slides` — ``.pptx`` (python-pptx): one unit per slide, ``file.pptx:s<N>``;
* :mod:`.html` — ``.html``/``.htm`` (trafilatura): main content cut at headings, ``file.html#slug``;
* :mod:`.ocr` — images and PDF pages without a text layer (Tesseract), ``file.png``, ``file.pdf:p<N>``;
* :mod:`.zipguard` — the checks every Office zip passes first (encrypted, corrupt, zip bomb).

:func:`read_document` is the one entry point a sync calls; every failure is a DataSourceError of
one line naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

WORD_SUFFIXES = (".docx",)
SHEET_SUFFIXES = (".xlsx", ".xlsm", ".xls")
SLIDE_SUFFIXES = (".pptx",)
HTML_SUFFIXES = (".html", ".htm")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
OFFICE_SUFFIXES = WORD_SUFFIXES + SHEET_SUFFIXES + SLIDE_SUFFIXES
SUFFIXES = OFFICE_SUFFIXES + HTML_SUFFIXES + IMAGE_SUFFIXES


@dataclass(frozen=True)
class FormatDocument:
    """What a reader made of one file: its units ``(text, source, context line)``, the heading or
    slide title of each source that has one (the chunks' ``title``), and how a unit is split into
    chunks: ``"rows"`` and ``"sections"`` by Japanese sentences (as CSV rows and Markdown sections),
    ``"pages"`` by structure (as PDF pages)."""

    units: list[tuple[str, str, str]]
    titles: dict[str, str] = field(default_factory=dict)
    split: str = "sections"


def size_limit(suffix: str, settings) -> tuple[str, int] | None:
    """The size limit's variable and value for a file of ``suffix`` read here (MAX_OFFICE_MB,
    MAX_IMAGE_MB; HTML is text: MAX_TEXT_MB), None for the other formats."""
    suffix = suffix.lower()
    if suffix in OFFICE_SUFFIXES:
        return "MAX_OFFICE_MB", settings.ingest.max_office_mb
    if suffix in IMAGE_SUFFIXES:
        return "MAX_IMAGE_MB", settings.ingest.max_image_mb
    if suffix in HTML_SUFFIXES:
        return "MAX_TEXT_MB", settings.ingest.max_text_mb
    return None


def _joined(*parts: str) -> str:
    """The non-empty parts joined by `` — `` (a context line)."""
    return " — ".join(part for part in parts if part)


def read_document(path: Path, settings, on_page=None) -> FormatDocument:
    """One file of a format in :data:`SUFFIXES` as a :class:`FormatDocument`; DataSourceError (one
    line) if it cannot be read. Context lines name the file's stem first, as for CSV and Markdown.
    ``on_page(done, total)`` is called after each OCR'd page of an image (progress; never for the
    other formats, which read in well under a second)."""
    from app.loaders import Limits

    limits = Limits.from_settings(settings)
    suffix, stem = path.suffix.lower(), path.stem
    if suffix in WORD_SUFFIXES + HTML_SUFFIXES:
        if suffix in WORD_SUFFIXES:
            from app.formats.word import docx_document

            title, sections = "", docx_document(path, limits)
        else:
            from app.formats.html import html_document

            title, sections = html_document(path, limits)
        return FormatDocument(
            [(text, source, _joined(stem, heading or title)) for text, source, heading in sections],
            {source: heading for _, source, heading in sections if heading},
        )
    if suffix in SHEET_SUFFIXES:
        from app.formats import excel

        read = excel.xls_document if suffix == ".xls" else excel.xlsx_document
        return FormatDocument(read(path, limits), split="rows")
    if suffix in SLIDE_SUFFIXES:
        from app.formats.slides import pptx_document

        slides = pptx_document(path, limits)
        return FormatDocument(
            [(text, source, _joined(stem, title)) for text, source, title in slides],
            {source: title for _, source, title in slides if title},
        )
    if suffix in IMAGE_SUFFIXES:
        from app.formats.ocr import Ocr, image_document

        pages = image_document(path, Ocr.from_settings(settings), limits, on_page)
        return FormatDocument([(text, source, stem) for text, source in pages], split="pages")
    raise ValueError(f"not a format of app.formats: {path.suffix!r}")


def pdf_ocr(settings, on_page=None):
    """The ``ocr`` hook of :func:`app.pdf.pdf_document`: OCR of a PDF's pages without a text layer
    with the settings' Tesseract languages and resolution; ``on_page(done, total)`` after each page."""
    from app.formats.ocr import Ocr
    from app.loaders import Limits

    ocr, limits = Ocr.from_settings(settings), Limits.from_settings(settings)

    def read(path: Path, numbers: list[int], page_count: int) -> dict[int, str]:
        return ocr.pdf_pages(path, numbers, page_count, limits, on_page)

    return read
