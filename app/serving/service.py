"""The warm process behind the MCP server: the store, its connection pool, the embedding model,
the re-ranker and the LLM are loaded once and serve every request.

Nothing here imports the MCP SDK: :class:`RagService` is plain Python (the server in
``app.mcp.server`` maps its errors to tool errors), and the pure helpers below are tested
with exact values.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from typing_extensions import TypedDict

from app.config import SEARCH_MODES, Settings, validate_mode
from app.errors import StoreNotReadyError
from app.graph import default_context, run_rag
from app.llm import generate, with_options
from app.store import RagStore
from app.text.keywords import normalize_text, query_tokens
from app.users.identity import FULL, Identity, record

log = logging.getLogger(__name__)

MAX_K = 50  # the seed's search.maxK
DEFAULT_K = 10  # the seed's search.defaultK
SNIPPET_CHARS = 120
MAX_QUERY_CHARS = 2000
# keyword scores are BM25 sums (unbounded): score = bm25 / (bm25 + KEYWORD_SCORE_HALF) maps them to 0-1
KEYWORD_SCORE_HALF = 10.0
_LOCATION = re.compile(r":(p|r)(\d+)$")


class HitPayload(TypedDict, total=False):
    """Where a hit comes from; ``start``/``end`` locate the snippet in the chunk's text."""

    source: str
    document_id: str | None
    chunk_index: int | None
    start: int
    end: int
    page: int
    row: int


class SearchHit(TypedDict):
    """One ``search_rag`` result."""

    id: str
    score: float
    snippet: str
    payload: HitPayload


class AskResult(TypedDict):
    """The ``ask`` tool's answer."""

    answer: str
    quote: str | None
    mode: str
    sources: list[str]
    cited_sources: list[str]
    numbered_sources: list[str]  # citation [n] in the answer is numbered_sources[n - 1]
    abstained: str | None
    # abstained "unsupported"/"unstated": the numbers or words of the withdrawn answer that no document states
    withdrawn: list[str]
    warnings: list[str]
    keyword_only: str | None
    timings: dict[str, float]


class SyncResult(TypedDict):
    """The ``sync`` tool's report."""

    summary: str
    failures: list[str]


def validate_text(value: Any, name: str = "query") -> str:
    """A query or question: a non-empty string of at most MAX_QUERY_CHARS characters (stripped)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    if len(value) > MAX_QUERY_CHARS:
        raise ValueError(f"{name} is too long ({len(value)} characters; at most {MAX_QUERY_CHARS})")
    return value.strip()


def validate_search(query: Any, k: Any, mode: Any) -> tuple[str, int, str]:
    """The arguments of ``search_rag`` checked: ValueError with a one-line reason otherwise."""
    query = validate_text(query)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValueError(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
    return query, k, validate_mode(mode, default=None, allowed=SEARCH_MODES)


def normalized_score(doc: Document, mode: str, settings: Settings) -> float:
    """A 0-1 score, monotone with rank within one result list (documented in README):

    * vector: the cosine similarity, clipped to 0-1;
    * keyword: ``bm25 / (bm25 + 10)``;
    * hybrid: the RRF score divided by the best possible one (first in both lists), so 1.0 means
      ranked first by both searches.
    """
    raw = float(doc.metadata.get("relevance_score") or 0.0)
    if mode == "vector":
        value = raw
    elif mode == "keyword":
        value = raw / (raw + KEYWORD_SCORE_HALF) if raw > 0 else 0.0
    else:
        best = sum(w / (settings.retrieval.rrf_k + 1) for w in settings.retrieval.hybrid_weights)
        value = raw / best if best > 0 else 0.0
    return round(min(1.0, max(0.0, value)), 4)


def _normalized_with_map(text: str) -> tuple[str, list[int]]:
    """``normalize_text`` applied per character, with each output character's index in ``text``."""
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        norm = normalize_text(ch)
        out.append(norm)
        where.extend([i] * len(norm))
    return "".join(out), where


