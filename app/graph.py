"""The RAG workflow (§2.3, §4.9) as a LangGraph StateGraph, the one entry point of every mode:

    route ─┬─ hybrid | vector | keyword ─→ table ─┬─ (answered by computing over a table) → END
           │                                       └─ retrieve → rerank → generate → END
           ├─ local ─→ local (graph context) ─→ generate → END   (no entity: END)
           └─ global ─→ global (map-reduce over community reports) → END

``route`` takes the mode asked for, or with ``auto`` picks one (app.graphrag.router). Nodes take
their dependencies (search function, reranker, LLM, graph search) from the run's context
(:class:`RAGContext`, app.workflow.state), never load them; the generate node and its checks are in
app.workflow.generate; ``default_context`` builds the real ones lazily, tests
pass fakes. Each node returns only the keys it sets, plus its wall time under ``timings``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from app.config import SEARCH_MODES, Settings, get_settings, validate_mode
from app.errors import GraphNotReadyError, QuestionTooLongError
from app.graphrag.global_search import NO_DATA_ANSWER
from app.graphrag.local_search import NO_ENTITIES_ANSWER
from app.graphrag.router import route
from app.llm import get_llm
from app.models.resources import cached
from app.reranker import load_reranker, rerank_documents
from app.retrieval.reader import StoreReader
from app.versions.reading import split_read
from app.workflow.generate import generate_node
from app.workflow.passages import for_json, passages
from app.workflow.prompts import ABSTAIN_ANSWER, SPEC_TEMPLATE, build_prompt, system_prompt
from app.workflow.state import RAGContext, RAGState

PROMPT_TEMPLATE = SPEC_TEMPLATE  # the spec's prompt (§4.9), PROMPT_STYLE=spec
NO_CONTEXT_ANSWER = ABSTAIN_ANSWER


def retrieve(state: RAGState, runtime) -> dict:
    """Fetch SEARCH_K candidates for ``state['query']``."""
    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    docs = ctx.search(state["query"], ctx.search_k)
    return {"documents": list(docs), "timings": {"retrieve": time.perf_counter() - start}}


def rerank_node(state: RAGState, runtime) -> dict:
    """Keep the RERANK_TOP_K best candidates by cross-encoder score (retrieval order without one):
    app.reranker.rerank_documents, the one re-ranking step; a past version's chunk that its current
    version's chunk matches is hidden and its place given on (app.versions.reading.split_read)."""
    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    docs = state.get("documents") or []
    ranked = rerank_documents(state["query"], docs, ctx.reranker, len(docs))
    kept, hidden = split_read(state["query"], ranked, ctx.rerank_top_k)
    reranked = ctx.reranker is not None and bool(docs)
    shown = passages(state["query"], kept)
    if ctx.on_passages is not None:  # the page shows them before the model's first word
        ctx.on_passages(for_json(shown))
    return {
        "reranked_documents": kept,
        "hidden_versions": hidden,
        "reranked": reranked,
        "passages": for_json(shown),
        "timings": {"rerank": time.perf_counter() - start},
    }


def route_node(state: RAGState, runtime) -> dict:
    """Which mode answers: the one asked for, or with ``auto`` the router's choice (app.graphrag.router)."""
    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    ready = ctx.graph is not None and ctx.graph.is_ready() if ctx.mode == "auto" else True
    chosen = route(ctx.mode, state["query"], graph_ready=ready)
    return {"mode": chosen.mode, "route_reason": chosen.reason, "timings": {"route": time.perf_counter() - start}}


def after_route(state: RAGState) -> str:
    """The next node for the chosen mode: a search mode tries the table path first."""
    return state["mode"] if state["mode"] in ("local", "global") else "table"


def table_node(state: RAGState, runtime) -> dict:
    """A question about a table the asker may read, answered by computing over it (app.tables.answer):
    the answer written from the result, the rows used as sources, the SQL under ``table``. Nothing
    (the text path follows) without a table path, or when it does not answer."""
    ctx: RAGContext = runtime.context
    if ctx.tables is None:
        return {}
    start = time.perf_counter()
    found = ctx.tables.answer(state["query"])
    timings = {"table": time.perf_counter() - start}
    if found is None:
        return {"timings": timings}
    if ctx.on_token:
        ctx.on_token(found.answer)
    return {
        "documents": [],
        "reranked_documents": [],
        "answer": found.answer,
        "sources": found.sources,
        "cited_sources": found.sources,
        "contexts": [],
        "abstained": None if found.found else "absent_value",
        "table": {"table": found.table, "sql": found.sql, "rows": found.rows},
        "timings": timings,
    }


def after_table(state: RAGState) -> str:
    """End when the table path answered, else retrieve."""
    from langgraph.graph import END

    return END if state.get("table") else "retrieve"


