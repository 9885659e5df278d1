"""Documents given through the Python API (``RagStore.add_document(Document)``): stored through the
sync's own writer, their chunks staged and then switched over in one transaction, as a file's are.
They are their own parent documents (origin ``api``), which a sync of the data dir leaves alone."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.documents import Document

from app import storage
from app.chunking import split_by_structure
from app.config import Settings
from app.formats.limits import strip_nul
from app.ingestion.staging import embed_with_reuse, extract_graphs, graph_extractor
from app.permissions.readers import api_document_readers
from app.text.chunks import build_chunks, text_hash

ORIGIN_API = "api"  # documents added through RagStore.add_document(Document); a sync leaves them alone


def write_api_document(doc: Document, embeddings: Any, engine: Any, settings: Settings) -> str:
    """Store one Document (chunked like a PDF page) as its own parent document and return its ID
    (``doc.id``, or a new UUID); its ``metadata['source']`` is the source (default: the ID). The
    caller holds the writer lock."""
    parent = doc.id or str(uuid.uuid4())
    source = str(doc.metadata.get("source") or parent)
    text = strip_nul(doc.page_content)
    size, overlap = settings.ingest.chunk_size, settings.ingest.chunk_overlap
    chunks = list(
        build_chunks(
            [(text, source, str(doc.metadata.get("context", "")))],
            lambda body: split_by_structure(body, size, overlap),
            collection=settings.retrieval.collection_name,
            doc_id=parent,
            file=source,
            embed_model=settings.models.embed_model,
            metadata=doc.metadata,
        )
    )
    lookup = lambda hashes: storage.vectors_by_hash(engine, hashes, settings.models.embed_model)  # noqa: E731
    vectors, _ = embed_with_reuse(chunks, embeddings, lookup)
    extractor = graph_extractor(settings)
    run = uuid.uuid4().hex
    collection = settings.retrieval.collection_name
    storage.stage_chunks(
        engine,
        collection,
        parent,
        f"{text_hash(text)}:document:{extractor}",
        run,
        list(enumerate(chunks)),
        vectors,
        extract_graphs(chunks, settings),
    )
    row = {
        "doc_id": parent,
        "source_file": source,
        "content_hash": text_hash(text),
        "settings_hash": "document",
        "origin": ORIGIN_API,
        "readers": api_document_readers(parent, settings),
    }
    storage.switch_document(engine, collection, row, run, len(chunks), extractor)
    return parent
