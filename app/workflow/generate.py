"""The generate node (app.graph): the abstention checks before the LLM, the prompt, the call (streamed) or
the answer read from a table's cell; what came back is checked by app.workflow.reply."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import Document

from app.errors import AnswerStoppedError
from app.llm import generate
from app.storage.scores import RERANK_SCORE_KEY as RERANK_SCORE
from app.workflow.checks.cells import absent_from_rows, cell_answer
from app.workflow.checks.citations import CitationFilter, cited_numbers, clean_citations, strip_echo
from app.workflow.checks.coverage import question_coverage
from app.workflow.checks.numbers import absent_values
from app.workflow.evidence.answer import refusal_cited, with_grammar
from app.workflow.evidence.windows import select_evidence
from app.workflow.long_source import top_source_window, with_window
from app.workflow.prompts import ABSTAIN_ANSWER, build_prompt, focus_context, system_prompt
from app.workflow.reply import Asked, answered
from app.workflow.state import RAGContext, RAGState

log = logging.getLogger(__name__)

MIN_CONTEXT_CHARS = 40


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


def confidence(documents: Sequence[Document]) -> float | None:
    """The best vector similarity (cosine) among the candidates; None when none has one (keyword search)."""
    scores = [d.metadata["vector_score"] for d in documents if d.metadata.get("vector_score") is not None]
    return max(scores) if scores else None


def best_rerank(documents: Sequence[Document]) -> float | None:
    """The cross-encoder's best score among the re-ranked chunks; None when none was re-ranked."""
    scores = [d.metadata[RERANK_SCORE] for d in documents if d.metadata.get(RERANK_SCORE) is not None]
    return max(float(s) for s in scores) if scores else None


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


def _sourced(docs: Sequence[Document]) -> list[tuple[str, str]]:
    """``(source, text)`` of each chunk (app.workflow.checks.cells reads table rows by their source)."""
    return [(str(d.metadata.get("source", "")), d.page_content) for d in docs]


def pre_llm_abstention(
    ctx: RAGContext,
    query: str,
    docs: Sequence[Document],
    conf: float | None,
    preamble: str = "",
    candidates: Sequence[Document] = (),
) -> str | None:
    """Why to abstain without calling the LLM (``no_context``, ``low_confidence``, ``low_rerank``,
    ``absent_value``, ``low_coverage``), or None. The coverage counts the question's tokens in the chunks (with their
    context lines) and in ``preamble`` (local search's graph tables, which the LLM reads too);
    ``absent_value``: the question names a code, version or number that none of ``candidates`` (all
    SEARCH_K of them; default ``docs``) holds, or, when the best chunk is a table row, that no candidate
    row of that table holds in a cell (app.workflow.checks.cells)."""
    if not docs:
        return "no_context"
    if conf is not None and conf < ctx.min_confidence:
        return "low_confidence"
    rerank = best_rerank(docs)
    if rerank is not None and rerank < ctx.min_rerank:
        return "low_rerank"
    extra = [preamble] if preamble else []
    if absent_values(query, [with_context_line(d) for d in (candidates or docs)] + extra):
        return "absent_value"
    if absent_from_rows(query, _sourced(docs), _sourced(candidates or docs)):
        return "absent_value"  # a value the asked table's key cells do not hold (issue 39)
    if question_coverage(query, [with_context_line(d) for d in docs] + extra) < ctx.min_coverage:
        return "low_coverage"
    return None


def reads_top_source(ctx: RAGContext, preamble: str) -> bool:
    """Whether context [1] gains the window of its source's other chunks (TOP_SOURCE_CHARS): the chunk
    styles with a way to read a source, not under local search's graph tables."""
    return (
        ctx.read_source is not None
        and ctx.top_source_chars > 0
        and ctx.prompt_style in ("cited", "spec")
        and not preamble
    )


def prepare_prompt(
    ctx: RAGContext, query: str, docs: Sequence[Document], preamble: str = ""
) -> tuple[str | None, str, list[str]]:
    """(system text, prompt, contexts): the contexts focused (CONTEXT_MAX_CHARS), the first followed by the
    best window of its source's other chunks (TOP_SOURCE_CHARS, app.workflow.long_source), and trimmed
    to the token budget; ``preamble`` (local search's graph tables) goes before them."""
    sources = unique_sources_per_doc(docs)
    system = system_prompt(ctx.prompt_style)

    def with_system(q: str, contexts: Sequence[str]) -> str:  # what the token budget must hold
        prompt = build_prompt(q, contexts, sources, style=ctx.prompt_style, preamble=preamble)
        return f"{system}\n{prompt}" if system else prompt

    texts = [focus_context(d.page_content, query, ctx.context_max_chars) for d in docs]
    if texts and reads_top_source(ctx, preamble):
        window = top_source_window(query, docs, ctx.read_source, ctx.top_source_chars, ctx.embeddings)
        texts[0] = with_window(texts[0], window)
    contexts = fit_contexts(query, texts, ctx.count_tokens, ctx.token_budget, with_system)
    return system, build_prompt(query, contexts, sources, style=ctx.prompt_style, preamble=preamble), contexts


