"""Choose hybrid fusion settings (RRF_K, HYBRID_WEIGHTS) on a question set, retrieval only.

Each question's vector and keyword candidate lists (SEARCH_K each) are fetched once;
every (RRF k, keyword weight) pair of the grid then fuses those same lists, exactly as
``hybrid`` search does, and is scored by Retrieval@RERANK_TOP_K (what the LLM gets
when no cross-encoder re-ranks), Retrieval@SEARCH_K (what a re-ranker gets) and the
mean reciprocal rank of the expected source (which breaks ties).

Questions with ``"expected_source": null`` (not answered by the documents) are left out
of the grid and used to calibrate ABSTAIN_MIN_SIMILARITY: the best vector similarity of
each question, answerable or not, and the threshold that separates them best.

Tune on a question set kept apart from the one you report (the sample corpus ships
``data/tuning_questions.json`` for this), then report with ``make evaluate``.

With ``--per-question`` each answerable question gets the rank of its expected source in the
vector and keyword lists (searched DIAGNOSIS_DEPTH deep) and in the hybrid ranking of the current
settings, and a verdict: what could bring it into the RERANK_TOP_K chunks (see :func:`verdict`).

    python -m app.tune [--questions data/tuning_questions.json] [--json out.json] [--per-question]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.documents import Document

from app.metrics import mean, retrieval_at_k
from app.reranker import rerank_documents
from app.retrieval.search import hybrid_search
from app.storage.scores import RERANK_SCORE_KEY
from app.workflow.checks.coverage import question_coverage
from app.workflow.generate import with_context_line

RRF_KS = (60, 30, 10, 5, 1)
DIAGNOSIS_DEPTH = 50
KEYWORD_WEIGHTS = (1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0)

Candidates = tuple[list[Document], list[Document]]


def fetch_candidates(store: Any, questions: Sequence[dict], k: int) -> list[Candidates]:
    """Each question's (vector, keyword) candidate lists, ``k`` each, best first."""
    return [
        (
            store.search(q["query"], search_mode="vector", top_k=k),
            store.search(q["query"], search_mode="keyword", top_k=k),
        )
        for q in questions
    ]


def fuse(candidates: Candidates, k: int, rrf_k: int, weights: Sequence[float]) -> list[Document]:
    """The hybrid ranking of one question's cached lists (the same function ``hybrid`` search uses)."""
    by_vector, by_keyword = candidates
    return hybrid_search(by_vector, by_keyword, k, rrf_k=rrf_k, weights=weights)


def source_rank(ranking: Sequence[Document], expected_source: str) -> int | None:
    """Rank (from 1) of the first chunk from ``expected_source``; None if absent."""
    for rank, doc in enumerate(ranking, start=1):
        if retrieval_at_k([doc], expected_source):
            return rank
    return None


def reciprocal_rank(ranking: Sequence[Document], expected_source: str) -> float:
    """1/rank of the first chunk from ``expected_source`` (rank from 1); 0.0 if absent."""
    rank = source_rank(ranking, expected_source)
    return 1.0 / rank if rank else 0.0


def truncate(candidates: Candidates, k: int) -> Candidates:
    """Both lists cut to their first ``k``."""
    return candidates[0][:k], candidates[1][:k]


def verdict(
    vector_rank: int | None, keyword_rank: int | None, hybrid_rank: int | None, top_k: int, search_k: int
) -> str:
    """Where a question's expected source stands, and what could bring it into the top ``top_k``:

    ``ok`` (hybrid rank <= top_k); ``rerank`` (among the search_k hybrid candidates: a re-ranker
    could lift it); ``fusion`` (in one list's first search_k, dropped by the fusion: other
    weights); ``deeper`` (only below search_k in a list: a larger SEARCH_K); ``missed`` (in
    neither list: the question shares no term with its page and the embedder does not bring
    it close: other words in the documents or the question, or a better model).
    """
    if hybrid_rank is not None and hybrid_rank <= top_k:
        return "ok"
    if hybrid_rank is not None and hybrid_rank <= search_k:
        return "rerank"
    ranks = [r for r in (vector_rank, keyword_rank) if r is not None]
    if any(r <= search_k for r in ranks):
        return "fusion"
    return "deeper" if ranks else "missed"


