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
the next sync finishes the work. A file that cannot be read is reported as failed and its
stored version (if any) is kept.
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
from app.errors import DataSourceError

log = logging.getLogger(__name__)

ID_NAMESPACE = uuid.UUID("6f1b0c3e-2a4d-5e8f-9a1b-3c5d7e9f1a2b")
CHUNKER_VERSION = "1"  # bump when chunking changes, so every document is re-chunked once
SUPPORTED = {"pdf": ".pdf", "csv": ".csv"}
EMBED_BATCH = 64


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

    def summary(self) -> str:
        """The one-line summary the CLI prints."""
        line = (f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
                f"{self.removed} removed, {self.failed} failed")
        extra = f"; embedded {self.embedded} chunks, reused {self.reused}"
        if self.renamed:
            extra += f" ({self.renamed} renamed)"
        return line + extra


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def text_hash(text: str) -> str:
    """Short hash of a chunk's text (the key for reusing its embedding)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def settings_hash(settings: Settings) -> str:
    """What, besides the bytes, decides a document's chunks and vectors."""
    key = f"{settings.embed_model}|{settings.chunk_size}|{settings.chunk_overlap}|{CHUNKER_VERSION}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def doc_id_for(path: Path, data_dir: Path) -> str:
    """A document's ID: its path relative to the data dir, with forward slashes."""
    return path.resolve().relative_to(data_dir.resolve()).as_posix()


def scan(data_dir: Path) -> list[SourceFile]:
    """Every supported file: ``data_dir/pdf/*.pdf`` and ``data_dir/csv/*.csv`` (not recursive)."""
    if not data_dir.is_dir():
        raise DataSourceError(f"data directory not found: {data_dir}")
    files = []
    for folder, suffix in SUPPORTED.items():
        directory = data_dir / folder
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            if path.is_file() and path.suffix.lower() == suffix and not path.name.startswith("."):
                files.append(SourceFile(doc_id_for(path, data_dir), path, path.name, file_hash(path)))
    return files


def resolve_file(path: Path, data_dir: Path) -> SourceFile:
    """One file as a document (it must lie under data_dir/pdf or data_dir/csv)."""
    if not path.is_file():
        raise DataSourceError(f"file not found: {path}")
    try:
        doc_id = doc_id_for(path, data_dir)
    except ValueError:
        raise DataSourceError(f"{path} is not under the data directory {data_dir}") from None
    folder = doc_id.split("/", 1)[0]
    if folder not in SUPPORTED or path.suffix.lower() != SUPPORTED[folder]:
        raise DataSourceError(f"{doc_id}: only pdf/*.pdf and csv/*.csv are ingested")
    return SourceFile(doc_id, path, path.name, file_hash(path))


def plan_sync(files: Sequence[SourceFile], stored: Sequence[dict], settings_key: str,
              remove_missing: bool = True) -> SyncPlan:
    """Compare files on disk with stored documents (pure: no I/O)."""
    plan = SyncPlan()
    by_id = {d["doc_id"]: d for d in stored}
    present = {f.doc_id for f in files}
    for f in files:
        old = by_id.get(f.doc_id)
        if old is None:
            plan.added.append(f)
        elif old["content_hash"] == f.content_hash and old["settings_hash"] == settings_key:
            plan.unchanged.append(f)
        else:
            plan.updated.append(f)
    if remove_missing:
        plan.removed = [d for d in stored if d["doc_id"] not in present]
        gone = {d["content_hash"]: d["doc_id"] for d in plan.removed}
        plan.renamed = {f.doc_id: gone[f.content_hash] for f in plan.added if f.content_hash in gone}
    return plan


def chunk_id(collection: str, doc_id: str, index: int, content_hash: str) -> str:
    """Stable chunk ID from collection, document ID, position and the chunk's text hash."""
    return str(uuid.uuid5(ID_NAMESPACE, f"{collection}/{doc_id}#{index}@{content_hash}"))


