"""The warm process behind the MCP server: the store, its connection pool, the embedding model,
the re-ranker and the LLM are loaded once and serve every request.

Nothing here imports the MCP SDK: :class:`RagService` is plain Python (the server in
``app.mcp.server`` maps its errors to tool errors), and the pure helpers below are tested
with exact values.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from typing_extensions import TypedDict

from app.config import SEARCH_MODES, Settings, validate_mode
from app.errors import RagError, StoreNotReadyError
from app.graph import default_context, run_rag
from app.llm import generate, with_options
from app.retrieval.reader import StoreReader
from app.serving.answers import AnswerMemory
from app.serving.hits import SearchHit, search_hit
from app.serving.scoped import asker_context, checked_scope, narrowed
from app.serving.usage import AnswerClock, answer_usage
from app.storage.scope import Scope
from app.users.identity import Identity, record
from app.versions.preference import answer_version_notes, source_versions
from app.workflow.passages import for_json, passages
from app.workflow.withdrawals import status_line

log = logging.getLogger(__name__)

MAX_K = 50  # the seed's search.maxK
DEFAULT_K = 10  # the seed's search.defaultK
MAX_QUERY_CHARS = 2000


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
    # the line the page shows above an answer that is not the model's (app.workflow.withdrawals)
    status: str | None
    warnings: list[str]
    keyword_only: str | None
    timings: dict[str, float]
    passages: list[dict]  # the sentence windows shown first, one per top source (app.workflow.passages)
    # the sources of past versions: {source, doc_id, effective, superseded_by} (app.versions.preference)
    past_versions: list[dict]
    version_notes: list[str]  # which version is in force, where a past one was read
    # answered by computing over a table (app.tables): {table, sql, rows}; None on the text path
    table: dict | None
    answer_id: str | None  # names this answer for feedback (None: nothing is kept, ANSWER_CACHE=0 and FEEDBACK=0)
    cached_at: str | None  # an earlier answer given again: when it was written (ISO 8601); None: written now
    scope: dict | None  # the scope read within (app.storage.scope.Scope.as_dict); None: every document


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


def no_search(query: str, k: int) -> list[Document]:
    """The served context's own search: never used (each ask names its own, as who asks); refuses."""
    raise RuntimeError("a served question must name who asks (RagService.ask replaces the search)")


def no_read_source(source: str) -> list[dict]:
    """The served context's own source reader: never used (each ask names its own, as who asks); refuses."""
    raise RuntimeError("a served question must name who asks (RagService.ask replaces read_source)")


