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
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app import storage
from app.config import Settings
from app.errors import DataSourceError
from app.graphrag import index
from app.ingestion.datadir import SourceFile
from app.ingestion.queue_sync import stage_queued
from app.ingestion.scan import scan
from app.ingestion.staging import (
    FATAL_ERRORS,
    StagedFile,
    StageRun,
    TruncationTally,
    describe_failure,
    generation,
    graph_extractor,
)
from app.ingestion.versions import load_version_overrides, update_versions
from app.ingestion.workers import Progress, stage_all
from app.llm import get_llm
from app.permissions.principals import EVERYONE, FULL_ACCESS
from app.permissions.readers import permissions_on, readers_by_doc
from app.permissions.rules import AccessFileError

log = logging.getLogger(__name__)


# A sync that writes at least this many chunks analyzes the BM25 statistics tables at its end (a
# one-file sync stays fast; autovacuum handles small changes within a minute).
ANALYZE_AFTER_CHUNKS = 1000
# (2: chunk context; 3: PDF pages cut at headings found by font size, heading paths; 4: PDF pages
# without a text layer OCR'd)
CHUNKER_VERSION = "4"  # bump when chunking changes, so every document is re-chunked once


ORIGIN_DATA_DIR = "data_dir"  # documents a sync of the data dir manages


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
    readers_changed: int = 0  # documents whose readers the access file or the file share changed
    versions_changed: int = 0  # documents whose family, effective date or current version changed

    def summary(self) -> str:
        """The one-line summary the CLI prints."""
        line = (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed, {self.failed} failed"
        )
        extra = f"; embedded {self.embedded} chunks, reused {self.reused}"
        if self.renamed:
            extra += f" ({self.renamed} renamed)"
        if self.readers_changed:
            extra += f"; readers changed for {self.readers_changed} documents"
        if self.versions_changed:
            extra += f"; versions changed for {self.versions_changed} documents"
        return line + extra


def settings_hash(settings: Settings) -> str:
    """What, besides the bytes, decides a document's chunks and vectors (the OCR's languages and
    resolution too: changing them reads the scans again)."""
    key = (
        f"{settings.models.embed_model}|{settings.ingest.chunk_size}|{settings.ingest.chunk_overlap}|{CHUNKER_VERSION}"
        f"|{settings.ingest.ocr_langs}|{settings.ingest.ocr_dpi}"
    )
    return hashlib.sha256(key.encode()).hexdigest()[:16]


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


