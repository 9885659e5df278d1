"""The evaluation's report (app.evaluation.run): the §4.11 summary with retrieval before and after
re-ranking, answers, abstention, latency per stage and the models used, and the per-question table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.config import Settings
from app.llm import model_name


def format_report(summary: dict, settings: Settings, models: dict, reranked: bool) -> str:
    """The §4.11 report, plus both retrieval figures, per-stage latency and the models used."""
    s = settings
    lines = [
        "=== Evaluation Report ===",
        "",
        f"Chunk={s.ingest.chunk_size} overlap={s.ingest.chunk_overlap}",
        f"Top-k={s.retrieval.search_k}",
        f"Re-rank={'ON' if reranked else 'OFF'} (top_k={s.retrieval.rerank_top_k})",
        f"Search: {models.get('mode', s.retrieval.search_mode)} (RRF k={s.retrieval.rrf_k}, weights vector={s.retrieval.hybrid_weights[0]:g} "
        f"keyword={s.retrieval.hybrid_weights[1]:g})"
        if models.get("mode", s.retrieval.search_mode) == "hybrid"
        else f"Search: {models.get('mode', s.retrieval.search_mode)}",
        f"Models: embed={models.get('embed')} reranker={models.get('reranker')} llm={models.get('llm')}",
        "",
        *retrieval_lines(summary, s, models.get("mode", s.retrieval.search_mode)),
        *(
            generation_lines(summary, s)
            if not str(models.get("llm", "")).startswith("none")
            else ["Faithfulness, Exact Match, Abstention: - (--no-generate)"]
        ),
        *overview_lines(summary),
        f"Latency: {summary['latency_mean']:.1f}s  (mean; p95 {summary['latency_p95']:.1f}s)",
    ]
    for stage, st in summary["stages"].items():
        lines.append(f"  {stage:<9} mean {st['mean']:.2f}s  p95 {st['p95']:.2f}s")
    if summary.get("llm_calls"):
        tps = summary["tokens_per_s"]
        lines.append(
            f"  LLM: prompt evaluation (to the first token) mean {summary['prompt_eval_mean']:.2f}s "
            f"(median {summary['first_token_median']:.2f}s), "
            f"generation mean {summary['generation_mean']:.2f}s"
            + (f", {tps:.1f} tokens/s" if tps else "")
            + f" ({summary['llm_calls']} calls)"
        )
    unanswerable = summary.get("unanswerable", 0)
    lines += [
        "",
        f"Questions evaluated: {summary['questions']}"
        + (
            f" ({summary['answerable']} answerable, {unanswerable} not answered by the documents)"
            if unanswerable
            else ""
        )
        + (f" (failed: {summary['failed']})" if summary["failed"] else ""),
    ]
    return "\n".join(lines)


def retrieval_lines(summary: dict, settings: Settings, mode: str) -> list[str]:
    """Retrieval@k lines (none without answerable questions; a dash for global search, which ranks
    community reports, not chunks)."""
    if not summary.get("answerable"):
        return []
    if mode == "global":
        return ["Retrieval@k: -  (global search reads community reports, not chunks)"]
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    if mode == "local":
        return [
            f"Retrieval (graph context): {pct(summary['retrieval_at_top_k'])}  (the chunks local search gave the "
            f"LLM, {summary.get('context_chunks_mean', 0):.1f} on average)"
        ]
    return [
        f"Retrieval@k: {pct(summary['retrieval_at_top_k'])}  (k={settings.retrieval.rerank_top_k}: the chunks given to the LLM)",
        f"Retrieval@{settings.retrieval.search_k}: {pct(summary['retrieval_at_search_k'])}  (before re-ranking)",
    ]


def overview_lines(summary: dict) -> list[str]:
    """Coverage and source recall of the overview questions (those with ``expected_sources``)."""
    if not summary.get("overview"):
        return []
    return [
        f"Coverage: {100 * summary['coverage']:.1f}%  (share of the expected keywords across the corpus that "
        f"the answers hold; {summary['overview']} overview questions)",
        f"Source recall: {100 * summary['source_recall']:.1f}%  (share of the expected files among the "
        "answers' sources)",
    ]


def generation_lines(summary: dict, settings: Settings) -> list[str]:
    """Faithfulness, exact match and abstention lines of the report."""
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    return [
        f"Faithfulness: {pct(summary['faithfulness'])}",
        f"Exact Match: {pct(summary['exact_match'])}",
        f"Keywords in the context given to the LLM: {pct(summary.get('context_keywords'))}, "
        f"{summary.get('context_chars_mean', 0):.0f} characters on average  (in the answer: the "
        "faithfulness; dates and numbers compared in one form)",
        f"First passage shown holds every expected keyword: {pct(summary.get('passage_hit'))}  (the answer: "
        f"{pct(summary['exact_match'])})",
        f"Evidence hit: {pct(summary.get('evidence_hit'))} of the questions whose source was found have a quote "
        f"holding every expected keyword ({pct(summary.get('quoted'))} have a quote)",
        f"Citations: {pct(summary.get('citation_rate'))} of the answers given cite a context themselves",
        f"Abstention: precision {pct(summary.get('abstention_precision'))}, recall "
        f"{pct(summary.get('abstention_recall'))}  ({summary.get('abstained', 0)} abstained; "
        f"{summary.get('unanswerable', 0)} questions not answered by the documents; "
        f"ABSTAIN_MIN_SIMILARITY={settings.answers.abstain_min_similarity:g}, PROMPT_STYLE={settings.answers.prompt_style})",
        f"Refused although answerable: {pct(summary.get('false_abstention_rate'))}; answered although the documents "
        f"do not say: {pct(summary.get('invented_rate'))}; the passage shown instead of a failed answer: "
        f"{summary.get('evidence_shown', 0)}",
    ]


ANSWER_PREVIEW = 80


def format_table(results: Sequence[dict]) -> str:
    """Two lines per question: hits, faithfulness (coverage for an overview question), latency,
    query and the mode that answered, expected → got sources; then the answer's first 80
    characters (``(abstained: why)`` when it abstained)."""
    rows = [f"{'#':>2}  {'@k':<3} {'@K':<3} {'faith':>5} {'time':>6}  query / expected → got"]
    for i, r in enumerate(results, 1):
        mark = lambda b: "✓" if b else "✗"  # noqa: E731
        answerable = r.get("answerable", True)
        got = ", ".join(r.get("cited_sources") or r.get("sources", [])) or (r.get("error") or "-")
        hit_k = mark(r["retrieval_hit"]) if answerable else "-"
        hit_search = mark(r["retrieval_hit_search_k"]) if answerable else "-"
        score = r.get("coverage", 0.0) if r.get("overview") else r["faithfulness"]
        faith = f"{score:>5.2f}" if answerable or r.get("overview") else f"{'-':>5}"
        expected = (
            ", ".join(r["expected_sources"]) if r.get("overview") else r["expected_source"] or "(not in the documents)"
        )
        mode = f" ({r['mode']})" if r.get("mode") else ""
        mode += f" [{scope_text(r['scope'])}]" if r.get("scope") else ""
        rows.append(
            f"{i:>2}  {hit_k:<3} {hit_search:<3} {faith} {r['latency']:>5.1f}s  {r['query']}{mode}  "
            f"[{expected} → {got}]"
        )
        preview = " ".join(str(r.get("answer", "")).split())[:ANSWER_PREVIEW]
        if preview:
            why = f"  (abstained: {r['abstained']})" if r.get("abstained") else ""
            rows.append(f"{'':>17}→ {preview}{why}")
        if r.get("quote"):
            rows.append(f"{'':>17}根拠: 「{' '.join(str(r['quote']).split())[:ANSWER_PREVIEW]}」")
    return "\n".join(rows)


def scope_text(scope: dict) -> str:
    """A question's scope as the report shows it: ``in docs/規程/; pdf, docx; since 2025-04-01``."""
    parts = [f"in {', '.join(scope['folders'])}"] if scope.get("folders") else []
    parts += [", ".join(scope["formats"])] if scope.get("formats") else []
    parts += [f"since {scope['since']}"] if scope.get("since") else []
    return "; ".join(parts)


def model_names(context: Any, settings: Settings) -> dict:
    """Which models the run used, for the report."""
    reranker = "none (retrieval order)" if context.reranker is None else settings.models.reranker_model
    llm = "none (--no-generate)" if context.llm is None else model_name(context.llm)
    return {"embed": settings.models.embed_model, "reranker": reranker, "llm": llm}