def snippet_span(text: str, query: str, width: int = SNIPPET_CHARS) -> tuple[int, int]:
    """``(start, end)`` of the ``width``-character window of ``text`` holding the most occurrences of
    the query's tokens (bigrams, words); the first window if none occurs. Offsets are into ``text``."""
    if len(text) <= width:
        return 0, len(text)
    norm, where = _normalized_with_map(text)
    hits: list[int] = []
    for token in query_tokens(query):
        start = norm.find(token)
        while start != -1:
            hits.append(where[start])
            start = norm.find(token, start + 1)
    if not hits:
        return 0, width
    hits.sort()
    best_start, best_count, j = hits[0], 0, 0
    for i, first in enumerate(hits):  # slide a window that starts at each hit
        while j < len(hits) and hits[j] < first + width:
            j += 1
        if j - i > best_count:
            best_start, best_count = first, j - i
    # centre the hits: start a little before the first one, never past the text's end
    last = max(h for h in hits if best_start <= h < best_start + width)
    start = max(0, min(best_start - (width - (last - best_start)) // 2, len(text) - width))
    return start, start + width


def payload(doc: Document, span: tuple[int, int]) -> HitPayload:
    """Where a hit comes from: source, document ID, page or row, chunk index, snippet offsets."""
    meta = doc.metadata
    source = str(meta.get("source", ""))
    out: HitPayload = {
        "source": source,
        "document_id": meta.get("doc_id"),
        "chunk_index": meta.get("chunk_index"),
        "start": span[0],
        "end": span[1],
    }
    match = _LOCATION.search(source)
    if match:
        out["page" if match.group(1) == "p" else "row"] = int(match.group(2))
    return out


def search_hit(doc: Document, query: str, mode: str, settings: Settings) -> SearchHit:
    """One ``search_rag`` result: ``{id, score, snippet, payload}``."""
    span = snippet_span(doc.page_content, query)
    return {
        "id": doc.id,
        "score": normalized_score(doc, mode, settings),
        "snippet": doc.page_content[span[0] : span[1]],
        "payload": payload(doc, span),
    }


def no_search(query: str, k: int) -> list[Document]:
    """The served context's own search: never used (each ask names its own, as who asks); refuses."""
    raise RuntimeError("a served question must name who asks (RagService.ask replaces the search)")


def documents_for_json(docs: Sequence[dict]) -> list[dict[str, Any]]:
    """Stored documents as JSON-friendly dicts (times as ISO 8601 strings, to the second)."""
    return [
        {
            key: (value.isoformat(timespec="seconds") if hasattr(value, "isoformat") else value)
            for key, value in d.items()
        }
        for d in docs
    ]


@dataclass
class RagService:
    """One store and one RAG context, loaded once; ``ask`` runs one question at a time (the
    in-process llama.cpp model is not re-entrant), searches run concurrently."""

    settings: Settings
    store: Any
    context_factory: Callable[[], Any]
    data_dir: Path | None = None
    started_at: float = field(default_factory=time.perf_counter)
    _context: Any = None
    _load_lock: threading.Lock = field(default_factory=threading.Lock)
    _llm_lock: threading.Lock = field(default_factory=threading.Lock)
    _sync_lock: threading.Lock = field(default_factory=threading.Lock)
    last_sync: Any = None  # the SyncReport of the last sync this process ran (the web page's documents list)
    surface: str = "mcp"  # what the audit log names: mcp or web

    @classmethod
    def create(cls, settings: Settings, data_dir: Path | None = None, preload_llm: bool = True) -> RagService:
        """Open the store and load the embedding model now; the LLM and re-ranker load in the
        background (``preload_llm``) or on the first ``ask``."""

        store = RagStore(settings)
        try:
            store.warm_up_search("hybrid")
        except StoreNotReadyError:  # nothing ingested yet: searches say so until a sync runs
            pass
        service = cls(
            settings=settings,
            store=store,
            data_dir=data_dir,
            # each ask names its own search, as who asks: the context's own never runs
            context_factory=lambda: default_context(settings, search=no_search),
        )
        if preload_llm:
            threading.Thread(target=service._load_context, name="load-llm", daemon=True).start()
        return service

    def _load_context(self) -> None:
        """Load the LLM and re-ranker in the background; a failure is logged, and the first ``ask``
        tries again and reports it."""
        try:
            self.context()
        except Exception as exc:
            log.warning("the LLM could not be loaded yet (%s); `ask` will try again", exc)

    def context(self):
        """The RAG context (LLM, re-ranker), loaded on first use (waits for a load under way)."""
        with self._load_lock:
            if self._context is None:
                self._context = self.context_factory()
            return self._context

    def search(self, query: Any, k: Any = DEFAULT_K, mode: Any = "hybrid", who: Identity = FULL) -> list[SearchHit]:
        """``search_rag``: the best ``k`` chunks ``who`` may read, with normalized scores, snippets and payloads."""
        query, k, mode = validate_search(query, k, mode)
        docs = self.store.search(query, search_mode=mode, top_k=k, principals=who.principals)
        hits = [search_hit(doc, query, mode, self.settings) for doc in docs]
        self.audit(who, "search", [h["payload"]["source"] for h in hits], query)
        return hits

    def audit(self, who: Identity, action: str, sources: list[str], question: str | None) -> None:
        """Record who was shown which sources (AUDIT_LOG); the surface is this service's."""
        if self.settings.access.audit:
            record(self.store.engine, self.settings, who, self.surface, action, sources, question)

    def ask(
        self, question: Any, mode: Any = "hybrid", on_token: Callable[[str], None] | None = None, who: Identity = FULL
    ) -> AskResult:
        """Answer with the LangGraph workflow from what ``who`` may read: answer, sources (cited first),
        abstention, timings; ``on_token`` gets each generated piece as it comes (the web page streams them)."""

        question, mode = validate_text(question, "question"), validate_mode(mode, default=None)
        self.store.warm_up()  # StoreNotReadyError (run make ingest) before anything reads a missing table
        ctx = self.context()
        if mode in SEARCH_MODES:
            ctx = replace(ctx, search=self.store.search_function(mode, who.principals), mode=mode)
        else:  # local, global, auto: the graph search with the context's LLM and its tokenizer
            ctx = replace(
                ctx,
                search=self.store.search_function("hybrid", who.principals),
                mode=mode,
                graph=self.store.graph_search(llm=ctx.llm, count_tokens=ctx.count_tokens, principals=who.principals),
            )
        if on_token is not None:
            ctx = replace(ctx, on_token=on_token)
        with self._llm_lock:
            state = run_rag(question, ctx)
        cited = list(state.get("cited_sources") or [])
        self.audit(who, "ask", cited + [s for s in state["sources"] if s not in cited], question)
        return {
            "answer": state["answer"],
            "quote": (state.get("quote") or {}).get("line"),
            "mode": state.get("mode") or mode,
            "sources": cited + [s for s in state["sources"] if s not in cited],
            "cited_sources": cited,
            "numbered_sources": list(state.get("numbered_sources") or []),
            "abstained": state.get("abstained") or None,
            "withdrawn": list(state.get("unsupported") or []) if state.get("abstained") else [],
            "warnings": list(state.get("warnings") or []),
            "keyword_only": self.store.vector_unavailable,
            "timings": {k: round(v, 3) for k, v in (state.get("timings") or {}).items()},
        }

    def complete(
        self, prompt: str, system: str | None = None, stop: tuple[str, ...] = ("\n",), max_tokens: int = 80
    ) -> str:
        """One short completion by the loaded LLM (the web page's follow-up rewrite), its own stop
        sequences and length, taking its turn with ``ask``."""
        llm = with_options(self.context().llm, stop=list(stop), max_tokens=max_tokens)
        with self._llm_lock:
            return generate(prompt, llm, system=system)

    def list_documents(self, who: Identity = FULL) -> list[dict[str, Any]]:
        """The stored documents ``who`` may read (their readers shown to an admin only)."""
        docs = documents_for_json(self.store.list_documents(who.principals))
        return docs if who.admin else [{k: v for k, v in d.items() if k != "readers"} for d in docs]

    def source_chunks(self, source: str, who: Identity = FULL) -> list[dict]:
        """The stored chunks of one source that ``who`` may read (the page's source view)."""
        return self.store.source_chunks(source, who.principals)

    def sync(self, data_dir: Path | None = None, graph: bool = True):
        """Re-ingest the data dir now (changed files only), one sync at a time: ``(plan, report)``
        (the signature of ``RagStore.sync``, so the file watcher can drive it); ``graph``: rebuild the
        graph at the end when anything changed."""
        with self._sync_lock:
            plan, self.last_sync = self.store.sync(
                data_dir or self.data_dir or self.settings.ingest.data_dir, graph=graph
            )
            return plan, self.last_sync

    def update_graph(self):
        """Rebuild the graph if it is out of date (the file watcher calls this once the folder is quiet)."""
        with self._sync_lock:
            return self.store.update_graph()

    def sync_summary(self) -> SyncResult:
        """The ``sync`` tool: the report as a dict."""
        _, report = self.sync()
        return {"summary": report.summary(), "failures": list(report.failures)}

    def uptime(self) -> float:
        """Seconds since the service was created."""
        return time.perf_counter() - self.started_at