def check_access_file_kept(settings: Settings, data_dir: Path, stored: Sequence[dict]) -> None:
    """AccessFileError when there is no access file (nor ACCESS_FROM_FS) but stored documents are readable
    by some users only: the file was moved away, deleted or its folder unmounted, and a sync without it
    would make every document everyone's. Opening the store to everyone stays possible, on purpose: an
    access file whose only rule is ``"" = ["everyone"]``."""
    if permissions_on(settings, data_dir):
        return
    restricted = [d["doc_id"] for d in stored if d.get("readers") is not None and EVERYONE not in d["readers"]]
    if restricted:
        raise AccessFileError(
            f"the access file {settings.access.file_in(data_dir)} is missing, but {len(restricted)} stored documents "
            f"are not everyone's (e.g. {restricted[0]}); restore it, or write one whose only rule is "
            '"" = ["everyone"] to give every document to everyone on purpose'
        )


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
    queue: bool = False,
) -> tuple[SyncPlan, SyncReport]:
    """Bring the store in line with ``files`` (default: everything under ``data_dir``).

    The caller holds the writer lock (RagStore does); ``stored`` (default: read
    from the database) lets a dry run plan without the schema existing. A data dir with no files at
    all while documents are stored is refused (DataSourceError) unless
    ``allow_empty``: a wrong or unmounted folder must not wipe the index. With ``workers`` > 1,
    files are read, chunked, embedded and staged by that many processes in parallel (each loads the
    model the settings name); this process switches each document over as it is staged. With ``queue``,
    each file is a job of the collection's queue instead, staged by ``python -m app.worker`` on any
    machine (app.ingestion.queue_sync), and this process waits and switches them over. With
    ``progress``, a bar counts the chunks done and names the file being read. With ``graph`` (and
    GRAPH_EXTRACTOR not ``off``), the graph is rebuilt at the end when anything changed
    (app.graphrag.index). Every document's family, effective date and current version are decided
    last (app.ingestion.versions; VERSIONS_FILE fixes them).
    """
    failures: list[tuple[str, str]] = []
    if files is None:
        files, failures = scan(data_dir, settings)
    files = list(files)
    key = settings_hash(settings)
    readers = readers_by_doc(files, data_dir, settings, remove_missing)  # a bad access file stops the sync first
    overrides = load_version_overrides(settings, data_dir)  # so does a bad versions file
    if stored is None:
        stored = storage.list_documents(engine, settings.retrieval.collection_name, FULL_ACCESS)
    managed = [d for d in stored if d.get("origin", ORIGIN_DATA_DIR) == ORIGIN_DATA_DIR]
    if remove_missing and not files and not failures and managed and not allow_empty:
        raise DataSourceError(
            f"no supported file under {data_dir}, but {len(managed)} documents are stored; refusing to remove them "
            "all (check the folder, or run `python -m app.ingest --allow-empty` to empty the store)"
        )
    check_access_file_kept(settings, data_dir, managed)  # a lost access file must not give everything to everyone
    plan = plan_sync(files, stored, key, remove_missing, keep=[doc_id for doc_id, _ in failures if doc_id])
    report = SyncReport(unchanged=len(plan.unchanged), doc_ids=[f.doc_id for f in plan.unchanged])
    for _, reason in failures:
        _fail(report, reason)
    if dry_run:
        return plan, report
    work = [(f, "added") for f in plan.added] + [(f, "updated") for f in plan.updated]
    run = uuid.uuid4().hex  # this sync's name on the batches it stages or finds staged
    long_chunks = TruncationTally()
    stage = StageRun(settings, embeddings, engine, key, run)
    with Progress(len(work), progress) as bar:
        staging = stage_queued(work, stage, bar, data_dir) if queue and work else stage_all(work, stage, workers, bar)
        for (source, kind), staged in staging:
            if isinstance(staged, str):  # reading, chunking, embedding or staging failed: the one-line reason
                _fail(report, staged)
                continue
            try:
                write_document(
                    engine, settings, key, source, run, staged.chunks, readers[source.doc_id], staged.page_words
                )
            except FATAL_ERRORS:
                raise
            except Exception as exc:  # this file's failure only: its stored version stays, the sync goes on
                _fail(report, describe_failure(source.doc_id, exc))
            else:
                _count_written(report, plan, kind, source, staged)
                long_chunks.add(staged)
    # Batches no sync will switch over (of other bytes or settings, of files gone), now that they
    # served as a vector cache: the batches of files that failed stay, for the next sync to resume.
    current = {f.doc_id: generation(f, key, settings) for f, _ in work}
    storage.clean_staging(engine, settings.retrieval.collection_name, current, only_these=not remove_missing)
    if remove_missing:  # queued rows of files removed, changed or stored since, and their finished jobs
        storage.forget_stale(engine, settings.retrieval.collection_name, current)
    for doc in plan.removed:
        storage.delete_document(engine, settings.retrieval.collection_name, doc["doc_id"], doc["source_file"])
        report.removed += 1
    if remove_missing:
        names = [f.name for f in files] + [doc_id.rsplit("/", 1)[-1] for doc_id, _ in failures if doc_id]
        storage.delete_legacy_chunks(engine, settings.retrieval.collection_name, names)
    report.readers_changed = storage.apply_readers(engine, settings.retrieval.collection_name, readers)
    report.versions_changed = update_versions(engine, settings, data_dir, overrides)
    if report.chunks_written >= ANALYZE_AFTER_CHUNKS:
        storage.analyze_keyword_stats(engine)
    long_chunks.warn()
    if graph and settings.graph.extractor != "off":
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
    if not index.needs_build(engine, settings):
        return None
    llm = None
    if "llm" in (settings.graph.extractor, settings.graph.reports):
        llm = get_llm(settings)
    return index.build(engine, settings, embeddings, llm=llm)


def write_document(
    engine: Any,
    settings: Settings,
    key: str,
    source: SourceFile,
    run: str,
    chunks: int,
    readers: Sequence[str],
    words: Mapping | None = None,
) -> None:
    """Switch ``source``'s document over to the ``chunks`` chunks ``run`` staged (and their entity
    links), readable by ``readers``, in one transaction (the caller holds the writer lock). A CSV's or
    workbook's tables (app.tables.extract) replace its stored tables in that transaction; a file whose
    tables cannot be read is stored without (its text is searchable, a warning says why). The words of
    its OCR'd pages (``words``: page -> PageWords, from staging) replace its stored ones there too."""
    storage.switch_document(
        engine,
        settings.retrieval.collection_name,
        {
            "doc_id": source.doc_id,
            "source_file": source.name,
            "content_hash": source.content_hash,
            "settings_hash": key,
            "origin": ORIGIN_DATA_DIR,
            "readers": tuple(readers),
        },
        run,
        chunks,
        graph_extractor(settings),
        tables=_tables_of(source, settings),
        words=words,
    )


def _tables_of(source: SourceFile, settings: Settings) -> list:
    """The tables of a CSV or workbook to store with it (``[]`` for other files, or when unreadable)."""
    from app.tables.reading import read_tables

    try:
        return read_tables(source.path, settings)
    except DataSourceError as exc:
        log.warning("%s: its tables are not stored (%s)", source.doc_id, exc)
        return []


def _count_written(report: SyncReport, plan: SyncPlan, kind: str, source: SourceFile, staged: StagedFile) -> None:
    """Add one written document to the report."""
    setattr(report, kind, getattr(report, kind) + 1)
    report.embedded += staged.embedded
    report.reused += staged.chunks - staged.embedded
    report.chunks_written += staged.chunks
    report.doc_ids.append(source.doc_id)
    report.renamed += source.doc_id in plan.renamed


def _fail(report: SyncReport, reason: str) -> None:
    """Count one failed file and warn once, on one line."""
    log.warning("skipped %s", reason)
    report.failed += 1
    report.failures.append(reason)
