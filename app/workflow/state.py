"""The workflow's state and run context (app.workflow.wiring): what the nodes pass on, and what they are given."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.documents import Document

from app.workflow.checks.quote import EVIDENCE_MIN_COVERAGE


def _merge(left: dict, right: dict) -> dict:
    """Reducer for ``timings``: each node adds its own entry."""
    return {**(left or {}), **(right or {})}


class RAGState(TypedDict, total=False):
    """State passed between nodes (§2.3)."""

    query: str
    documents: list[Document]
    reranked_documents: list[Document]
    hidden_versions: list[Document]  # past versions' chunks not given to the model: a chunk of their current
    # version among the candidates matches them (app.versions.reading.split_read); still sources, with notes
    contexts: list[str]
    prompt: str
    answer: str
    sources: list[str]  # the contexts' sources: the cited ones first
    numbered_sources: list[str]  # the source of each numbered context: citation [n] is numbered_sources[n - 1]
    cited_sources: list[str]  # the sources the answer cites (valid citations only); when the model cites
    # none, the context its text matches best (app.workflow.checks.coverage.best_matching_context), cited for it as [n]
    model_cited: bool  # the model itself cited a context
    abstained: str | None  # why the answer is (or counts as) an abstention: "no_context", "low_confidence",
    # "low_rerank", "absent_value", "low_coverage" (no LLM call), "model" (it said so, or said nothing), "unsupported" (a number no context states),
    # "unstated" (most of the words it adds are in no context: app.workflow.checks.support), "restated" (it
    # gives the question back), "incomplete" (it stops before its value), "off_topic" (its cited passage
    # shares too little with the question: app.workflow.checks.restated); None
    model_answer: str  # with "unsupported"/"unstated": what the model wrote instead
    unsupported: list[str]  # with "unsupported": the numbers no context states; with "unstated": those words
    warnings: list[
        str
    ]  # links the answer carries from a document, a copied instruction to an AI (app.workflow.checks.guard)
    evidence_shown: str  # the passage was shown instead of the model's answer, and why ("unsupported", "unstated",
    # "restated", "incomplete", "off_topic", "wrong_cell")
    quote: (
        dict | None
    )  # the context sentence the answer was taken from: number, text, source, line (app.workflow.evidence)
    confidence: float | None  # the best vector similarity among the candidates (None: keyword mode)
    reranked: bool
    mode: str  # the mode that answered (``auto`` resolved)
    route_reason: str  # why (``asked for``, or the rule auto applied)
    graph_context: str  # local: the entity, relationship and report tables given before the chunks
    graph: dict  # the graph used (--json's "graph"): local, the entity, relationship, report and chunk IDs and tokens per section; global, the reports considered
    traceability: dict  # global: report, document, chunk and entity IDs behind the answer
    map_results: list  # global: each batch's key points, tokens, seconds, attempts, error
    passages: list[dict]  # the sentence windows shown first, one per top source (app.workflow.passages)
    table: dict  # the table path answered (app.tables.answer): its table, the SQL run, the result rows
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
    on_passages: Callable[[list[dict]], None] | None = None  # called once retrieval ends, with the passages shown first
    # whether the asker has gone (a closed page, a cancelled tool call): asked between model calls and at each
    # generated piece, so the model passes on (app.errors.AnswerStoppedError); None: nobody can leave (the CLI)
    stopped: Callable[[], bool] | None = None
    prompt_style: str = "cited"  # or "spec" (§4.9's template)
    min_confidence: float = 0.0  # abstain without asking the LLM when the best similarity is lower
    min_rerank: float = 0.0  # the same for the cross-encoder's best score (0..1), when one re-ranked
    context_max_chars: int = 0  # >0: each context trimmed to the sentences around the query terms
    read_source: Callable[[str], list[dict]] | None = None  # a source's stored chunks, as the asker may read
    # them (app.store.RagStore.source_chunks); None: context [1] is its chunk alone
    top_source_chars: int = 240  # TOP_SOURCE_CHARS: the window of the top source's other chunks (0: off)
    evidence_chars: int = 800  # prompt_style "evidence": characters of evidence windows (app.workflow.evidence.windows)
    embeddings: Any | None = None  # prompt_style "evidence": scores windows (None: terms and rank only)
    evidence_min_coverage: float = EVIDENCE_MIN_COVERAGE  # "evidence": a failed answer shows its passage above this
    min_coverage: float = 0.0  # abstain without asking the LLM when fewer question tokens occur in the chunks
    min_support: float = (
        0.0  # withdraw an answer when less of what it adds is stated in the contexts (app.workflow.checks.support)
    )
    mode: str = "hybrid"  # what was asked for: a search mode, local, global or auto
    graph_search: Any | None = None  # app.graphrag.search.GraphSearch (local, global, auto)
    tables: Any | None = None  # app.tables.answer.TableAnswerer; None: no table path (TABLE_ANSWERS=0, no model)
    # the question's scope (app.storage.scope.Scope: folders, formats, a date), already applied by ``search``,
    # ``graph_search`` and ``tables`` in their SQL; kept here for what reports the answer. None: no scope
    scope: Any | None = None
