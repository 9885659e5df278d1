"""The read side of the store: list, show and search, always as the caller's principals. The workflow,
the page and the MCP server read through :class:`StoreReader` and never load the write path
(app.ingestion); :class:`app.store.RagStore` joins it with the writer for the Python API and the commands.

Hybrid search is orchestrated here: the vector half runs in a small thread pool while the keyword query
runs, the two are fused (app.retrieval.search.hybrid_search), and past versions go below current ones.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from app import storage
from app.config import Settings, validate_mode
from app.errors import StoreNotReadyError, one_line
from app.formats.page_words import PageWords
from app.graphrag.search import GraphSearch, graph_documents
from app.retrieval.search import SearchRetriever, current_first, hybrid_search, keyword_search, vector_search
from app.storage.handle import StoreHandle
from app.storage.page_words import page_words
from app.storage.scope import Scope

log = logging.getLogger(__name__)
_POOL_LOCK = threading.Lock()
GLOBAL_SCOPE = (
    "global search answers from community reports, which span folders and formats: "
    "--in, --format and --since need another mode (hybrid, vector, keyword, local or auto)"
)
NO_PRINCIPALS = (
    "RagStore reads need principals: pass RagStore(principals=...) or principals= to the call "
    "(FULL_ACCESS for full access, on purpose)"
)


class StoreReader(StoreHandle):
    """Search and list the store as principals. Reads fail closed: they run as the ``principals`` given
    here or to the call (FULL_ACCESS: the owner's, on purpose) and raise TypeError when neither names any,
    never reading everything."""

    def __init__(
        self,
        settings: Settings | None = None,
        embeddings: Any = None,
        engine: Any = None,
        principals: Sequence[str] | None = None,
    ):
        super().__init__(settings, embeddings, engine)
        # who reads through this store: None until named (reads then raise, never read everything);
        # FULL_ACCESS is the owner's, ``principals_for_user`` (app.users) a user's; each read may name its own
        self.principals: tuple[str, ...] | None = None if principals is None else tuple(principals)
        self._executor = None
        self.vector_unavailable: str | None = None  # why the last hybrid search used keywords only

    def warm_up(self) -> StoreReader:
        """Connect and open the store for reading (the schema must exist: StoreNotReadyError
        otherwise); safe to call twice. The embedding model loads when first needed."""
        if self._vectorstore is None:
            self._vectorstore = storage.open_store(self.engine, self.embeddings, self.collection)
        return self

    @property
    def vectorstore(self):
        """The PGVector, opened for reading on first use."""
        return self.warm_up()._vectorstore

    def _who(self, principals: Sequence[str] | None) -> tuple[str, ...]:
        """The principals of one call: those given, else this store's; TypeError when neither names any."""
        if principals is None and self.principals is None:
            raise TypeError(NO_PRINCIPALS)
        return self.principals if principals is None else tuple(principals)

    # --- documents --------------------------------------------------------------

    def list_documents(self, principals: Sequence[str] | None = None) -> list[dict]:
        """Stored documents ``principals`` (default: this store's) may read: doc_id, source_file, content_hash,
        settings_hash, chunks, ingested_at, origin, readers (``[]`` when nothing was ingested yet)."""
        who = self._who(principals)  # first: a forgotten argument raises on an empty store too
        if not self._schema_ready:  # not created by this store yet: read only what is complete
            try:
                storage.check_schema(self.engine, self.collection)
            except StoreNotReadyError:
                return []
        return storage.list_documents(self.engine, self.collection, who)

    def source_chunks(self, source: str, principals: Sequence[str] | None = None, vectors: bool = False) -> list[dict]:
        """The stored chunks of one source (``faq.csv:r2``) that ``principals`` may read, in order (with
        ``vectors``, each with its stored embedding)."""
        return storage.source_chunks(self.engine, self.collection, source, self._who(principals), vectors=vectors)

    def page_words(self, doc_id: str, page: int, principals: Sequence[str] | None = None) -> PageWords | None:
        """The words the sync's OCR kept for page ``page`` of ``doc_id`` (app.storage.page_words), when
        ``principals`` may read the document; None otherwise, or when none are kept."""
        return page_words(self.engine, self.collection, doc_id, page, self._who(principals))

    # --- search -----------------------------------------------------------------

    def search(
        self,
        query: str,
        search_mode: str | None = None,
        top_k: int | None = None,
        k_vector: int | None = None,
        k_keyword: int | None = None,
        vector_filter: dict | None = None,
        principals: Sequence[str] | None = None,
        scope: Scope | None = None,
    ) -> list[Document]:
        """Search; Documents carry ``metadata['relevance_score']``.

        Modes: ``hybrid``, ``vector``, ``keyword`` (chunks); ``local`` (the chunks naming the
        question's entities, in the graph's order; score 1/rank); ``global`` (community reports,
        best rank first; score: the report's rank 0-10); ``auto`` (one of them, by app.graphrag.router).
        ``k_vector`` / ``k_keyword`` set each search's candidates (default ``top_k``);
        ``vector_filter``: ``{field: value}`` pairs the vector hits' metadata must hold. Only chunks
        ``principals`` (default: this store's) may read are searched, in the same SQL; ``scope``
        (app.storage.scope.Scope: folders, formats, a date) narrows them further in that SQL (the graph
        modes: the chunks local search returns; global search's reports are not narrowed).
        """
        who = self._who(principals)
        scope = scope or None
        mode = validate_mode(search_mode, self.settings.retrieval.search_mode)
        top_k = top_k or self.settings.retrieval.search_k
        if not query or not query.strip():
            return []
        if mode == "global" and scope:
            raise ValueError(GLOBAL_SCOPE)
        if mode in ("local", "global", "auto"):
            return self._graph_search(query, mode, top_k, who, scope)
        narrowed = {"scope": scope} if scope else {}  # no scope: the calls as before it existed
        if mode == "vector":
            hits = vector_search(self.vectorstore, query, k_vector or top_k, who, filter=vector_filter, **narrowed)
            return self._versions(query, hits[:top_k], who)
        keyword = partial(keyword_search, self.engine, self.collection, principals=who, **narrowed)
        if mode == "keyword":
            return self._versions(query, keyword(query, k_keyword or top_k)[:top_k], who)
        return self._hybrid(query, top_k, k_vector, k_keyword, vector_filter, who, keyword, scope)

    def _hybrid(self, query, top_k, k_vector, k_keyword, vector_filter, who, keyword, scope=None) -> list[Document]:
        """The vector and keyword searches at once (the query embedding and the HNSW scan overlap the
        keyword query), fused; keywords only, with one warning, when the vector half fails."""

        def vector_or_nothing(q: str) -> list[Document]:
            try:
                hits = vector_search(
                    self.vectorstore,
                    q,
                    k_vector or top_k,
                    who,
                    filter=vector_filter,
                    **({"scope": scope} if scope else {}),
                )
            except Exception as exc:
                self._vector_failed(exc)
                return []
            self.vector_unavailable = None
            return hits

        by_vector = self._pool().submit(vector_or_nothing, query)
        by_keyword = keyword(query, k_keyword or top_k)
        fused = hybrid_search(
            by_vector.result(),
            by_keyword,
            max(top_k, k_vector or 0, k_keyword or 0),
            rrf_k=self.settings.retrieval.rrf_k,
            weights=self.settings.retrieval.hybrid_weights,
        )
        return self._versions(query, fused[:top_k], who)

    def _versions(self, query: str, docs: list[Document], who: tuple[str, ...]) -> list[Document]:
        """The chunks with their versions (``superseded_by``, ``effective``), past versions below the
        current ones (app.retrieval.search.current_first)."""
        if not docs:
            return docs
        return current_first(self.engine, self.collection, query, docs, who)

    def graph_search(
        self,
        llm: Any = None,
        count_tokens: Any = None,
        principals: Sequence[str] | None = None,
        scope: Scope | None = None,
    ):
        """Local and global search over this store's graph as ``principals`` (default: this store's):
        only entities, relationships and reports all of whose sources they may read; with ``scope``, local
        search's chunks and the sources named are those within it (entities and reports are not narrowed)."""
        who = self._who(principals)
        return GraphSearch(
            self.settings, self.engine, self.embeddings, llm, count_tokens, principals=who, scope=scope or None
        )

    def _graph_search(
        self, query: str, mode: str, top_k: int, who: tuple[str, ...], scope: Scope | None = None
    ) -> list[Document]:
        """:meth:`search` for ``local``, ``global`` and ``auto`` (which may answer with a chunk search)."""
        return graph_documents(
            self.graph_search(principals=who, scope=scope),
            query,
            mode,
            top_k,
            lambda q, m, k: self.search(q, search_mode=m, top_k=k, principals=who, scope=scope),
        )

    def _pool(self):
        """A small thread pool for the vector half of hybrid searches (made on first use)."""
        with _POOL_LOCK:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="vector-search")
            return self._executor

    def _vector_failed(self, exc: BaseException) -> None:
        """Remember why vector search failed; warn on the first failure (one line), not on every query."""
        reason = one_line(exc)
        if self.vector_unavailable is None:
            log.warning("vector search is unavailable (%s); searching by keywords only", reason)
        self.vector_unavailable = reason

    def warm_up_search(self, mode: str | None = None) -> StoreReader:
        """Open the store and load what ``mode`` needs now, not inside the first query: the embedding
        model for vector and hybrid. In hybrid mode a model that cannot be loaded is a warning (searches
        fall back to keywords); in vector mode it is the error."""
        self.warm_up()
        mode = mode or self.settings.retrieval.search_mode
        if mode == "keyword":
            return self
        try:
            self.embeddings.embed_query("warm-up")
        except Exception as exc:
            if mode == "vector":
                raise
            self._vector_failed(exc)
        return self

    def get_context(self, query: str, separator: str = "\n\n", **search_kwargs: Any) -> str:
        """The ``page_content`` of the search results, joined by ``separator``."""
        return separator.join(d.page_content for d in self.search(query, **search_kwargs))

    def as_retriever(self, **search_kwargs: Any) -> BaseRetriever:
        """A LangChain ``BaseRetriever`` that runs :meth:`search` with ``search_kwargs``.

        The number of results is ``k`` (LangChain's name; ``top_k`` is accepted too), and
        ``retriever.invoke(query, k=3)`` overrides it for one call.
        """
        self._who(search_kwargs.get("principals"))  # TypeError now, not at the first invoke
        k = search_kwargs.pop("k", None)
        top_k = search_kwargs.pop("top_k", None) or k or self.settings.retrieval.search_k
        return SearchRetriever(search=lambda query, n: self.search(query, top_k=n, **search_kwargs), k=top_k)

    def search_function(
        self, mode: str | None = None, principals: Sequence[str] | None = None, scope: Scope | None = None
    ):
        """``search(query, k)`` for the graph's retrieve node, as ``principals`` (default: this store's),
        within ``scope`` when given (app.storage.scope.Scope)."""
        who = self._who(principals)
        return lambda query, k: self.search(query, search_mode=mode, top_k=k, principals=who, scope=scope)
