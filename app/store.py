"""The Python API (FinderLedge's operations on our PostgreSQL store).

    from app.permissions.principals import FULL_ACCESS
    from app.store import RagStore
    store = RagStore(principals=FULL_ACCESS)  # reads as the owner, on purpose; nothing loads until first use
    store.add_document("data/csv/faq.csv")   # -> ["csv/faq.csv"]
    store.search("受付時間", search_mode="hybrid", top_k=5)
    store.get_context("受付時間")             # joined page_content
    store.as_retriever(search_mode="keyword", top_k=3).invoke("E3010")
    store.remove_document("csv/faq.csv")

The CLIs (ingest, docs, watch, ask, evaluate) and the graph's retrieve node use
this same code.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from app import storage
from app.config import Settings, get_settings, validate_mode
from app.embeddings import LazyEmbeddings, embedding_size
from app.errors import DataSourceError, StoreNotReadyError, WriterBusyError, one_line
from app.graphrag.search import GraphSearch, graph_documents
from app.ingestion.documents import write_api_document
from app.ingestion.scan import resolve_file, scan
from app.ingestion.sync import sync, update_graph
from app.permissions.principals import FULL_ACCESS
from app.retrieval.search import SearchRetriever, current_first, hybrid_search, keyword_search, vector_search

log = logging.getLogger(__name__)
_POOL_LOCK = threading.Lock()
NO_PRINCIPALS = (
    "RagStore reads need principals: pass RagStore(principals=...) or principals= to the call "
    "(FULL_ACCESS for full access, on purpose)"
)


class RagStore:
    """Documents in PostgreSQL + pgvector: add, remove, list, sync, search. Reads fail closed: they run as
    the ``principals`` given here or to the call (FULL_ACCESS: the owner's, on purpose) and raise TypeError
    when neither names any, never reading everything; writes (sync, add, remove) need none."""

    def __init__(
        self,
        settings: Settings | None = None,
        embeddings: Any = None,
        engine: Any = None,
        principals: Sequence[str] | None = None,
    ):
        self.settings = settings or get_settings()
        # who reads through this store: None until named (reads then raise, never read everything);
        # FULL_ACCESS is the owner's, ``principals_for_user`` (app.users) a user's; each read may name its own
        self.principals: tuple[str, ...] | None = None if principals is None else tuple(principals)
        self._embeddings = embeddings
        self._engine = engine
        self._vectorstore = None
        self._schema_ready = False
        self._writing = 0
        self._writer: int | None = None  # the thread holding the writer lock (re-entrant for it only)
        self._thread_lock = threading.Lock()
        self._executor = None
        self.vector_unavailable: str | None = None  # why the last hybrid search used keywords only

    # --- resources (loaded once, on first use) ---------------------------------

    def warm_up(self) -> RagStore:
        """Connect and open the store for reading (the schema must exist: StoreNotReadyError
        otherwise); safe to call twice. The embedding model loads when first needed."""
        if self._vectorstore is None:
            storage.check_schema(self.engine, self.settings.retrieval.collection_name)
            self._vectorstore = storage.make_vectorstore(
                self.engine, self.embeddings, self.settings.retrieval.collection_name, create=False
            )
        return self

    @property
    def engine(self):
        """The database engine (connects on first use; creates nothing)."""
        if self._engine is None:
            self._engine = storage.get_engine(self.settings)
        return self._engine

    @property
    def embeddings(self):
        """The embedding model (a lazy wrapper: loads when something must be embedded)."""
        if self._embeddings is None:
            self._embeddings = LazyEmbeddings(self.settings)
        return self._embeddings

    @property
    def vectorstore(self):
        return self.warm_up()._vectorstore

    @contextmanager
    def writing(self, wait: bool = True) -> Iterator[RagStore]:
        """Hold the writer lock and make sure the schema exists (created or migrated once).

        Re-entrant for the thread holding it; another thread or process makes this one wait
        (one warning line) or, with ``wait=False``, raise WriterBusyError.
        """
        me = threading.get_ident()
        if self._writing and self._writer == me:
            self._writing += 1
            try:
                yield self
            finally:
                self._writing -= 1
            return
        if not self._thread_lock.acquire(blocking=wait):  # another thread of this process is writing
            raise WriterBusyError("another writer is running (in this process); try again when it is done")
        try:
            with storage.writer_lock(self.engine, wait=wait):
                self._writing, self._writer = 1, me
                try:
                    if not self._schema_ready:
                        self._vectorstore = storage.create_schema(
                            self.engine,
                            self.embeddings,
                            self.settings.retrieval.collection_name,
                            embedding_size(self.settings, self.embeddings),
                        )
                        self._schema_ready = True
                    yield self
                finally:
                    self._writing, self._writer = 0, None
        finally:
            self._thread_lock.release()

    # --- documents --------------------------------------------------------------

    def sync(
        self,
        data_dir: str | Path | None = None,
        *,
        dry_run: bool = False,
        progress: bool = False,
        allow_empty: bool = False,
        wait: bool = True,
        workers: int | None = None,
        graph: bool = True,
    ):
        """Make the store match ``data_dir`` (default DATA_DIR); returns (plan, report).

        Only documents that came from the data dir are updated or removed; those
        added with :meth:`add_document` of a ``Document`` are left alone. ``workers``
        (default INGEST_WORKERS) processes read, chunk and embed files in parallel. With ``graph``, the
        graph is rebuilt at the end when anything changed (GRAPH_EXTRACTOR not ``off``).
        """
        data_dir = Path(data_dir or self.settings.ingest.data_dir)
        if dry_run:  # a plan only: no lock, no schema, no writes
            return sync(
                data_dir,
                self.embeddings,
                self.engine,
                self.settings,
                dry_run=True,
                allow_empty=allow_empty,
                stored=self._all_documents(),
            )
        with self.writing(wait):
            return sync(
                data_dir,
                self.embeddings,
                self.engine,
                self.settings,
                progress=progress,
                allow_empty=allow_empty,
                workers=workers or self.settings.ingest.workers,
                graph=graph,
            )

    def update_graph(self, wait: bool = True):
        """Rebuild the graph if chunks changed since it was built (under the writer lock); the
        BuildReport, or None when it was current or GRAPH_EXTRACTOR is off."""
        if self.settings.graph.extractor == "off":
            return None
        with self.writing(wait):
            return update_graph(self.engine, self.settings, self.embeddings)

    def add_document(
        self, path_or_doc: str | Path | Document | Sequence[Document], data_dir: str | Path | None = None
    ) -> list[str]:
        """Add (or update) a file, a folder's files, or Documents; return the parent document IDs.

        Files must lie under ``data_dir/pdf`` or ``data_dir/csv`` (their ID is the
        path relative to ``data_dir``). A folder adds its files without removing
        others. Documents are stored as they are: their ``id`` (or a new UUID) is
        the parent ID, ``metadata['source']`` their source (default: the ID); a
        sync of the data dir never removes them.
        """
        if isinstance(path_or_doc, Document) or (
            isinstance(path_or_doc, (list, tuple)) and path_or_doc and all(isinstance(d, Document) for d in path_or_doc)
        ):
            docs = [path_or_doc] if isinstance(path_or_doc, Document) else list(path_or_doc)
            with self.writing():
                return [write_api_document(d, self.embeddings, self.engine, self.settings) for d in docs]
        data_dir = Path(data_dir or self.settings.ingest.data_dir)
        path = Path(path_or_doc)
        if path.is_dir():
            files = [f for f in scan(data_dir, self.settings)[0] if f.path.absolute().is_relative_to(path.absolute())]
        else:
            files = [resolve_file(path, data_dir, self.settings)]
        with self.writing():
            _, report = sync(data_dir, self.embeddings, self.engine, self.settings, files=files, remove_missing=False)
        if report.failures:
            raise DataSourceError("; ".join(report.failures))
        return [f.doc_id for f in files]

    def remove_document(self, doc_id_or_path: str | Path, wait: bool = True) -> int:
        """Remove a document (by ID, file path or file name) from every index; return chunks removed.

        DataSourceError if no stored document matches.
        """
        wanted = str(doc_id_or_path)
        with self.writing(wait):
            docs = self._all_documents()
            match = [d for d in docs if wanted in (d["doc_id"], d["source_file"])]
            if not match:
                try:
                    rel = Path(wanted).absolute().relative_to(Path(self.settings.ingest.data_dir).absolute()).as_posix()
                    match = [d for d in docs if d["doc_id"] == rel]
                except ValueError:
                    match = []
            if not match:
                raise DataSourceError(f"no stored document {wanted!r} (see `make docs`)")
            if len(match) > 1:
                raise DataSourceError(f"{wanted!r} is ambiguous: {', '.join(d['doc_id'] for d in match)}")
            return storage.delete_document(
                self.engine, self.settings.retrieval.collection_name, match[0]["doc_id"], match[0]["source_file"]
            )

    def list_documents(self, principals: Sequence[str] | None = None) -> list[dict]:
        """Stored documents ``principals`` (default: this store's) may read: doc_id, source_file, content_hash,
        settings_hash, chunks, ingested_at, origin, readers (``[]`` when nothing was ingested yet)."""
        who = self._who(principals)  # first: a forgotten argument raises on an empty store too
        if not self._schema_ready:  # not created by this store yet: read only what is complete
            try:
                storage.check_schema(self.engine, self.settings.retrieval.collection_name)
            except StoreNotReadyError:
                return []
        return storage.list_documents(self.engine, self.settings.retrieval.collection_name, who)

    def _all_documents(self) -> list[dict]:
        """Every stored document (the writer's view, whoever this store reads as)."""
        return self.list_documents(FULL_ACCESS)

    def _who(self, principals: Sequence[str] | None) -> tuple[str, ...]:
        """The principals of one call: those given, else this store's; TypeError when neither names any."""
        if principals is None and self.principals is None:
            raise TypeError(NO_PRINCIPALS)
        return self.principals if principals is None else tuple(principals)

    def source_chunks(self, source: str, principals: Sequence[str] | None = None, vectors: bool = False) -> list[dict]:
        """The stored chunks of one source (``faq.csv:r2``) that ``principals`` may read, in order (with
        ``vectors``, each with its stored embedding)."""
        return storage.source_chunks(
            self.engine, self.settings.retrieval.collection_name, source, self._who(principals), vectors=vectors
        )

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
    ) -> list[Document]:
        """Search; Documents carry ``metadata['relevance_score']``.

        Modes: ``hybrid``, ``vector``, ``keyword`` (chunks); ``local`` (the chunks naming the
        question's entities, in the graph's order; score 1/rank); ``global`` (community reports,
        best rank first; score: the report's rank 0-10); ``auto`` (one of them, by app.graphrag.router).
        ``k_vector`` / ``k_keyword`` set each search's candidates (default ``top_k``);
        ``vector_filter``: ``{field: value}`` pairs the vector hits' metadata must hold. Only chunks
        ``principals`` (default: this store's) may read are searched, in the same SQL.
        """
        who = self._who(principals)
        mode = validate_mode(search_mode, self.settings.retrieval.search_mode)
        top_k = top_k or self.settings.retrieval.search_k
        if not query or not query.strip():
            return []
        if mode in ("local", "global", "auto"):
            return self._graph_search(query, mode, top_k, who)
        keyword = partial(keyword_search, self.engine, self.settings.retrieval.collection_name, principals=who)
        if mode == "vector":
            hits = vector_search(self.vectorstore, query, k_vector or top_k, who, filter=vector_filter)
            return self._versions(query, hits[:top_k], who)
        if mode == "keyword":
            return self._versions(query, keyword(query, k_keyword or top_k)[:top_k], who)

        def vector_or_nothing(q: str) -> list[Document]:
            try:
                hits = vector_search(self.vectorstore, q, k_vector or top_k, who, filter=vector_filter)
            except Exception as exc:
                self._vector_failed(exc)
                return []
            self.vector_unavailable = None
            return hits

        # the two searches run at once: the query embedding and HNSW scan overlap the keyword query
        by_vector = self._pool().submit(vector_or_nothing, query)
        by_keyword = keyword(query, k_keyword or top_k)
        vector_hits = by_vector.result()
        fused = hybrid_search(
            vector_hits,
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
        return current_first(self.engine, self.settings.retrieval.collection_name, query, docs, who)

    def graph_search(self, llm: Any = None, count_tokens: Any = None, principals: Sequence[str] | None = None):
        """Local and global search over this store's graph as ``principals`` (default: this store's):
        only entities, relationships and reports all of whose sources they may read."""
        who = self._who(principals)
        return GraphSearch(self.settings, self.engine, self.embeddings, llm, count_tokens, principals=who)

    def _graph_search(self, query: str, mode: str, top_k: int, who: tuple[str, ...]) -> list[Document]:
        """:meth:`search` for ``local``, ``global`` and ``auto`` (which may answer with a chunk search)."""
        return graph_documents(
            self.graph_search(principals=who),
            query,
            mode,
            top_k,
            lambda q, m, k: self.search(q, search_mode=m, top_k=k, principals=who),
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

    def warm_up_search(self, mode: str | None = None) -> RagStore:
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

    def search_function(self, mode: str | None = None, principals: Sequence[str] | None = None):
        """``search(query, k)`` for the graph's retrieve node, as ``principals`` (default: this store's)."""
        who = self._who(principals)
        return lambda query, k: self.search(query, search_mode=mode, top_k=k, principals=who)
