"""Reading one file of the data dir as chunks: its format's reader (app.loaders, app.formats) with
the settings' limits and OCR, then the one chunk builder (app.chunks). The sync (app.sync), its
staging (app.staging) and the spec's ``ingest.load_pdfs``/``load_csvs`` all read through here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from langchain_core.documents import Document

from app import formats
from app.chunks import build_chunks
from app.config import Settings
from app.datadir import SourceFile


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
    units, titles, split = read_units(source.path, settings, on_page)
    yield from build_chunks(
        units,
        split,
        collection=settings.retrieval.collection_name,
        doc_id=source.doc_id,
        file=source.name,
        embed_model=settings.models.embed_model,
        titles=titles,
    )


def read_units(
    path: Path, settings: Settings, on_page: Callable[[int, int], None] | None = None
) -> tuple[list[tuple[str, str, str]], dict[str, str], Callable[[str], list[str]]]:
    """Read one file as its format says: ``(units, titles, split)``, where a unit is ``(text, source,
    context)`` (a PDF page's section, a CSV row, a Markdown section …), ``titles`` a source's title
    and ``split`` how the units are cut into chunks. The sync's reader (limits and OCR from
    ``settings``), also behind the spec's ``ingest.load_pdfs``/``load_csvs``; DataSourceError if
    unreadable."""
    from app import loaders, pdf
    from app.chunking import split_by_structure

    suffix = path.suffix.lower()
    limits = loaders.Limits.from_settings(settings)
    titles: dict[str, str] = {}
    if suffix == ".pdf":
        title, pages = pdf.pdf_document(path, limits, ocr=formats.pdf_ocr(settings, on_page))
        units = [(text, source_id, " — ".join(p for p in (title, heading) if p)) for text, source_id, heading in pages]
        split = lambda text: split_by_structure(text, settings.ingest.chunk_size, settings.ingest.chunk_overlap)  # noqa: E731
    elif suffix in (".md", ".txt"):
        sections = loaders.text_document(path, limits)
        titles = {source_id: heading for _, source_id, heading in sections if heading}
        units = [
            (text, source_id, " — ".join(p for p in (path.stem, heading) if p)) for text, source_id, heading in sections
        ]
        split = loaders.csv_splitter(settings.ingest.chunk_size, settings.ingest.chunk_overlap).split_text
    elif suffix in formats.SUFFIXES:
        document = formats.read_document(path, settings, on_page)
        units, titles = document.units, document.titles
        split = loaders.csv_splitter(settings.ingest.chunk_size, settings.ingest.chunk_overlap).split_text
        if document.split == "pages":  # OCR'd scans are split as PDF pages are
            split = lambda text: split_by_structure(text, settings.ingest.chunk_size, settings.ingest.chunk_overlap)  # noqa: E731
    else:
        header, rows = loaders.csv_table(path, limits)
        context = f"{path.stem} — {', '.join(header)}"
        units = [(text, source_id, context) for text, source_id in rows]
        split = loaders.csv_splitter(settings.ingest.chunk_size, settings.ingest.chunk_overlap).split_text
    return units, titles, split
