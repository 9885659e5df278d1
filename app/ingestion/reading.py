"""Reading one file of the data dir as chunks: its format's reader (the registry of :mod:`app.formats`)
with the settings' limits and OCR, then the one chunk builder (:mod:`app.text.chunks`). The sync
(:mod:`app.ingestion.sync`), its staging and the spec's ``ingest.load_pdfs``/``load_csvs`` all read
through here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from langchain_core.documents import Document

from app import formats
from app.chunking import csv_splitter, split_by_structure
from app.config import Settings
from app.errors import DataSourceError
from app.formats import FormatDocument
from app.formats.limits import display_name
from app.ingestion.datadir import SourceFile
from app.text.chunks import build_chunks


def chunk_file(source: SourceFile, settings: Settings) -> list[Document]:
    """Every chunk of one file (:func:`iter_chunks`) in a list; DataSourceError if unreadable."""
    return list(iter_chunks(source, settings))


def iter_chunks(
    source: SourceFile, settings: Settings, on_page: Callable[[int, int], None] | None = None
) -> Iterator[Document]:
    """Read one file, then yield its chunks one by one as Documents with full metadata (a sync embeds
    and stores them in batches, never holding them all); DataSourceError if unreadable (raised by
    the first ``next``). ``on_page(done, total)`` after each page OCR'd (a scan: seconds per page).

    Each chunk carries a ``context`` for both indexes (its text shown to users is
    unchanged): a PDF's title and the heading path above the chunk, a CSV's file stem and header line, a
    Markdown section's file stem and heading path (also its ``title``); the other formats
    (:mod:`app.formats`: Word, Excel, PowerPoint, HTML, scanned images) likewise.
    The context is weighted above the body in the keyword index and embedded with it.
    """
    yield from document_chunks(read_file(source.path, settings, on_page), source, settings)


def read_file(path: Path, settings: Settings, on_page: Callable[[int, int], None] | None = None) -> FormatDocument:
    """One file as its format's reader reads it (limits and OCR from ``settings``), its length checked
    (MAX_FILE_CHARS): the units, and the words of its OCR'd pages. DataSourceError if unreadable."""
    document = formats.read_document(path, settings, on_page)
    check_file_chars(path, document.units, settings.ingest.max_file_chars)
    return document


def document_chunks(document: FormatDocument, source: SourceFile, settings: Settings) -> Iterator[Document]:
    """The chunks of a file read by :func:`read_file`, one by one, as :func:`iter_chunks` yields them."""
    yield from build_chunks(
        document.units,
        splitter(document.split, settings),
        collection=settings.retrieval.collection_name,
        doc_id=source.doc_id,
        file=source.name,
        embed_model=settings.models.embed_model,
        titles=document.titles,
    )


def splitter(kind: str, settings: Settings) -> Callable[[str], list[str]]:
    """How a format's units are cut into chunks: ``"pages"`` by structure (paragraphs, as PDF pages),
    ``"rows"`` and ``"sections"`` by LangChain's recursive splitter on Japanese sentence ends."""
    size, overlap = settings.ingest.chunk_size, settings.ingest.chunk_overlap
    if kind == "pages":
        return lambda text: split_by_structure(text, size, overlap)
    return csv_splitter(size, overlap).split_text


def read_units(
    path: Path, settings: Settings, on_page: Callable[[int, int], None] | None = None
) -> tuple[list[tuple[str, str, str]], dict[str, str], Callable[[str], list[str]]]:
    """Read one file as its format says: ``(units, titles, split)``, where a unit is ``(text, source,
    context)`` (a PDF page's section, a CSV row, a Markdown section …), ``titles`` a source's title
    and ``split`` how the units are cut into chunks. The sync's reader (limits and OCR from
    ``settings``), also behind the spec's ``ingest.load_pdfs``/``load_csvs``; DataSourceError if
    unreadable."""
    document = read_file(path, settings, on_page)
    return document.units, document.titles, splitter(document.split, settings)


def check_file_chars(path: Path, units: list[tuple[str, str, str]], limit: int) -> None:
    """DataSourceError (one line) when the text ``path`` yields is longer than ``limit`` characters
    (MAX_FILE_CHARS): a small compressed file may expand to millions of characters, hours of
    embedding; checked after reading, before anything is embedded."""
    total = sum(len(text) for text, _, _ in units)
    if total > limit:
        raise DataSourceError(
            f"{display_name(path)}: {total} characters of text, more than MAX_FILE_CHARS={limit}; "
            "skipped (raise MAX_FILE_CHARS to read it)"
        )
