"""The RAG workflow (§2.3, §4.9), the spec's face: the names the design card puts in graph.py
(``retrieve``, ``rerank_node``, ``generate_node``, ``build_rag_graph``, ``get_graph``) and the one entry
point of every mode, ``run_rag``, over :mod:`app.workflow` (the nodes in ``nodes`` and ``generate``, the
StateGraph in ``wiring``). What is built here is the run's real context: :func:`default_context` opens the
read side of the store (app.retrieval.reader), the cross-encoder, the GGUF LLM, the graph search and the
table path lazily, as the asker's principals; tests pass fakes instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from app.config import SEARCH_MODES, Settings, get_settings, validate_mode
from app.llm import get_llm
from app.reranker import load_reranker
from app.retrieval.reader import GLOBAL_SCOPE, StoreReader
from app.storage.scope import Scope
from app.workflow.generate import generate_node
from app.workflow.nodes import rerank_node, retrieve
from app.workflow.prompts import ABSTAIN_ANSWER, SPEC_TEMPLATE
from app.workflow.state import RAGContext
from app.workflow.wiring import build_rag_graph, check_question_fits, get_graph, run_rag

__all__ = [
    "RAGContext",
    "PROMPT_TEMPLATE",
    "NO_CONTEXT_ANSWER",
    "retrieve",
    "rerank_node",
    "generate_node",
    "build_rag_graph",
    "get_graph",
    "run_rag",
    "check_question_fits",
    "default_context",
    "table_answerer",
    "llm_token_counter",
]

PROMPT_TEMPLATE = SPEC_TEMPLATE  # the spec's prompt (§4.9), PROMPT_STYLE=spec
NO_CONTEXT_ANSWER = ABSTAIN_ANSWER


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
    scope: Scope | None = None,
) -> RAGContext:
    """The real dependencies: search over PostgreSQL (SEARCH_MODE or ``mode``), the cross-encoder, the GGUF LLM
    (not loaded with ``generate=False``: retrieval and re-ranking only), the stored chunks of one source
    (``read_source``, default the store's: TOP_SOURCE_CHARS), and for ``local``, ``global`` and ``auto`` the
    graph search. ValueError for an unknown mode (listing the valid ones). Everything is read as
    ``principals``, a required argument so that a forgotten one fails instead of reading everything:
    FULL_ACCESS is the owner's, on purpose (the command line without ``--as``), ``()`` reads nothing.
    ``scope`` (app.storage.scope.Scope) narrows every passage found to its folders, formats and dates, in
    the same SQL as the principals (the search, local search's chunks, the tables offered); global search
    answers from community reports, which span folders: ValueError for ``global`` with a scope."""
    s = settings or get_settings()
    mode = validate_mode(mode, s.retrieval.search_mode)
    scope = scope or None
    if scope and mode == "global":
        raise ValueError(GLOBAL_SCOPE)
    search_mode = mode if mode in SEARCH_MODES else "hybrid"
    store = StoreReader(s, principals=principals)
    if search is None:
        search = store.warm_up_search(search_mode).search_function(search_mode, scope=scope)
    if read_source is None:
        read_source = partial(store.source_chunks, vectors=True)  # as ``principals``: the store reads as them
    if reranker == "load":  # local and global read the graph, not re-ranked chunks: no cross-encoder, no warning
        reranker = load_reranker(s) if mode in ("auto", *SEARCH_MODES) else None
    if generate:
        llm = llm if llm is not None else get_llm(s)
    graph_search = None
    if mode in ("local", "global", "auto"):
        graph_search = store.graph_search(llm=llm, count_tokens=llm_token_counter(llm), scope=scope)
        if mode != "auto":
            graph_search.collection()  # GraphNotReadyError now, with what to run, rather than inside the workflow
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
        graph_search=graph_search,
        tables=table_answerer(s, store, llm, principals, scope)
        if generate and mode in ("auto", *SEARCH_MODES)
        else None,
        scope=scope,
    )


def table_answerer(settings: Settings, store: StoreReader, llm, principals: Sequence[str], scope: Scope | None = None):
    """The table path (app.tables.answer) reading as ``principals`` the tables whose document is within
    ``scope`` (None: any), or None with TABLE_ANSWERS=0 or no model."""
    from app.llm import generate
    from app.storage.table_rows import readable_tables, table_rows
    from app.tables.answer import TableAnswerer

    if not settings.tables.answers or llm is None:
        return None
    collection = settings.retrieval.collection_name
    return TableAnswerer(
        list_tables=lambda: readable_tables(store.engine, collection, principals, scope),
        load_rows=lambda table_id: table_rows(store.engine, collection, table_id, principals, scope),
        generate=lambda prompt: generate(prompt, llm),
        settings=settings.tables,
    )
