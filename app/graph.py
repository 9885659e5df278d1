"""The RAG workflow (§2.3, §4.9) as a LangGraph StateGraph, the one entry point of every mode:

    route ─┬─ hybrid | vector | keyword ─→ retrieve → rerank → generate → END
           ├─ local ─→ local (graph context) ─→ generate → END   (no entity: END)
           └─ global ─→ global (map-reduce over community reports) → END

``route`` takes the mode asked for, or with ``auto`` picks one (app.graphrag.router). Nodes take
their dependencies (search function, reranker, LLM, graph search) from the run's context
(:class:`RAGContext`), never load them; ``default_context`` builds the real ones lazily, tests
pass fakes. Each node returns only the keys it sets, plus its wall time under ``timings``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.documents import Document

from app.answers import (
    ABSTAIN_ANSWER,
    SPEC_TEMPLATE,
    CitationFilter,
    absent_values,
    best_matching_context,
    build_prompt,
    cited_numbers,
    clean_citations,
    focus_context,
    ordered_sources,
    question_coverage,
    says_not_in_documents,
    strip_echo,
    system_prompt,
    unsupported_numbers,
    without_citations,
)
from app.config import SEARCH_MODES, Settings, get_settings, validate_mode
from app.errors import QuestionTooLongError
from app.evidence.answer import refusal_cited, with_grammar
from app.evidence.quote import EVIDENCE_MIN_COVERAGE, evidence_instead, find_quote
from app.evidence.windows import select_evidence
from app.guard import answer_warnings
from app.reranker import load_reranker, rerank_documents

log = logging.getLogger(__name__)

PROMPT_TEMPLATE = SPEC_TEMPLATE  # the spec's prompt (§4.9), PROMPT_STYLE=spec
NO_CONTEXT_ANSWER = ABSTAIN_ANSWER
MIN_CONTEXT_CHARS = 40


def _merge(left: dict, right: dict) -> dict:
    """Reducer for ``timings``: each node adds its own entry."""
    return {**(left or {}), **(right or {})}


class RAGState(TypedDict, total=False):
    """State passed between nodes (§2.3)."""

    query: str
    documents: list[Document]
    reranked_documents: list[Document]
    contexts: list[str]
    prompt: str
    answer: str
    sources: list[str]  # the contexts' sources: the cited ones first
    cited_sources: list[str]  # the sources the answer cites (valid citations only); when the model cites
    # none, the context its text matches best (app.answers.best_matching_context), cited for it as [n]
    model_cited: bool  # the model itself cited a context
    abstained: str | None  # why the answer is (or counts as) an abstention: "no_context", "low_confidence",
    # "low_coverage" (no LLM call), "model" (it said so, or said nothing), "unsupported" (a number no context states); None
    model_answer: str  # with "unsupported": what the model wrote instead
    unsupported: list[str]  # with "unsupported": the numbers no context states
    warnings: list[str]  # links the answer carries from a document, a copied instruction to an AI (app.guard)
    evidence_shown: str  # the passage was shown instead of the model's answer, and why ("unsupported")
    quote: dict | None  # the context sentence the answer was taken from: number, text, source, line (app.evidence)
    confidence: float | None  # the best vector similarity among the candidates (None: keyword mode)
    reranked: bool
    mode: str  # the mode that answered (``auto`` resolved)
    route_reason: str  # why (``asked for``, or the rule auto applied)
    graph_context: str  # local: the entity, relationship and report tables given before the chunks
    graph: dict  # local: entity, relationship and report IDs used, tokens per section
    traceability: dict  # global: report, document, chunk and entity IDs behind the answer
    map_results: list  # global: each batch's key points, tokens, seconds, attempts, error
    timings: Annotated[dict[str, float], _merge]


@dataclass
class RAGContext:
    """What the nodes need; handed in at invoke time (``graph.invoke(state, context=ctx)``)."""

    search: Callable[[str, int], list[Document]]
    llm: Any  # None: no generation (retrieval and re-ranking only)
    reranker: Any | None = None  # a CrossEncoderReranker (app.reranker.get_reranker); None = keep order
    search_k: int = 10
    rerank_top_k: int = 3
    count_tokens: Callable[[str], int] | None = None
    token_budget: int | None = None  # prompt tokens allowed: n_ctx - max_tokens
    on_token: Callable[[str], None] | None = None  # streaming: called with each generated piece
    prompt_style: str = "cited"  # or "spec" (§4.9's template)
    min_confidence: float = 0.0  # abstain without asking the LLM when the best similarity is lower
    context_max_chars: int = 0  # >0: each context trimmed to the sentences around the query terms
    evidence_chars: int = 800  # prompt_style "evidence": characters of evidence windows (app.evidence.windows)
    embeddings: Any | None = None  # prompt_style "evidence": scores windows (None: terms and rank only)
    evidence_min_coverage: float = EVIDENCE_MIN_COVERAGE  # "evidence": a failed answer shows its passage above this
    min_coverage: float = 0.0  # abstain without asking the LLM when fewer question tokens occur in the chunks
    mode: str = "hybrid"  # what was asked for: a search mode, local, global or auto
    graph: Any | None = None  # app.graphrag.search.GraphSearch (local, global, auto)


def fit_contexts(
    query: str,
    contexts: Sequence[str],
    count_tokens: Callable[[str], int] | None,
    budget: int | None,
    make_prompt: Callable[[str, Sequence[str]], str] = lambda q, c: build_prompt(q, c, style="spec"),
) -> list[str]:
    """Trim the lowest-ranked contexts until the prompt fits ``budget`` tokens.

    The last context is shortened by a quarter at a time, and dropped once
    shorter than MIN_CONTEXT_CHARS. Without a counter or budget, nothing changes.
    """
    kept = list(contexts)
    if count_tokens is None or budget is None:
        return kept
    while kept and count_tokens(make_prompt(query, kept)) > budget:
        last = kept[-1]
        if len(last) > MIN_CONTEXT_CHARS:
            kept[-1] = last[: int(len(last) * 0.75)]
        else:
            kept.pop()
    return kept


def unique_sources(documents: Sequence[Document]) -> list[str]:
    """Source IDs of ``documents`` in order, without repeats ("unknown" if missing)."""
    seen: dict[str, None] = {}
    for doc in documents:
        seen.setdefault(str(doc.metadata.get("source", "unknown")), None)
    return list(seen)


def retrieve(state: RAGState, runtime) -> dict:
    """Fetch SEARCH_K candidates for ``state['query']``."""
    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    docs = ctx.search(state["query"], ctx.search_k)
    return {"documents": list(docs), "timings": {"retrieve": time.perf_counter() - start}}


def rerank_node(state: RAGState, runtime) -> dict:
    """Keep the RERANK_TOP_K best candidates by cross-encoder score (retrieval order without one):
    app.reranker.rerank_documents, the one re-ranking step."""
    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    docs = state.get("documents") or []
    kept = rerank_documents(state["query"], docs, ctx.reranker, ctx.rerank_top_k)
    reranked = ctx.reranker is not None and bool(docs)
    return {"reranked_documents": kept, "reranked": reranked, "timings": {"rerank": time.perf_counter() - start}}


def confidence(documents: Sequence[Document]) -> float | None:
    """The best vector similarity (cosine) among the candidates; None when none has one (keyword search)."""
    scores = [d.metadata["vector_score"] for d in documents if d.metadata.get("vector_score") is not None]
    return max(scores) if scores else None


def abstain(docs: Sequence[Document], reason: str, conf: float | None, on_token, start: float) -> dict:
    """The answer ``資料に記載がありません`` with the closest sources, without asking the LLM."""
    if on_token:
        on_token(ABSTAIN_ANSWER)
    return {
        "contexts": [],
        "answer": ABSTAIN_ANSWER,
        "sources": unique_sources(docs),
        "cited_sources": [],
        "abstained": reason,
        "confidence": conf,
        "timings": {"generate": time.perf_counter() - start},
    }


def with_context_line(doc: Document) -> str:
    """A chunk's text after its context line (file, heading path, a table's header): what the
    abstention checks read, so a row whose columns are named in English still covers a question."""
    context = str(doc.metadata.get("context") or "")
    return f"{context}\n{doc.page_content}" if context else doc.page_content


def pre_llm_abstention(
    ctx: RAGContext,
    query: str,
    docs: Sequence[Document],
    conf: float | None,
    preamble: str = "",
    candidates: Sequence[Document] = (),
) -> str | None:
    """Why to abstain without calling the LLM (``no_context``, ``low_confidence``, ``absent_value``,
    ``low_coverage``), or None. The coverage counts the question's tokens in the chunks (with their
    context lines) and in ``preamble`` (local search's graph tables, which the LLM reads too);
    ``absent_value``: the question names a code, version or number that none of ``candidates`` (all
    SEARCH_K of them; default ``docs``) holds."""
    if not docs:
        return "no_context"
    if conf is not None and conf < ctx.min_confidence:
        return "low_confidence"
    extra = [preamble] if preamble else []
    if absent_values(query, [with_context_line(d) for d in (candidates or docs)] + extra):
        return "absent_value"
    if question_coverage(query, [with_context_line(d) for d in docs] + extra) < ctx.min_coverage:
        return "low_coverage"
    return None


def prepare_prompt(
    ctx: RAGContext, query: str, docs: Sequence[Document], preamble: str = ""
) -> tuple[str | None, str, list[str]]:
    """(system text, prompt, contexts): the contexts focused (CONTEXT_MAX_CHARS) and trimmed to the token
    budget; ``preamble`` (local search's graph tables) goes before them."""
    sources = unique_sources_per_doc(docs)
    system = system_prompt(ctx.prompt_style)

    def with_system(q: str, contexts: Sequence[str]) -> str:  # what the token budget must hold
        prompt = build_prompt(q, contexts, sources, style=ctx.prompt_style, preamble=preamble)
        return f"{system}\n{prompt}" if system else prompt

    texts = [focus_context(d.page_content, query, ctx.context_max_chars) for d in docs]
    contexts = fit_contexts(query, texts, ctx.count_tokens, ctx.token_budget, with_system)
    return system, build_prompt(query, contexts, sources, style=ctx.prompt_style, preamble=preamble), contexts


def call_llm(
    ctx: RAGContext, prompt: str, system: str | None, n_contexts: int, start: float, llm: Any = None
) -> tuple[str, list[float]]:
    """The model's answer (a leading prompt echo dropped) and, in a list, the time of its first token.

    Streamed pieces reach ``ctx.on_token`` through a CitationFilter, so invalid
    citations and a prompt echo are never shown. ``llm``: the model to ask (default
    ``ctx.llm``; the evidence style passes a copy under a grammar).
    """
    from app.llm import generate

    shown, first = CitationFilter(n_contexts), []

    def on_token(piece: str) -> None:
        if not first:
            first.append(time.perf_counter() - start)
        if ctx.on_token and (text := shown.feed(piece)):
            ctx.on_token(text)

    raw = strip_echo(generate(prompt, llm=llm or ctx.llm, on_token=on_token, system=system))
    if ctx.on_token and (rest := shown.flush()):
        ctx.on_token(rest)
    return raw, first


@dataclass
class Asked:
    """What the model was given and what it answered: contexts with their sources, the prompt, the
    answer (citations cleaned) with the contexts it cites, the first token's time."""

    contexts: list[str]
    sources: list[str]
    prompt: str
    answer: str
    cited: list[int]
    first: list[float]


def ask_with_chunks(ctx: RAGContext, query: str, docs: Sequence[Document], preamble: str, start: float) -> Asked | None:
    """The ``cited``/``spec`` styles: the re-ranked chunks as numbered contexts, citations in the answer."""
    system, prompt, contexts = prepare_prompt(ctx, query, docs, preamble)
    if not contexts:
        return None
    raw, first = call_llm(ctx, prompt, system, len(contexts), start)
    sources = unique_sources_per_doc(docs)[: len(contexts)]
    return Asked(
        contexts, sources, prompt, clean_citations(raw, len(contexts)), cited_numbers(raw, len(contexts)), first
    )


def ask_with_evidence(
    ctx: RAGContext, query: str, docs: Sequence[Document], candidates: Sequence[Document], start: float
) -> Asked | None:
    """The ``evidence`` style: sentence windows from all candidates (the re-ranked ones first) within
    EVIDENCE_CHARS as the numbered contexts, the cited style's instructions, the reply ``answer[n]`` or the
    refusal under a grammar (app.evidence)."""
    ordered = list(docs) + [d for d in candidates if not any(d is k for k in docs)]
    windows = select_evidence(query, ordered, ctx.evidence_chars, ctx.embeddings)
    sources = [w.source for w in windows]
    system = system_prompt("cited")

    def with_system(q: str, contexts: Sequence[str]) -> str:
        return f"{system}\n{build_prompt(q, contexts, sources)}"

    contexts = fit_contexts(query, [w.text for w in windows], ctx.count_tokens, ctx.token_budget, with_system)
    if not contexts:
        return None
    sources, prompt = sources[: len(contexts)], build_prompt(query, contexts, sources)
    llm = with_grammar(ctx.llm, len(contexts))
    raw, first = call_llm(ctx, prompt, system, len(contexts), start, llm=llm)
    answer = refusal_cited(clean_citations(raw, len(contexts)))
    return Asked(contexts, sources, prompt, answer, cited_numbers(answer, len(contexts)), first)


def generate_node(state: RAGState, runtime) -> dict:
    """Ask the LLM with the re-ranked chunks (or, PROMPT_STYLE=evidence, evidence windows from all the
    candidates) as numbered contexts, or abstain.

    Abstains (answer ``資料に記載がありません``, the closest sources) without an
    LLM call when there is no chunk, the best vector similarity is below
    ``min_confidence`` or too few question tokens occur in the chunks
    (``min_coverage``); after the call when the model says the documents do not
    hold the answer or states a number no chunk holds. Citations naming no
    context are dropped.
    """
    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    docs = state.get("reranked_documents") or []
    query = state["query"]
    conf = confidence(state.get("documents") or docs)
    if ctx.llm is None:  # retrieval only (evaluate --no-generate)
        return {
            "contexts": [d.page_content for d in docs],
            "answer": "",
            "sources": unique_sources(docs),
            "cited_sources": [],
            "abstained": None,
            "confidence": conf,
            "timings": {"generate": 0.0},
        }
    preamble = state.get("graph_context") or ""
    candidates = state.get("documents") or docs
    reason = pre_llm_abstention(ctx, query, docs, conf, preamble, candidates)
    asked = None
    if reason is None:
        evidence = ctx.prompt_style == "evidence" and not preamble
        asked = (
            ask_with_evidence(ctx, query, docs, candidates, start)
            if evidence
            else ask_with_chunks(ctx, query, docs, preamble, start)
        )
    if asked is None:
        return abstain(docs, reason or "no_context", conf, ctx.on_token, start)
    return answered(ctx, query, docs, asked, conf, start)


def answered(ctx: RAGContext, query: str, docs: Sequence[Document], asked: Asked, conf, start: float) -> dict:
    """The state for the model's answer after the checks: an abstention (the model said so, or stated a
    number no context holds: its text kept as ``model_answer``), or the answer with its citations, sources,
    warnings and quote."""
    answer, cited, contexts = asked.answer, asked.cited, asked.contexts
    abstained = answer_check(answer, cited, [asked.prompt], query)
    base = {
        "contexts": contexts,
        "prompt": asked.prompt,
        "abstained": abstained,
        "confidence": conf,
        "timings": timings_of(start, asked.first),
    }
    shown = (
        evidence_instead(query, contexts, cited, ctx.evidence_min_coverage)
        if abstained == "unsupported" and ctx.prompt_style == "evidence"
        else None
    )
    if shown:  # the passage instead of an answer with a number no passage states
        number = int(shown.rsplit("[", 1)[1].rstrip("]"))
        return {
            **base,
            "abstained": None,
            "answer": shown,
            "evidence_shown": "unsupported",
            "model_answer": answer,
            "unsupported": unsupported_numbers(answer, [asked.prompt], query),
            "cited_sources": [asked.sources[number - 1]],
            "sources": [src for src, _ in ordered_sources(asked.sources, [number])],
        }
    if abstained == "unsupported":  # the model's text is kept for the record, not given as the answer
        return {
            **base,
            "answer": ABSTAIN_ANSWER,
            "model_answer": answer,
            "cited_sources": [],
            "unsupported": unsupported_numbers(answer, [asked.prompt], query),
            "sources": list(dict.fromkeys(asked.sources)),
        }
    matched = None if cited or abstained else best_matching_context(answer, contexts)
    if matched:  # the model cited nothing: the context its text was taken from is cited for it
        answer += f"[{matched}]"
        if ctx.on_token:
            ctx.on_token(f"[{matched}]")
    ordered = ordered_sources(asked.sources, cited or ([matched] if matched else []))
    warnings = answer_warnings(answer, query, contexts, asked.sources)
    return {
        **base,
        "answer": answer,
        "model_cited": bool(cited),
        "sources": [src for src, _ in ordered],
        "cited_sources": [src for src, c in ordered if c],
        "warnings": warnings,
        "quote": quote_of(answer, contexts, asked.sources, query, cited or ([matched] if matched else [])),
    }


def quote_of(
    answer: str, contexts: Sequence[str], sources: Sequence[str], query: str, cited: Sequence[int]
) -> dict | None:
    """The sentence of a context the answer was taken from (app.evidence), with its number and source;
    None for an abstention or when no sentence holds most of the answer."""
    if not answer or answer == ABSTAIN_ANSWER:
        return None
    quote = find_quote(answer, contexts, query, cited)
    if quote is None:
        return None
    return {
        "number": quote.number,
        "text": quote.text,
        "source": sources[quote.number - 1] if quote.number <= len(sources) else "unknown",
        "line": quote.line(),
    }


def timings_of(start: float, first: list[float]) -> dict[str, float]:
    """The generate node's timings: the whole node, and the first token when one came."""
    timings = {"generate": time.perf_counter() - start}
    if first:
        timings["first_token"] = first[0]
    return timings


def answer_check(answer: str, cited: Sequence[int], stated: Sequence[str], query: str) -> str | None:
    """Why the model's answer counts as an abstention, or None:

    ``model``: it is empty (or only citations), or says the documents do not hold the answer and cites nothing;
    ``unsupported``: it states a number found nowhere in ``stated`` (the prompt) nor in the question.
    """
    if not without_citations(answer).strip(" 。.、") or (says_not_in_documents(answer) and not cited):
        return "model"  # nothing but citations, or "資料に記載がありません"
    if unsupported_numbers(answer, stated, query):
        return "unsupported"
    return None


def unique_sources_per_doc(documents: Sequence[Document]) -> list[str]:
    """The source ID of each document, in order ("unknown" if missing), repeats kept (one per context)."""
    return [str(doc.metadata.get("source", "unknown")) for doc in documents]


def route_node(state: RAGState, runtime) -> dict:
    """Which mode answers: the one asked for, or with ``auto`` the router's choice (app.graphrag.router)."""
    from app.graphrag.router import route

    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    ready = ctx.graph is not None and ctx.graph.is_ready() if ctx.mode == "auto" else True
    chosen = route(ctx.mode, state["query"], graph_ready=ready)
    return {"mode": chosen.mode, "route_reason": chosen.reason, "timings": {"route": time.perf_counter() - start}}


def after_route(state: RAGState) -> str:
    """The next node for the chosen mode."""
    return state["mode"] if state["mode"] in ("local", "global") else "retrieve"


def require_graph(ctx: RAGContext, mode: str):
    """The context's GraphSearch; GraphNotReadyError when the run was not given one."""
    from app.errors import GraphNotReadyError

    if ctx.graph is None:
        raise GraphNotReadyError(f"{mode} search needs the graph; build the context with mode={mode!r}")
    return ctx.graph


def local_node(state: RAGState, runtime) -> dict:
    """Local graph search (seed 001): the question's entities, their relationships, reports and
    chunks within the token budget. The chunks become the citable contexts; the tables go before
    them. No entity: the answer says so, without an LLM call."""
    from app.graphrag.local_search import NO_ENTITIES_ANSWER

    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    result = require_graph(ctx, "local").local(state["query"])
    used = result.context
    graph = {
        "entity_ids": [e.id for e in used.entities_used],
        "entities": [e.title for e in used.entities_used],
        "relationship_ids": [r.id for r in used.relationships_used],
        "report_ids": [r.id for r in used.reports_used],
        "chunk_ids": [u.id for u in used.text_units_used],
        "section_tokens": used.section_tokens,
        "total_tokens": used.total_tokens,
    }
    timings = {"local": time.perf_counter() - start, **{f"local_{k}": v for k, v in result.timings.items()}}
    if not used.entities_used:
        if ctx.on_token:
            ctx.on_token(NO_ENTITIES_ANSWER)
        return {
            "documents": [],
            "reranked_documents": [],
            "graph": graph,
            "graph_context": "",
            "answer": NO_ENTITIES_ANSWER,
            "sources": [],
            "cited_sources": [],
            "abstained": "no_entities",
            "contexts": [],
            "timings": timings,
        }
    return {
        "documents": result.documents,
        "reranked_documents": result.documents,
        "graph": graph,
        "graph_context": used.context_text,
        "reranked": False,
        "timings": timings,
    }


def after_local(state: RAGState) -> str:
    """Generate from the graph context, or end when no entity was found."""
    from langgraph.graph import END

    return END if state.get("abstained") == "no_entities" else "generate"


def global_node(state: RAGState, runtime) -> dict:
    """Global graph search (seed 004): map-reduce over the community reports. Sources are the
    documents behind the reports the answer's key points came from."""
    from dataclasses import asdict

    from app.graphrag.global_search import NO_DATA_ANSWER

    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    result = require_graph(ctx, "global").global_search(state["query"])
    sources = ctx.graph.sources_of(result.traceability.chunk_ids)
    if ctx.on_token:
        ctx.on_token(result.response)
    abstained = "no_points" if result.response == NO_DATA_ANSWER else None
    return {
        "documents": [],
        "reranked_documents": [],
        "answer": result.response,
        "sources": sources,
        "cited_sources": [],
        "abstained": abstained,
        "contexts": [],
        "traceability": asdict(result.traceability),
        "map_results": [asdict(m) for m in result.map_results],
        "graph": {
            "reports_considered": result.reports_considered,
            "reports_left_out": result.reports_left_out,
            "total_tokens": result.total_tokens,
        },
        "timings": {"global": time.perf_counter() - start, **{f"global_{k}": v for k, v in result.timings.items()}},
    }


def build_rag_graph():
    """Build and compile a new StateGraph: route, then retrieve → rerank → generate, local → generate,
    or global (see the module docstring)."""
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(RAGState, context_schema=RAGContext)
    graph.add_node("route", route_node)
    graph.add_node("retrieve", retrieve)
    graph.add_node("rerank", rerank_node)
    graph.add_node("generate", generate_node)
    graph.add_node("local", local_node)
    graph.add_node("global", global_node)
    graph.add_edge(START, "route")
    graph.add_conditional_edges("route", after_route, ["retrieve", "local", "global"])
    graph.add_edge("retrieve", "rerank")
    graph.add_edge("rerank", "generate")
    graph.add_conditional_edges("local", after_local, ["generate", END])
    graph.add_edge("generate", END)
    graph.add_edge("global", END)
    return graph.compile()


def get_graph():
    """Return the compiled graph, built once per process."""
    from app.resources import cached

    return cached("graph", None, build_rag_graph)


def llm_token_counter(llm: Any) -> Callable[[str], int] | None:
    """Count tokens with the llama.cpp tokenizer of a LlamaCpp model (None for other LLMs)."""
    client = getattr(llm, "client", None)
    if client is None or not hasattr(client, "tokenize"):
        return None
    return lambda text: len(client.tokenize(text.encode("utf-8"), add_bos=True))


def default_context(
    settings: Settings | None = None,
    search=None,
    llm=None,
    reranker="load",
    mode: str | None = None,
    generate: bool = True,
) -> RAGContext:
    """The real dependencies: search over PostgreSQL (SEARCH_MODE or ``mode``), the cross-encoder, the GGUF LLM
    (not loaded with ``generate=False``: retrieval and re-ranking only), and for ``local``, ``global`` and
    ``auto`` the graph search. ValueError for an unknown mode (listing the valid ones)."""
    from app.llm import get_llm
    from app.store import RagStore

    s = settings or get_settings()
    mode = validate_mode(mode, s.search_mode)
    search_mode = mode if mode in SEARCH_MODES else "hybrid"
    store = RagStore(s)
    if search is None:
        search = store.warm_up_search(search_mode).search_function(search_mode)
    if reranker == "load":  # local and global read the graph, not re-ranked chunks: no cross-encoder, no warning
        reranker = load_reranker(s) if mode in ("auto", *SEARCH_MODES) else None
    if generate:
        llm = llm if llm is not None else get_llm(s)
    graph = None
    if mode in ("local", "global", "auto"):
        from app.graphrag.search import GraphSearch

        graph = GraphSearch(s, store.engine, embeddings=store.embeddings, llm=llm, count_tokens=llm_token_counter(llm))
        if mode != "auto":
            graph.collection()  # GraphNotReadyError now, with what to run, rather than inside the workflow
    return RAGContext(
        search=search,
        llm=llm,
        reranker=reranker,
        search_k=s.search_k,
        rerank_top_k=s.rerank_top_k,
        count_tokens=llm_token_counter(llm),
        token_budget=s.llm_n_ctx - s.llm_max_tokens,
        prompt_style=s.prompt_style,
        min_confidence=s.abstain_min_similarity,
        context_max_chars=s.context_max_chars,
        evidence_chars=s.evidence_chars,
        embeddings=store.embeddings if s.prompt_style == "evidence" else None,
        min_coverage=s.abstain_min_coverage,
        mode=mode,
        graph=graph,
    )


def check_question_fits(
    query: str, count_tokens: Callable[[str], int] | None, budget: int | None, style: str = "cited"
) -> None:
    """QuestionTooLongError if the prompt with no context at all is already over ``budget`` tokens."""
    if count_tokens is None or budget is None:
        return
    system = system_prompt(style)
    needed = count_tokens((f"{system}\n" if system else "") + build_prompt(query, [], style=style))
    if needed > budget:
        raise QuestionTooLongError(
            f"the question is too long: the prompt needs {needed} tokens without any document text, but only "
            f"{budget} fit (LLM_N_CTX - LLM_MAX_TOKENS); shorten the question or raise LLM_N_CTX"
        )


def run_rag(query: str, context: RAGContext, graph=None) -> RAGState:
    """Run the workflow for one question and return the final state.

    ValueError for a blank question, QuestionTooLongError for one that leaves no
    room for any document text in the model's context.
    """
    if not query or not query.strip():
        raise ValueError("query must be a non-empty string")
    check_question_fits(query.strip(), context.count_tokens, context.token_budget, context.prompt_style)
    return (graph or get_graph()).invoke({"query": query.strip()}, context=context)
