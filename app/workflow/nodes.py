"""The workflow's nodes (app.graph wires them, :mod:`app.workflow.wiring` builds the StateGraph): route,
table, retrieve, rerank, local and global; the generate node is :mod:`app.workflow.generate`'s. Each takes
its dependencies from the run's context (:class:`~app.workflow.state.RAGContext`: the search function,
re-ranker, LLM, graph search, table path), never loads them, and returns only the keys it sets plus its
wall time under ``timings``."""

from __future__ import annotations

import time

from app.errors import GraphNotReadyError
from app.graphrag.global_search import NO_DATA_ANSWER
from app.graphrag.local_search import NO_ENTITIES_ANSWER
from app.graphrag.router import Route, route
from app.reranker import rerank_documents
from app.versions.reading import split_read
from app.workflow.passages import for_json, passages
from app.workflow.state import RAGContext, RAGState


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
    ready = ctx.graph_search is not None and ctx.graph_search.is_ready() if ctx.mode == "auto" else True
    chosen = route(ctx.mode, state["query"], graph_ready=ready)
    if chosen.mode == "global" and ctx.mode == "auto" and ctx.scope:
        # global search answers from community reports, which span every folder: a scope needs passages
        chosen = Route("hybrid", f"{chosen.reason}, but the question is narrowed (--in, --format, --since)")
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
    if ctx.graph_search is None:
        raise GraphNotReadyError(f"{mode} search needs the graph; build the context with mode={mode!r}")
    return ctx.graph_search


def local_node(state: RAGState, runtime) -> dict:
    """Local graph search (seed 001): the question's entities, their relationships, reports and
    chunks within the token budget. The chunks become the citable contexts; the tables go before
    them. No entity: the answer says so, without an LLM call."""
    ctx: RAGContext = runtime.context
    start = time.perf_counter()
    result = require_graph(ctx, "local").local(state["query"])
    used = result.context
    used_ids = {
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
            "graph": used_ids,
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
        "graph": used_ids,
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
    sources = ctx.graph_search.sources_of(result.traceability.chunk_ids)
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
