"""What the read side and the write side of the store share: the settings, the engine and the embedding
model, each made on first use and never twice (app.retrieval.reader, app.ingestion.writer; app.store
joins the two)."""

from __future__ import annotations

from typing import Any

from app.config import Settings, get_settings
from app.embeddings import LazyEmbeddings
from app.storage.engine import get_engine


class StoreHandle:
    """The settings, the database engine and the embedding model of one store; nothing connects or
    loads until first used."""

    def __init__(self, settings: Settings | None = None, embeddings: Any = None, engine: Any = None):
        self.settings = settings or get_settings()
        self._embeddings = embeddings
        self._engine = engine
        self._vectorstore = None  # the PGVector, once opened for reading or created by a writer
        self._schema_ready = False  # created or migrated by this store's writer

    @property
    def engine(self):
        """The database engine (connects on first use; creates nothing)."""
        if self._engine is None:
            self._engine = get_engine(self.settings)
        return self._engine

    @property
    def embeddings(self):
        """The embedding model (a lazy wrapper: loads when something must be embedded)."""
        if self._embeddings is None:
            self._embeddings = LazyEmbeddings(self.settings)
        return self._embeddings

    @property
    def collection(self) -> str:
        """The collection this store reads and writes (COLLECTION_NAME)."""
        return self.settings.retrieval.collection_name
