"""Text embeddings (§4.3): HuggingFaceEmbeddings over all-MiniLM-L6-v2, loaded lazily once."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from app.config import EMBED_MODEL_DEFAULT, Settings, get_settings
from app.models import resolve_embedding_model

if TYPE_CHECKING:
    from langchain_huggingface import HuggingFaceEmbeddings

# Texts per forward pass; larger batches gain little on 2 cores and cost memory.
BATCH_SIZE = 32


def get_embeddings(settings: Settings | None = None) -> "HuggingFaceEmbeddings":
    """Return the embedding model for these settings, loading it on first use (local files only)."""
    from app.resources import cached

    s = settings or get_settings()
    return cached("embeddings", (s.embed_model, str(s.models_dir)), lambda: _load_embeddings(s))


def _load_embeddings(s: Settings) -> "HuggingFaceEmbeddings":
    path = resolve_embedding_model(s.embed_model, s.models_dir, EMBED_MODEL_DEFAULT)
    from langchain_huggingface import HuggingFaceEmbeddings

    return HuggingFaceEmbeddings(
        model_name=path,
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs={"normalize_embeddings": True, "batch_size": BATCH_SIZE},
    )


def embed(texts: Sequence[str] | None) -> list[list[float]]:
    """Embed ``texts`` into 384-d vectors; ``[]`` for None or an empty list.

    Raises TypeError if an item is not a string.
    """
    if not texts:
        return []
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be str, got {type(text).__name__}")
    return get_embeddings().embed_documents(items)


class LazyEmbeddings:
    """An Embeddings stand-in that loads the model on first use.

    Lets a sync with nothing new to embed (or a keyword search) finish without
    importing torch or loading the model; other attributes pass through to the model.
    """

    def __init__(self, settings: Settings | None = None):
        self._settings = settings
        self._model = None

    def _load(self):
        if self._model is None:
            self._model = get_embeddings(self._settings)
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts (loads the model the first time)."""
        return self._load().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (loads the model the first time)."""
        return self._load().embed_query(text)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._load(), name)