def stop_if_gone(ctx: RAGContext) -> None:
    """:class:`~app.errors.AnswerStoppedError` once the run's ``stopped()`` says the asker has gone."""
    if ctx.stopped is not None and ctx.stopped():
        raise AnswerStoppedError("the asker went away")


def call_llm(
    ctx: RAGContext, prompt: str, system: str | None, n_contexts: int, start: float, llm: Any = None
) -> tuple[str, list[float]]:
    """The model's answer (a leading prompt echo dropped) and, in a list, the time of its first token.

    Streamed pieces reach ``ctx.on_token`` through a CitationFilter, so invalid
    citations and a prompt echo are never shown. ``llm``: the model to ask (default
    ``ctx.llm``; the evidence style passes a copy under a grammar).
    """
    shown, first = CitationFilter(n_contexts), []

    def on_token(piece: str) -> None:
        stop_if_gone(ctx)  # at each piece: the model passes on within one token
        if not first:
            first.append(time.perf_counter() - start)
        if ctx.on_token and (text := shown.feed(piece)):
            ctx.on_token(text)

    stop_if_gone(ctx)  # before the prompt is read (seconds on a CPU for a long one)
    raw = strip_echo(generate(prompt, llm=llm or ctx.llm, on_token=on_token, system=system))
    if ctx.on_token and (rest := shown.flush()):
        ctx.on_token(rest)
    return raw, first


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


def ask_the_cell(ctx: RAGContext, query: str, docs: Sequence[Document], preamble: str) -> Asked | None:
    """The answer read from a table row's cell when the question names the row and the column (``日本の3文字の国コードは？`` → ``JPN（alpha_3）[1]``; app.workflow.checks.cells), without
    asking the model; None otherwise. The prompt the model would have read is kept: the checks read it."""
    found = None if preamble else cell_answer(query, _sourced(docs))
    if found is None:
        return None
    number, column, value = found
    system, prompt, contexts = prepare_prompt(ctx, query, docs, preamble)
    if not contexts:
        return None
    answer = f"{value}（{column}）[{number}]"
    if ctx.on_token:
        ctx.on_token(answer)
    sources = unique_sources_per_doc(docs)[: len(contexts)]
    return Asked(contexts, sources, prompt, answer, [number], [], from_cell=True)


def ask_with_evidence(
    ctx: RAGContext, query: str, docs: Sequence[Document], candidates: Sequence[Document], start: float
) -> Asked | None:
    """The ``evidence`` style: sentence windows from all candidates (the re-ranked ones first) within
    EVIDENCE_CHARS as the numbered contexts, the cited style's instructions, the reply ``answer[n]`` or the
    refusal under a grammar (app.workflow.evidence)."""
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
    """:func:`answer_node`'s answer, its sources followed by those of the past versions hidden from the
    model (``hidden_versions``, app.versions.reading.split_read): they are shown, with their notes."""
    result = answer_node(state, runtime)
    shown = list(result.get("sources") or [])
    hidden = [s for s in unique_sources(state.get("hidden_versions") or []) if s not in shown]
    return {**result, "sources": shown + hidden} if hidden else result


def answer_node(state: RAGState, runtime) -> dict:
    """Ask the LLM with the re-ranked chunks (or, PROMPT_STYLE=evidence, evidence windows from all the
    candidates) as numbered contexts, or abstain; when the question names a table row among the chunks and
    its column, the answer is that cell, the LLM not called.

    Abstains (answer ``資料に記載がありません``, the closest sources) without an
    LLM call when there is no chunk, the best vector similarity is below
    ``min_confidence`` or too few question tokens occur in the chunks
    (``min_coverage``); after the call when the model says the documents do not
    hold the answer, states a number no chunk holds, or adds words most of which
    no chunk holds (``min_support``). Citations naming no context are dropped.
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
        asked = ask_the_cell(ctx, query, docs, preamble) or (
            ask_with_evidence(ctx, query, docs, candidates, start)
            if evidence
            else ask_with_chunks(ctx, query, docs, preamble, start)
        )
    if asked is None:
        return abstain(docs, reason or "no_context", conf, ctx.on_token, start)
    return answered(ctx, query, docs, asked, conf, start)


def unique_sources_per_doc(documents: Sequence[Document]) -> list[str]:
    """The source ID of each document, in order ("unknown" if missing), repeats kept (one per context)."""
    return [str(doc.metadata.get("source", "unknown")) for doc in documents]