def chunk_file(source: SourceFile, settings: Settings) -> list[Document]:
    """Read and chunk one file into Documents with full metadata; DataSourceError if unreadable."""
    from app import ingest
    from app.chunking import split_by_structure

    if source.path.suffix.lower() == ".pdf":
        units = ingest.pdf_units(source.path)
        split = lambda text: split_by_structure(text, settings.chunk_size, settings.chunk_overlap)  # noqa: E731
    else:
        units = ingest.csv_units(source.path)
        split = ingest.csv_splitter(settings.chunk_size, settings.chunk_overlap).split_text
    docs: list[Document] = []
    for text, source_id in units:
        for index, piece in enumerate(split(text)):
            digest = text_hash(piece)
            docs.append(Document(
                id=chunk_id(settings.collection_name, source.doc_id, len(docs), digest),
                page_content=piece,
                metadata={"source": source_id, "chunk_index": index, "file": source.name,
                          "doc_id": source.doc_id, "content_hash": digest, "embed_model": settings.embed_model},
            ))
    return docs


def embed_with_reuse(docs: Sequence[Document], embeddings: Any, lookup: Callable[[list[str]], dict]) -> tuple[list, int]:
    """Vectors for ``docs``: stored ones by text hash via ``lookup``, the rest embedded in batches.

    Returns (vectors in the order of docs, how many were embedded).
    """
    known = lookup([d.metadata["content_hash"] for d in docs])
    missing = list(dict.fromkeys(d.metadata["content_hash"] for d in docs if d.metadata["content_hash"] not in known))
    texts = {d.metadata["content_hash"]: d.page_content for d in docs}
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start:start + EMBED_BATCH]
        for digest, vector in zip(batch, embeddings.embed_documents([texts[h] for h in batch])):
            known[digest] = vector
    return [known[d.metadata["content_hash"]] for d in docs], len(missing)


def sync(data_dir: Path, embeddings: Any, engine: Any, settings: Settings, *, files: Sequence[SourceFile] | None = None,
         remove_missing: bool = True, dry_run: bool = False, progress: bool = False,
         allow_empty: bool = False) -> tuple[SyncPlan, SyncReport]:
    """Bring the store in line with ``files`` (default: everything under ``data_dir``).

    A data dir with no files at all while documents are stored is refused
    (DataSourceError) unless ``allow_empty``: a wrong or unmounted folder must
    not wipe the index.
    """
    from app import db

    files = scan(data_dir) if files is None else list(files)
    key = settings_hash(settings)
    stored = db.list_documents(engine, settings.collection_name)
    if remove_missing and not files and stored and not allow_empty:
        raise DataSourceError(
            f"no PDF or CSV under {data_dir}, but {len(stored)} documents are stored; refusing to remove them "
            "all (check the folder, or run `python -m app.ingest --allow-empty` to empty the store)")
    plan = plan_sync(files, stored, key, remove_missing)
    report = SyncReport(unchanged=len(plan.unchanged), doc_ids=[f.doc_id for f in plan.unchanged])
    if dry_run:
        return plan, report
    lookup = lambda hashes: db.vectors_by_hash(engine, hashes, settings.embed_model)  # noqa: E731
    work = [(f, "added") for f in plan.added] + [(f, "updated") for f in plan.updated]
    bar = _progress(len(work), progress)
    new_texts: list[str] = []
    for source, kind in work:
        try:
            chunks = chunk_file(source, settings)
        except DataSourceError as exc:
            log.warning("skipped %s", exc)
            report.failed += 1
            report.failures.append(str(exc))
            _tick(bar)
            continue
        vectors, embedded = embed_with_reuse(chunks, embeddings, lookup)
        new_texts.extend(d.page_content for d in chunks)
        db.replace_document(engine, settings.collection_name,
                            {"doc_id": source.doc_id, "source_file": source.name,
                             "content_hash": source.content_hash, "settings_hash": key}, chunks, vectors)
        setattr(report, kind, getattr(report, kind) + 1)
        report.embedded += embedded
        report.reused += len(chunks) - embedded
        report.chunks_written += len(chunks)
        report.doc_ids.append(source.doc_id)
        report.renamed += source.doc_id in plan.renamed
        _tick(bar)
    for doc in plan.removed:
        db.delete_document(engine, settings.collection_name, doc["doc_id"], doc["source_file"])
        report.removed += 1
    if remove_missing:
        db.delete_legacy_chunks(engine, settings.collection_name, [f.name for f in files])
    if bar is not None:
        bar.close()
    if new_texts:
        from app.ingest import warn_truncated

        warn_truncated(new_texts, embeddings)
    return plan, report


def _progress(total: int, enabled: bool):
    if not enabled or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="file", desc="Ingesting")


def _tick(bar) -> None:
    if bar is not None:
        bar.update(1)