def asker(who: Any) -> tuple[str, ...]:
    """The principals of ``who``, an Identity; TypeError for anything else (None included), so a
    forgotten or mistyped asker never reads as anyone (app.users.identity.FULL is full access, on purpose)."""
    if not isinstance(who, Identity):
        raise TypeError(f"who must be an Identity (app.users.identity; FULL for full access), got {who!r}")
    return who.principals


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
    store: Any  # the read side (app.retrieval.reader.StoreReader): every read names who asks
    context_factory: Callable[[], Any]
    # the write side (app.ingestion.writer.StoreWriter), given by the command that starts a server, for the
    # ``sync`` tool and the file watcher; None: this service only reads
    writer: Any = None
    data_dir: Path | None = None
    started_at: float = field(default_factory=time.perf_counter)
    _context: Any = None
    _load_lock: threading.Lock = field(default_factory=threading.Lock)
    _llm_lock: Any = None  # LLM_CONCURRENCY answers at once (one for the in-process model)
    _sync_lock: threading.Lock = field(default_factory=threading.Lock)
    last_sync: Any = None  # the SyncReport of the last sync this process ran (the web page's documents list)
    surface: str = "mcp"  # what the audit log names: mcp or web
    memory: AnswerMemory | None = None  # kept answers (the cache, feedback); None: nothing is kept

    def __post_init__(self) -> None:
        if self._llm_lock is None:
            self._llm_lock = threading.BoundedSemaphore(self.concurrency)

    @property
    def concurrency(self) -> int:
        """Answers generated at once: LLM_CONCURRENCY with LLM_BASE_URL, else one."""
        return max(1, int(getattr(self.settings.llm, "concurrency", 1) or 1))

    @classmethod
    def create(
        cls,
        settings: Settings,
        data_dir: Path | None = None,
        preload_llm: bool = True,
        make_writer: Callable[..., Any] | None = None,
    ) -> RagService:
        """Open the store and load the embedding model now; the LLM and re-ranker load in the
        background (``preload_llm``) or on the first ``ask``. ``make_writer(settings, embeddings, engine)``
        (app.ingestion.writer.StoreWriter, given by the command that starts the server) makes the write side
        for the ``sync`` tool and the watcher, on the reader's engine and model; without it the service only
        reads."""

        store = StoreReader(settings)  # no principals of its own: every read below names who asks
        try:
            store.warm_up_search("hybrid")
        except StoreNotReadyError:  # nothing ingested yet: searches say so until a sync runs
            pass
        service = cls(
            settings=settings,
            store=store,
            writer=make_writer(settings, store.embeddings, store.engine) if make_writer else None,
            data_dir=data_dir,
            # each ask names its own search, as who asks: the context's own never runs and reads as nobody
            context_factory=lambda: default_context(
                settings, search=no_search, read_source=no_read_source, principals=()
            ),
            memory=AnswerMemory(store.engine, settings.retrieval.collection_name, settings),
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

    def search(
        self, query: Any, k: Any = DEFAULT_K, mode: Any = "hybrid", *, who: Identity, scope=None
    ) -> list[SearchHit]:
        """``search_rag``: the best ``k`` chunks ``who`` may read within ``scope`` (:meth:`check_scope`), with
        normalized scores, snippets and payloads."""
        principals = asker(who)
        query, k, mode = validate_search(query, k, mode)
        scope = self.check_scope(scope, who)
        docs = self.store.search(query, search_mode=mode, top_k=k, principals=principals, **narrowed(scope))
        hits = [search_hit(doc, query, mode, self.settings) for doc in docs]
        self.audit(who, "search", [h["payload"]["source"] for h in hits], query)
        return hits

    def check_scope(self, scope: Scope | None, who: Identity, mode: str | None = None) -> Scope | None:
        """``scope`` checked as ``who`` (app.serving.scoped.checked_scope); None when it narrows nothing."""
        return checked_scope(self.store, self.settings, scope, asker(who), mode)

    def audit(
        self, who: Identity, action: str, sources: list[str], question: str | None, answer: dict | None = None
    ) -> None:
        """Record who was shown which sources (AUDIT_LOG), with an answer's outcome and timings
        (app.serving.usage.answer_usage); the surface is this service's."""
        if self.settings.access.audit:
            record(self.store.engine, self.settings, who, self.surface, action, sources, question, answer)

    def _remembering(self) -> bool:
        """Whether answers are kept (for the cache or for feedback)."""
        memory = self.settings.memory
        return self.memory is not None and (memory.answer_cache or memory.feedback)

    def cached_answer(
        self, question: Any, mode: Any = "hybrid", *, who: Identity, fingerprint: str | None = None, scope=None
    ) -> AskResult | None:
        """The earlier answer to the same question (normalized) in the same mode and ``scope``, asked by
        someone with the same principals over the same documents, within ANSWER_CACHE_TTL_S; None when
        there is none (or ANSWER_CACHE=0). Audited like an answer."""
        principals = asker(who)
        question, mode = validate_text(question, "question"), validate_mode(mode, default=None)
        if self.memory is None or not self.settings.memory.answer_cache:
            return None
        start = time.perf_counter()
        hit = self.memory.find(question, mode, principals, fingerprint, **narrowed(scope))
        if hit is None:
            return None
        answer_id, result, created_at = hit
        earlier: AskResult = {**result}  # type: ignore[typeddict-item]
        earlier["answer_id"] = answer_id if self.settings.memory.feedback else None
        earlier["cached_at"] = created_at.isoformat(timespec="seconds")
        earlier["status"] = status_line(earlier.get("abstained"), earlier.get("withdrawn") or [])  # kept before it was
        earlier["timings"] = {"cache": round(time.perf_counter() - start, 3)}
        usage = answer_usage(earlier, cached_s=time.perf_counter() - start)
        self.audit(who, "ask", list(earlier.get("sources") or []), question, usage)
        return earlier

    def passages(self, question: Any, mode: Any = "hybrid", *, who: Identity, scope: Scope | None = None) -> list[dict]:
        """The passages a question would be shown first (retrieval order, no re-ranking, no LLM), within
        ``scope``: what a queued asker reads while waiting for the model."""
        principals = asker(who)
        question = validate_text(question, "question")
        search_mode = mode if mode in SEARCH_MODES else "hybrid"
        top_k = self.settings.retrieval.search_k
        docs = self.store.search(
            question, search_mode=search_mode, top_k=top_k, principals=principals, **narrowed(scope)
        )
        return for_json(passages(question, docs[: self.settings.retrieval.rerank_top_k]))

    def answer_record(self, answer_id: str) -> dict | None:
        """A kept answer by its ID (question, mode, sources, principals): what feedback is about; None
        when unknown, gone, or nothing is kept."""
        return self.memory.by_id(answer_id) if self.memory is not None else None

    def ask(
        self,
        question: Any,
        mode: Any = "hybrid",
        on_token: Callable[[str], None] | None = None,
        *,
        who: Identity,
        on_passages: Callable[[list[dict]], None] | None = None,
        stopped: Callable[[], bool] | None = None,
        scope: Scope | None = None,
    ) -> AskResult:
        """Answer with the LangGraph workflow from what ``who`` may read: answer, sources (cited first),
        abstention, the passages shown first, timings; ``on_passages`` gets the passages as soon as
        retrieval ends and ``on_token`` each generated piece as it comes (the web page streams both).
        The same question asked again over the same documents is answered from the kept answer.
        ``stopped()`` says whether the asker has gone: asked between model calls and at each generated
        piece, it ends the work with app.errors.AnswerStoppedError. ``scope`` narrows every read and the kept
        answers' key (app.serving.scoped); ValueError in one line where :meth:`check_scope` refuses it."""
        principals = asker(who)
        question, mode = validate_text(question, "question"), validate_mode(mode, default=None)
        scope = self.check_scope(scope, who, mode)
        clock = AnswerClock()
        self.store.warm_up()  # StoreNotReadyError (run make ingest) before anything reads a missing table
        # the documents as they are before answering: one read, for the lookup and for keeping the answer
        fingerprint = self.memory.fingerprint() if self._remembering() else ""
        earlier = self.cached_answer(question, mode, who=who, fingerprint=fingerprint, **narrowed(scope))
        if earlier is not None:
            if on_passages is not None:
                on_passages(list(earlier.get("passages") or []))
            return earlier
        ctx = asker_context(self.context(), self.store, self.settings, mode, principals, scope)
        # the asker's own callbacks (or none), timed for the audit (app.serving.usage)
        ctx = replace(ctx, on_token=clock.on_token(on_token), on_passages=clock.on_passages(on_passages))
        if stopped is not None:
            ctx = replace(ctx, stopped=stopped)
        with self._llm_lock:
            state = run_rag(question, ctx)
        result = self._result(state, mode)
        result["scope"] = scope.as_dict() if scope else None
        if self._remembering():
            result["answer_id"] = self._keep(question, mode, who, fingerprint, result, scope)
        self.audit(who, "ask", list(result["sources"]), question, answer_usage(result, clock))
        return result

    def _keep(
        self, question: str, mode: str, who: Identity, fingerprint: str, result: AskResult, scope=None
    ) -> str | None:
        """Keep an answer in PostgreSQL, under its ``scope``; its ID when feedback is on (None otherwise)."""
        kept = {k: v for k, v in result.items() if k not in ("answer_id", "cached_at", "timings")}
        answer_id = self.memory.keep(question, mode, who.principals, fingerprint, kept, **narrowed(scope))
        return answer_id if self.settings.memory.feedback else None

    def _result(self, state: dict, mode: str) -> AskResult:
        """The workflow's final state as the ``ask`` result."""
        cited = list(state.get("cited_sources") or [])
        return {
            "answer": state["answer"],
            "quote": (state.get("quote") or {}).get("line"),
            "mode": state.get("mode") or mode,
            "sources": cited + [s for s in state["sources"] if s not in cited],
            "cited_sources": cited,
            "numbered_sources": list(state.get("numbered_sources") or []),
            "abstained": state.get("abstained") or None,
            "withdrawn": list(state.get("unsupported") or []) if state.get("abstained") else [],
            "status": status_line(
                state.get("abstained"), list(state.get("unsupported") or []) if state.get("abstained") else []
            ),
            "warnings": list(state.get("warnings") or []),
            "keyword_only": self.store.vector_unavailable,
            "timings": {k: round(v, 3) for k, v in (state.get("timings") or {}).items()},
            "passages": list(state.get("passages") or []),
            "past_versions": [v for v in source_versions(state) if v.get("superseded_by")],
            "version_notes": [] if state.get("abstained") else answer_version_notes(state),
            "table": state.get("table") or None,
            "answer_id": None,
            "cached_at": None,
            "scope": None,
        }

    def complete(
        self, prompt: str, system: str | None = None, stop: tuple[str, ...] = ("\n",), max_tokens: int = 80
    ) -> str:
        """One short completion by the loaded LLM (the web page's follow-up rewrite), its own stop
        sequences and length, taking its turn with ``ask``."""
        llm = with_options(self.context().llm, stop=list(stop), max_tokens=max_tokens)
        with self._llm_lock:
            return generate(prompt, llm, system=system)

    def list_documents(self, who: Identity) -> list[dict[str, Any]]:
        """The stored documents ``who`` may read (their readers shown to an admin only)."""
        docs = documents_for_json(self.store.list_documents(asker(who)))
        return docs if who.admin else [{k: v for k, v in d.items() if k != "readers"} for d in docs]

    def source_chunks(self, source: str, who: Identity) -> list[dict]:
        """The stored chunks of one source that ``who`` may read (the page's source view)."""
        return self.store.source_chunks(source, asker(who))

    def sync(self, data_dir: Path | None = None, graph: bool = True):
        """Re-ingest the data dir now (changed files only), one sync at a time: ``(plan, report)``
        (the signature of ``RagStore.sync``, so the file watcher can drive it); ``graph``: rebuild the
        graph at the end when anything changed. RagError when this service was made without a writer."""
        with self._sync_lock:
            plan, self.last_sync = self._writer().sync(
                data_dir or self.data_dir or self.settings.ingest.data_dir, graph=graph
            )
            return plan, self.last_sync

    def update_graph(self):
        """Rebuild the graph if it is out of date (the file watcher calls this once the folder is quiet)."""
        with self._sync_lock:
            return self._writer().update_graph()

    def _writer(self):
        """The write side this service was given; RagError when it only reads."""
        if self.writer is None:
            raise RagError("this server only reads: it was started without a writer, so it cannot sync")
        return self.writer

    def sync_summary(self) -> SyncResult:
        """The ``sync`` tool: the report as a dict."""
        _, report = self.sync()
        return {"summary": report.summary(), "failures": list(report.failures)}

    def uptime(self) -> float:
        """Seconds since the service was created."""
        return time.perf_counter() - self.started_at