def diagnose(
    candidates: Sequence[Candidates],
    questions: Sequence[dict],
    top_k: int,
    search_k: int,
    rrf_k: int,
    weights: Sequence[float],
) -> list[dict]:
    """Per answerable question: the expected source's rank in each (deep) list and in the hybrid
    ranking of ``rrf_k`` / ``weights`` over the first ``search_k`` of each, and the verdict."""
    rows = []
    for (by_vector, by_keyword), q in zip(candidates, questions):
        source = q["expected_source"]
        fused = fuse(truncate((by_vector, by_keyword), search_k), search_k, rrf_k, weights)
        ranks = (source_rank(by_vector, source), source_rank(by_keyword, source), source_rank(fused, source))
        rows.append(
            {
                "query": q["query"],
                "expected_source": source,
                "vector_rank": ranks[0],
                "keyword_rank": ranks[1],
                "hybrid_rank": ranks[2],
                "verdict": verdict(*ranks, top_k=top_k, search_k=search_k),
            }
        )
    return rows


def format_diagnosis(rows: Sequence[dict], depth: int) -> str:
    """A line per question (ranks, '-' when absent) and the count of each verdict."""
    show = lambda r: "-" if r is None else str(r)  # noqa: E731
    lines = [
        f"\nPer question (ranks in the top {depth} of each list; hybrid: current settings):",
        f"{'vector':>6} {'keyword':>7} {'hybrid':>6}  {'verdict':<7} question → expected source",
    ]
    for r in rows:
        lines.append(
            f"{show(r['vector_rank']):>6} {show(r['keyword_rank']):>7} {show(r['hybrid_rank']):>6}  "
            f"{r['verdict']:<7} {r['query']} → {r['expected_source']}"
        )
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("ok", "rerank", "fusion", "deeper", "missed")}
    lines.append("Verdicts: " + ", ".join(f"{v} {n}" for v, n in counts.items()))
    return "\n".join(lines)


def hit_rates(
    rankings: Iterable[list[Document]], questions: Sequence[dict], top_k: int, search_k: int
) -> dict[str, float]:
    """Retrieval@top_k, Retrieval@search_k and the mean reciprocal rank (within search_k), 0–1."""
    scores = [
        (
            retrieval_at_k(r[:top_k], q["expected_source"]),
            retrieval_at_k(r[:search_k], q["expected_source"]),
            reciprocal_rank(r[:search_k], q["expected_source"]),
        )
        for r, q in zip(rankings, questions)
    ]
    return {key: mean([float(s[i]) for s in scores]) for i, key in enumerate(("at_top_k", "at_search_k", "mrr"))}


def grid(
    candidates: Sequence[Candidates],
    questions: Sequence[dict],
    top_k: int,
    search_k: int,
    rrf_ks: Sequence[int] = RRF_KS,
    keyword_weights: Sequence[float] = KEYWORD_WEIGHTS,
) -> list[dict]:
    """Score the single modes and every (rrf_k, keyword weight) pair; vector weight is 1.

    Rows come in grid order (defaults first: k=60, weights 1:1), each
    ``{mode, rrf_k, weights, at_top_k, at_search_k, mrr}``.
    """
    rows = [
        {
            "mode": mode,
            "rrf_k": None,
            "weights": None,
            **hit_rates((c[i] for c in candidates), questions, top_k, search_k),
        }
        for i, mode in enumerate(("vector", "keyword"))
    ]
    for rrf_k in rrf_ks:
        for weight in keyword_weights:
            fused = [fuse(c, search_k, rrf_k, (1.0, weight)) for c in candidates]
            rows.append(
                {
                    "mode": "hybrid",
                    "rrf_k": rrf_k,
                    "weights": (1.0, weight),
                    **hit_rates(fused, questions, top_k, search_k),
                }
            )
    return rows


def best_setting(rows: Sequence[dict]) -> dict:
    """The hybrid row with the highest Retrieval@top_k, then Retrieval@search_k, then mean
    reciprocal rank; ties go to the earlier grid row (closest to the defaults k=60, 1:1)."""
    hybrid = [r for r in rows if r["mode"] == "hybrid"]
    if not hybrid:
        raise ValueError("no hybrid rows to choose from")
    return max(hybrid, key=lambda r: (r["at_top_k"], r["at_search_k"], r["mrr"], -hybrid.index(r)))


