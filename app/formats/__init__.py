"""Formats: ONE registry of what a sync reads (:data:`FORMATS`): for each format its suffixes, the
data-dir folders that take it, its size limit, its reader and how its units are split into chunks.

One module per format, each built on a maintained reader (the heavy library imported when a file
of that format is read):

* :mod:`.pdf` — ``.pdf`` (pypdf): pages cut at headings (font size), ``file.pdf:p1``;
* :mod:`.csv_rows` — ``.csv`` (pandas): one unit per data row, ``file.csv:r1``;
* :mod:`.text` — ``.md`` (cut at headings, ``file.md#slug``) and ``.txt``; decoding of text files;
* :mod:`.word` — ``.docx`` (python-docx): sections cut at headings, ``file.docx#slug``;
* :mod:`.excel` — ``.xlsx``/``.xlsm`` (openpyxl), ``.xls`` (xlrd): one unit per data row,
  ``file.xlsx:<sheet>!r<N>``;
* :mod:`.slides` — ``.pptx`` (python-pptx): one unit per slide, ``file.pptx:s<N>``;
* :mod:`.html` — ``.html``/``.htm`` (trafilatura): main content cut at headings, ``file.html#slug``;
* :mod:`.ocr` — images and PDF pages without a text layer (Tesseract), ``file.png``, ``file.pdf:p<N>``;
  :mod:`.page_words` the words it read with their boxes, kept with the document;
* :mod:`.zipguard` — the checks every Office zip passes first (encrypted, corrupt, zip bomb);
* :mod:`.limits` — what one file may make a reader do, and the helpers every reader shares;
* :mod:`.sections`, :mod:`.tables` — headings and tables shared by the office readers.

:func:`read_document` is the one entry point a sync calls; every failure is a DataSourceError of
one line naming the file. May import :mod:`app.config`, :mod:`app.errors` and :mod:`app.text`;
never ingest, storage or models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.formats import csv_rows, excel, html, ocr, pdf, slides, text, word
from app.formats.bounded import IN_PROCESS_BYTES, read_bounded
from app.formats.limits import Limits
from app.formats.page_words import PageWords

WORD_SUFFIXES = (".docx",)
SHEET_SUFFIXES = (".xlsx", ".xlsm", ".xls")
SLIDE_SUFFIXES = (".pptx",)
HTML_SUFFIXES = (".html", ".htm")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff")
OFFICE_SUFFIXES = WORD_SUFFIXES + SHEET_SUFFIXES + SLIDE_SUFFIXES
RECURSIVE_FOLDERS = frozenset({"docs"})  # the data-dir folders read with their subfolders


@dataclass(frozen=True)
class FormatDocument:
    """What a reader made of one file: its units ``(text, source, context line)``, the heading or
    slide title of each source that has one (the chunks' ``title``), and how a unit is split into
    chunks: ``"rows"`` and ``"sections"`` by Japanese sentences (as CSV rows and Markdown sections),
    ``"pages"`` by structure (as PDF pages); for each page OCR'd, its words with their boxes (page
    number -> PageWords: stored with the document for the page's web view)."""

    units: list[tuple[str, str, str]]
    titles: dict[str, str] = field(default_factory=dict)
    split: str = "sections"
    page_words: dict[int, PageWords] = field(default_factory=dict)


@dataclass(frozen=True)
class Format:
    """One format of the registry: its suffixes, the data-dir folders that take it, the setting that
    limits its files' size (``MAX_PDF_MB`` …) and its reader ``read(path, settings, on_page)``."""

    name: str
    suffixes: tuple[str, ...]
    folders: tuple[str, ...]
    size_limit: str
    read: Callable[..., FormatDocument]


def _joined(*parts: str) -> str:
    """The non-empty parts joined by `` — `` (a context line)."""
    return " — ".join(part for part in parts if part)


def _sections(path: Path, title: str, sections: list[tuple[str, str, str]]) -> FormatDocument:
    """Sections ``(text, source, heading)`` as units whose context line is the file's stem and the
    heading (or the document's title), each heading the title of its source."""
    return FormatDocument(
        [(body, source, _joined(path.stem, heading or title)) for body, source, heading in sections],
        {source: heading for _, source, heading in sections if heading},
    )


def pdf_ocr(settings, on_page=None, words: dict[int, PageWords] | None = None):
    """The ``ocr`` hook of :func:`app.formats.pdf.pdf_document`: OCR of a PDF's pages without a text layer
    with the settings' Tesseract languages and resolution; ``on_page(done, total)`` after each page;
    ``words``, when given, receives each OCR'd page's words."""
    reader, limits = ocr.Ocr.from_settings(settings), Limits.from_settings(settings)

    def read(path: Path, numbers: list[int], page_count: int) -> dict[int, str]:
        return reader.pdf_pages(path, numbers, page_count, limits, on_page, words)

    return read


def read_pdf(path: Path, settings, on_page=None) -> FormatDocument:
    """A PDF: page parts cut at headings, the context line its title and the heading path; the words of
    its OCR'd pages kept."""
    words: dict[int, PageWords] = {}
    title, pages = pdf.pdf_document(path, Limits.from_settings(settings), ocr=pdf_ocr(settings, on_page, words))
    return FormatDocument(
        [(body, source, _joined(title, heading)) for body, source, heading in pages], split="pages", page_words=words
    )


def read_image(path: Path, settings, on_page=None) -> FormatDocument:
    """A scanned image, OCR'd page by page (split as PDF pages are), the words of each page kept."""
    words: dict[int, PageWords] = {}
    pages = ocr.image_document(path, ocr.Ocr.from_settings(settings), Limits.from_settings(settings), on_page, words)
    return FormatDocument([(body, source, path.stem) for body, source in pages], split="pages", page_words=words)


def read_csv(path: Path, settings, on_page=None) -> FormatDocument:
    """A CSV: one unit per data row, the context line its stem and header."""
    header, rows = csv_rows.csv_table(path, Limits.from_settings(settings))
    context = f"{path.stem} — {', '.join(header)}"
    return FormatDocument([(body, source, context) for body, source in rows], split="rows")


def read_text(path: Path, settings, on_page=None) -> FormatDocument:
    """Markdown cut at headings, or plain text as one unit."""
    return _sections(path, "", text.text_document(path, Limits.from_settings(settings)))


def read_word(path: Path, settings, on_page=None) -> FormatDocument:
    """A Word document cut at its headings."""
    return _sections(path, "", word.docx_document(path, Limits.from_settings(settings)))


def read_html(path: Path, settings, on_page=None) -> FormatDocument:
    """An HTML page's main content cut at its headings."""
    title, sections = html.html_document(path, Limits.from_settings(settings))
    return _sections(path, title, sections)


def read_sheet(path: Path, settings, on_page=None) -> FormatDocument:
    """A workbook: one unit per data row of each sheet."""
    read = excel.xls_document if path.suffix.lower() == ".xls" else excel.xlsx_document
    return FormatDocument(read(path, Limits.from_settings(settings)), split="rows")


def read_slides(path: Path, settings, on_page=None) -> FormatDocument:
    """A presentation: one unit per slide, the slide's title its context and title."""
    slides_read = slides.pptx_document(path, Limits.from_settings(settings))
    return FormatDocument(
        [(body, source, _joined(path.stem, title)) for body, source, title in slides_read],
        {source: title for _, source, title in slides_read if title},
    )


# The order is the order of the suffixes each folder lists (messages and docs name them so).
FORMATS = (
    Format("PDF", (".pdf",), ("pdf",), "MAX_PDF_MB", read_pdf),
    Format("scanned image", IMAGE_SUFFIXES, ("pdf",), "MAX_IMAGE_MB", read_image),
    Format("CSV", (".csv",), ("csv",), "MAX_CSV_MB", read_csv),
    Format("Markdown or text", (".md", ".txt"), ("docs",), "MAX_TEXT_MB", read_text),
    Format("Word", WORD_SUFFIXES, ("docs",), "MAX_OFFICE_MB", read_word),
    Format("PowerPoint", SLIDE_SUFFIXES, ("docs",), "MAX_OFFICE_MB", read_slides),
    Format("HTML", HTML_SUFFIXES, ("docs",), "MAX_TEXT_MB", read_html),
    Format("Excel", SHEET_SUFFIXES, ("csv", "docs"), "MAX_OFFICE_MB", read_sheet),
)
SUFFIXES = tuple(suffix for fmt in FORMATS for suffix in fmt.suffixes)


def format_of(suffix: str) -> Format | None:
    """The registry's format for a file suffix (any case), or None."""
    suffix = suffix.lower()
    return next((fmt for fmt in FORMATS if suffix in fmt.suffixes), None)


def folder_suffixes() -> dict[str, tuple[str, ...]]:
    """Each data-dir folder and the suffixes a sync reads in it, in the registry's order."""
    out: dict[str, tuple[str, ...]] = {}
    for fmt in FORMATS:
        for folder in fmt.folders:
            out[folder] = out.get(folder, ()) + fmt.suffixes
    return out


def supported_text() -> str:
    """The folders and suffixes a sync reads, as messages name them
    (``pdf/*.pdf|*.png|…, csv/*.csv|… and docs/**/*.md|…``)."""
    parts = [
        f"{folder}/{'**/' if folder in RECURSIVE_FOLDERS else ''}" + "|".join(f"*{s}" for s in suffixes)
        for folder, suffixes in folder_suffixes().items()
    ]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def size_limit(suffix: str, settings) -> tuple[str, int]:
    """The size limit's variable and value for a file of ``suffix`` (MAX_PDF_MB …; any other
    file is text: MAX_TEXT_MB)."""
    fmt = format_of(suffix)
    name = fmt.size_limit if fmt else "MAX_TEXT_MB"
    return name, getattr(settings.ingest, name.lower())


def read_document(path: Path, settings, on_page=None) -> FormatDocument:
    """One file as its format's reader reads it: a :class:`FormatDocument`; DataSourceError (one
    line) if it cannot be read. A suffix outside the registry is read as a CSV (the spec's
    ``load_csvs`` reads any file it is given). ``on_page(done, total)`` after each OCR'd page. An
    Office file (a zip: a few kilobytes may inflate to hundreds of megabytes of XML) and any file over
    1 MiB are read in a child process under MAX_READER_MB and PARSE_TIMEOUT_S (:mod:`app.formats.bounded`)."""
    fmt = format_of(path.suffix) or FORMATS[2]
    try:
        large = path.stat().st_size > IN_PROCESS_BYTES
    except OSError:
        large = False  # the reader says why it cannot read the file
    if (large or path.suffix.lower() in OFFICE_SUFFIXES) and settings.ingest.max_reader_mb:
        return read_bounded(fmt.read, path, settings, on_page)
    return fmt.read(path, settings, on_page)