def require_graph(ctx: RAGContext, mode: str):
    """The context's GraphSearch; GraphNotReadyError when the run was not given one."""
    if ctx.graph is None:
        raise GraphNotReadyError(f"{mode} search needs the graph; build the context with mode={mode!r}")
    return ctx.graph


def local_node(state: RAGState, runtime) -> dict:
    """Local graph search (seed 001): the question's entities, their relationships, reports and
    chunks within the token budget. The chunks become the citable contexts; the tables go before
    them. No entity: the answer says so, without an LLM call."""
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

    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    result = require_graph(ctx, "global").global_search(state["query"], stopped=ctx.stopped)
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
    graph.add_node("table", table_node)
    graph.add_node("retrieve", retrieve)
    graph.add_node("rerank", rerank_node)
    graph.add_node("generate", generate_node)
    graph.add_node("local", local_node)
    graph.add_node("global", global_node)
    graph.add_edge(START, "route")
    graph.add_conditional_edges("route", after_route, ["table", "local", "global"])
    graph.add_conditional_edges("table", after_table, ["retrieve", END])
    graph.add_edge("retrieve", "rerank")
    graph.add_edge("rerank", "generate")
    graph.add_conditional_edges("local", after_local, ["generate", END])
    graph.add_edge("generate", END)
    graph.add_edge("global", END)
    return graph.compile()


def get_graph():
    """Return the compiled graph, built once per process."""
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
    *,
    principals: Sequence[str],
    read_source=None,
) -> RAGContext:
    """The real dependencies: search over PostgreSQL (SEARCH_MODE or ``mode``), the cross-encoder, the GGUF LLM
    (not loaded with ``generate=False``: retrieval and re-ranking only), the stored chunks of one source
    (``read_source``, default the store's: TOP_SOURCE_CHARS), and for ``local``, ``global`` and ``auto`` the
    graph search. ValueError for an unknown mode (listing the valid ones). Everything is read as
    ``principals``, a required argument so that a forgotten one fails instead of reading everything:
    FULL_ACCESS is the owner's, on purpose (the command line without ``--as``), ``()`` reads nothing."""
    s = settings or get_settings()
    mode = validate_mode(mode, s.retrieval.search_mode)
    search_mode = mode if mode in SEARCH_MODES else "hybrid"
    store = StoreReader(s, principals=principals)
    if search is None:
        search = store.warm_up_search(search_mode).search_function(search_mode)
    if read_source is None:
        read_source = partial(store.source_chunks, vectors=True)  # as ``principals``: the store reads as them
    if reranker == "load":  # local and global read the graph, not re-ranked chunks: no cross-encoder, no warning
        reranker = load_reranker(s) if mode in ("auto", *SEARCH_MODES) else None
    if generate:
        llm = llm if llm is not None else get_llm(s)
    graph = None
    if mode in ("local", "global", "auto"):
        graph = store.graph_search(llm=llm, count_tokens=llm_token_counter(llm))
        if mode != "auto":
            graph.collection()  # GraphNotReadyError now, with what to run, rather than inside the workflow
    return RAGContext(
        search=search,
        llm=llm,
        reranker=reranker,
        search_k=s.retrieval.search_k,
        rerank_top_k=s.retrieval.rerank_top_k,
        count_tokens=llm_token_counter(llm),
        token_budget=s.llm.n_ctx - s.llm.max_tokens,
        prompt_style=s.answers.prompt_style,
        min_confidence=s.answers.abstain_min_similarity,
        min_rerank=s.answers.abstain_min_rerank,
        context_max_chars=s.answers.context_max_chars,
        read_source=read_source,
        top_source_chars=s.answers.top_source_chars,
        evidence_chars=s.answers.evidence_chars,
        embeddings=store.embeddings,  # scores sentence windows: the evidence style's, the top source's
        min_coverage=s.answers.abstain_min_coverage,
        min_support=s.answers.abstain_min_support,
        mode=mode,
        graph=graph,
        tables=table_answerer(s, store, llm, principals) if generate and mode in ("auto", *SEARCH_MODES) else None,
    )


def table_answerer(settings: Settings, store: StoreReader, llm, principals: Sequence[str]):
    """The table path (app.tables.answer) reading as ``principals``, or None with TABLE_ANSWERS=0 or no model."""
    from app.llm import generate
    from app.storage.table_rows import readable_tables, table_rows
    from app.tables.answer import TableAnswerer

    if not settings.tables.answers or llm is None:
        return None
    collection = settings.retrieval.collection_name
    return TableAnswerer(
        list_tables=lambda: readable_tables(store.engine, collection, principals),
        load_rows=lambda table_id: table_rows(store.engine, collection, table_id, principals),
        generate=lambda prompt: generate(prompt, llm),
        settings=settings.tables,
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
