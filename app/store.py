"""The Python API (FinderLedge's operations on our PostgreSQL store).

    from app.permissions.principals import FULL_ACCESS
    from app.store import RagStore
    store = RagStore(principals=FULL_ACCESS)  # reads as the owner, on purpose; nothing loads until first use
    store.add_document("data/csv/faq.csv")   # -> ["csv/faq.csv"]
    store.search("受付時間", search_mode="hybrid", top_k=5)
    store.get_context("受付時間")             # joined page_content
    store.as_retriever(search_mode="keyword", top_k=3).invoke("E3010")
    store.remove_document("csv/faq.csv")

:class:`RagStore` is the face that joins the two sides: reads come from
:class:`app.retrieval.reader.StoreReader` (what the workflow, the page and the MCP server use, without
loading the write path), writes from :class:`app.ingestion.writer.StoreWriter`. The commands (ingest,
docs, watch, evaluate) use it.
"""

from __future__ import annotations

from app.ingestion.writer import StoreWriter
from app.retrieval.reader import NO_PRINCIPALS, StoreReader

__all__ = ["NO_PRINCIPALS", "RagStore"]


class RagStore(StoreReader, StoreWriter):
    """Documents in PostgreSQL + pgvector: add, remove, list, sync, search. Reads fail closed: they run as
    the ``principals`` given here or to the call (FULL_ACCESS: the owner's, on purpose) and raise TypeError
    when neither names any, never reading everything; writes (sync, add, remove) need none.

    ``RagStore(settings=None, embeddings=None, engine=None, principals=None)``: StoreReader's arguments; the
    reader hands the first three on to the writer (one engine, one model for both sides)."""