def best_similarity(candidates: Candidates) -> float | None:
    """The highest vector similarity among one question's vector candidates (None if there are none)."""
    scores = [d.metadata["vector_score"] for d in candidates[0] if d.metadata.get("vector_score") is not None]
    return max(scores) if scores else None


def calibrate_abstention(answerable: Sequence[float], unanswerable: Sequence[float]) -> dict:
    """The highest ABSTAIN_MIN_SIMILARITY that refuses no answerable question, to two decimals.

    The best similarities of answerable and unanswerable questions overlap widely
    with multilingual-e5-small (README, "Abstention"), so no threshold separates
    them; this one only catches questions further from every chunk than any
    answerable one, and leaves the rest to the model's own abstention. Returns
    ``{threshold, kept, abstained, answerable, unanswerable}`` (counts).
    """
    import math

    threshold = math.floor(min(answerable) * 100) / 100 if answerable else 0.0
    return {
        "threshold": threshold,
        "kept": sum(v >= threshold for v in answerable),
        "abstained": sum(v < threshold for v in unanswerable),
        "answerable": len(answerable),
        "unanswerable": len(unanswerable),
    }


def format_calibration(
    result: dict, variable: str = "ABSTAIN_MIN_SIMILARITY", signal: str = "best vector similarity"
) -> str:
    """One line: the suggested threshold and what it does on these questions."""
    return (
        f"Abstention: {variable}={result['threshold']:g} keeps {result['kept']}/"
        f"{result['answerable']} answerable questions and abstains on {result['abstained']}/"
        f"{result['unanswerable']} unanswerable ones ({signal})"
    )


def rerank_scores(
    reranker: Any, candidates: Sequence[Candidates], questions: Sequence[dict], settings: Any
) -> list[float]:
    """Each question's best cross-encoder score over the SEARCH_K hybrid candidates the re-ranker
    reads (the signal ABSTAIN_MIN_RERANK is compared with)."""
    out = []
    for c, q in zip(candidates, questions):
        fused = fuse(c, settings.retrieval.search_k, settings.retrieval.rrf_k, settings.retrieval.hybrid_weights)
        ranked = rerank_documents(q["query"], fused, reranker, 1)
        out.append(float(ranked[0].metadata[RERANK_SCORE_KEY]) if ranked else 0.0)
    return out


def coverages(candidates: Sequence[Candidates], questions: Sequence[dict], settings: Any) -> list[float]:
    """Each question's token coverage of the RERANK_TOP_K chunks that hybrid search (current settings)
    gives the LLM without a cross-encoder, each chunk read with its context line as the generate node
    reads it (app.workflow.generate.with_context_line)."""
    return [
        question_coverage(
            q["query"],
            [
                with_context_line(d)
                for d in fuse(
                    c, settings.retrieval.search_k, settings.retrieval.rrf_k, settings.retrieval.hybrid_weights
                )[: settings.retrieval.rerank_top_k]
            ],
        )
        for c, q in zip(candidates, questions)
    ]


def format_grid(rows: Sequence[dict], top_k: int, search_k: int, chosen: dict) -> str:
    """A table: one line per setting, the chosen one marked."""
    pct = lambda x: f"{100 * x:5.1f}%"  # noqa: E731
    lines = [f"{'mode':<7} {'RRF_K':>5} {'HYBRID_WEIGHTS':>15}  {f'R@{top_k}':>6}  {f'R@{search_k}':>6}  {'MRR':>5}"]
    for r in rows:
        weights = f"{r['weights'][0]:g},{r['weights'][1]:g}" if r["weights"] else "-"
        mark = "  ← chosen" if r is chosen else ""
        lines.append(
            f"{r['mode']:<7} {r['rrf_k'] if r['rrf_k'] is not None else '-':>5} {weights:>15}  "
            f"{pct(r['at_top_k'])}  {pct(r['at_search_k'])}  {r['mrr']:.3f}{mark}"
        )
    lines.append(
        f"\nBest on these questions: RRF_K={chosen['rrf_k']} "
        f"HYBRID_WEIGHTS={chosen['weights'][0]:g},{chosen['weights'][1]:g}"
    )
    return "\n".join(lines)
