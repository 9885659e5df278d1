"""Evaluation (§4.11, §14.3): run each question through the same workflow as ``ask`` and
score Retrieval@k (before and after re-ranking), faithfulness, exact match and latency."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app.errors import DataSourceError
from app.graph import get_graph, run_rag
from app.metrics import (
    coverage,
    exact_match,
    faithfulness,
    found_keywords,
    mean,
    measure_latency,
    percentile,
    retrieval_at_k,
    source_recall,
)
from app.storage.scope import Scope, parse_scope

STAGES = ("retrieve", "rerank", "local", "global", "generate")  # the workflow's nodes (route costs microseconds)
REQUIRED_KEYS = ("query", "expected_source", "expected_keywords")  # expected_sources may stand for expected_source


def load_questions(path: str | Path = "data/eval_questions.json") -> list[dict]:
    """Read and validate the question set: a JSON list of {query, expected_source, expected_keywords}.

    ``"expected_source": null`` marks a question the documents do not answer: the
    right answer is to abstain (``資料に記載がありません``). An overview question has
    ``"expected_sources"`` (the files its answer draws on) instead, and is scored by coverage.
    """
    path = Path(path)
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataSourceError(f"question file not found: {path}") from None
    except json.JSONDecodeError as exc:
        raise DataSourceError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(items, list) or not items:
        raise DataSourceError(f"{path}: expected a non-empty JSON list of questions")
    for i, item in enumerate(items):
        missing = [
            k
            for k in REQUIRED_KEYS
            if not isinstance(item, dict)
            or (k not in item and not (k == "expected_source" and "expected_sources" in item))
        ]
        if missing:
            raise DataSourceError(f"{path}: question {i + 1} lacks {', '.join(missing)}")
        if not isinstance(item["query"], str) or not item["query"].strip():
            raise DataSourceError(f"{path}: question {i + 1}: query must be a non-empty string")
        keywords = item["expected_keywords"]
        if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
            raise DataSourceError(f"{path}: question {i + 1}: expected_keywords must be a list of strings")
        if "expected_sources" in item:
            if not isinstance(item["expected_sources"], list) or not all(
                isinstance(f, str) for f in item["expected_sources"]
            ):
                raise DataSourceError(f"{path}: question {i + 1}: expected_sources must be a list of file names")
            continue
        if item["expected_source"] is not None and not isinstance(item["expected_source"], str):
            raise DataSourceError(f"{path}: question {i + 1}: expected_source must be a source ID or null")
    for i, item in enumerate(items):
        try:
            question_scope(item)
        except ValueError as exc:
            raise DataSourceError(f"{path}: question {i + 1}: {exc}") from None
    return items


def question_scope(question: dict) -> Scope | None:
    """A question's optional ``"scope": {"folders": [...], "formats": [...], "since": "YYYY-MM-DD"}`` as a
    Scope (app.storage.scope.parse_scope), None without one or for one that narrows nothing; ValueError
    (one line) for a scope that is not such an object or holds a value that could widen it."""
    raw = question.get("scope")
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"folders", "formats", "since"}:
        raise ValueError(f'scope is {{"folders": [...], "formats": [...], "since": "YYYY-MM-DD"}}, got {raw!r}')
    for name in ("folders", "formats"):
        value = raw.get(name)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise ValueError(f"scope: {name} is a list of strings, got {value!r}")
    since = raw.get("since")
    if since is not None and not isinstance(since, str):
        raise ValueError(f"scope: since takes a day as YYYY-MM-DD (2025-04-01), got {since!r}")
    return parse_scope(raw.get("folders"), raw.get("formats"), since) or None


def evaluate_single(
    question: dict, context: Any, graph: Any = None, contexts: Callable[[Scope | None], Any] | None = None
) -> dict:
    """Run one question through retrieve → rerank → generate and score it: with ``context``, or with
    ``contexts(scope)``'s when given (the question's scope, :func:`question_scope`; None without one).

    A failure is recorded in ``error`` (and scores as a miss), never raised.
    """

    keywords = question.get("expected_keywords") or []
    expected = question.get("expected_source")
    overview = "expected_sources" in question
    result = {
        "query": question["query"],
        "expected_source": expected,
        "expected_keywords": keywords,
        "answerable": expected is not None and not overview,
        "overview": overview,
        **({"expected_sources": question["expected_sources"]} if overview else {}),
    }
    try:
        scope = question_scope(question)
        if scope:
            result["scope"] = scope.as_dict()
        if contexts is not None:
            context = contexts(scope)
        state, seconds = measure_latency(run_rag, question["query"], context, graph)
    except Exception as exc:  # one bad question must not end the evaluation
        return {
            **result,
            "error": f"{type(exc).__name__}: {exc}",
            "retrieval_hit": False,
            "retrieval_hit_search_k": False,
            "faithfulness": 0.0,
            "exact_match": False,
            "latency": 0.0,
            "timings": {},
            "answer": "",
            "sources": [],
            "cited_sources": [],
            "retrieved": [],
            "abstained": None,
            "confidence": None,
            "answer_tokens": 0,
        }
    answer = state.get("answer", "")
    count = getattr(context, "count_tokens", None)
    if overview:
        result["coverage"] = coverage(answer, keywords)
        result["source_recall"] = source_recall(state.get("sources", []), question["expected_sources"])
    return {
        **result,
        "mode": state.get("mode"),
        "answer": answer,
        "sources": state.get("sources", []),
        "cited_sources": state.get("cited_sources", []),
        "model_cited": bool(state.get("model_cited")),
        "retrieved": [d.metadata.get("source") for d in state.get("documents", [])],
        "context_chunks": len(state.get("reranked_documents", [])),
        "retrieval_hit": expected is not None and retrieval_at_k(state.get("reranked_documents", []), expected),
        "retrieval_hit_search_k": expected is not None and retrieval_at_k(state.get("documents", []), expected),
        "faithfulness": faithfulness(answer, keywords),
        # a question may name words a right answer must not hold (the rows a filter must leave out)
        "exact_match": exact_match(answer, keywords)
        and not found_keywords(answer, question.get("absent_keywords") or []),
        "context_keywords": faithfulness("\n".join(state.get("contexts") or []), keywords),
        "context_chars": sum(len(c) for c in state.get("contexts") or []),
        "contexts": list(state.get("contexts") or []),  # what the model read, for replaying the checks
        "quote": (state.get("quote") or {}).get("text") or (answer if state.get("evidence_shown") else None),
        "evidence_shown": state.get("evidence_shown"),
        "evidence_keywords": faithfulness(
            (state.get("quote") or {}).get("text") or (answer if state.get("evidence_shown") else ""), keywords
        ),
        **passage_scores(state.get("passages") or [], keywords),
        "abstained": state.get("abstained"),
        "confidence": state.get("confidence"),
        "answer_tokens": count(answer) - count("") if count and answer else 0,
        "latency": seconds,
        "timings": dict(state.get("timings", {})),
        "reranked": bool(state.get("reranked")),
        "error": None,
    }


def passage_scores(shown: Sequence[dict], keywords: Sequence[str]) -> dict:
    """The passages shown first (app.workflow.passages) scored like the answer: the first one's keywords
    (``passage_keywords``, 0–1) and whether it holds every one (``passage_hit``)."""
    first = shown[0]["text"] if shown else ""
    return {
        "passage": first,
        "passage_keywords": faithfulness(first, keywords),
        "passage_hit": bool(first) and exact_match(first, keywords),
    }


def run_evaluation(
    questions: Sequence[dict], context: Any, progress: bool = False, scoped: Callable[[Scope], Any] | None = None
) -> list[dict]:
    """Evaluate every question (with a progress bar on stderr if asked). A question with a ``scope``
    (:func:`question_scope`) is asked with ``scoped(scope)``'s context, made once per scope (its failure,
    or no ``scoped``, is that question's error); the others with ``context``."""

    graph = get_graph()
    made: dict[Scope, Any] = {}

    def context_for(scope: Scope | None) -> Any:
        if not scope:
            return context
        if scope not in made:
            if scoped is None:
                raise ValueError("this question has a scope, and this run makes no context for a scope")
            made[scope] = scoped(scope)
        return made[scope]

    items = questions
    if progress:
        from tqdm import tqdm

        items = tqdm(questions, desc="Evaluating", unit="q", file=sys.stderr)
    return [evaluate_single(q, context, graph, contexts=context_for) for q in items]


def abstention_scores(results: Sequence[dict]) -> dict:
    """Abstention precision (abstentions that were right) and recall (unanswerable questions abstained on);
    None where undefined (no abstention / no unanswerable question)."""
    abstained = [r for r in results if r.get("abstained")]
    unanswerable = [r for r in results if not r.get("answerable", True) and not r.get("overview")]
    right = [r for r in abstained if not r.get("answerable", True) and not r.get("overview")]
    return {
        "abstained": len(abstained),
        "unanswerable": len(unanswerable),
        "abstention_precision": len(right) / len(abstained) if abstained else None,
        "abstention_recall": len(right) / len(unanswerable) if unanswerable else None,
    }


def answer_outcomes(results: Sequence[dict]) -> dict:
    """What the user sees, apart: the share of answerable questions refused (false abstentions), and the
    share of questions the documents do not answer that got an answer anyway (invented answers);
    None where there is no such question."""
    answerable = [r for r in results if r.get("answerable", True) and not r.get("overview")]
    unanswerable = [r for r in results if not r.get("answerable", True) and not r.get("overview")]
    refused = sum(bool(r.get("abstained")) for r in answerable)
    invented = sum(not r.get("abstained") and not r.get("error") for r in unanswerable)
    return {
        "false_abstention_rate": refused / len(answerable) if answerable else None,
        "invented_rate": invented / len(unanswerable) if unanswerable else None,
    }


def evidence_hits(answerable: Sequence[dict]) -> dict:
    """Of the answerable questions whose source is among the SEARCH_K candidates: the share whose quote
    (``根拠: 「…」``) holds every expected keyword, and the share that got a quote at all."""
    found = [r for r in answerable if r.get("retrieval_hit_search_k")]
    if not found:
        return {"evidence_hit": None, "quoted": None}
    return {
        "evidence_hit": sum(r.get("evidence_keywords", 0.0) == 1.0 and bool(r.get("quote")) for r in found)
        / len(found),
        "quoted": sum(bool(r.get("quote")) for r in found) / len(found),
    }


def citation_rate(results: Sequence[dict]) -> float | None:
    """Share of the answers given (not abstained, no error) in which the model cited a context itself."""
    answered = [r for r in results if not r.get("error") and not r.get("abstained") and r.get("answer")]
    return sum(bool(r.get("model_cited")) for r in answered) / len(answered) if answered else None


def generation_speed(results: Sequence[dict]) -> dict:
    """Prompt evaluation (time to the first token) and generation (the rest) means, and tokens/s of generation,
    over the questions the LLM answered."""
    gen = [r for r in results if not r.get("error") and "first_token" in r.get("timings", {})]
    prompt_s = [r["timings"]["first_token"] for r in gen]
    decode_s = [r["timings"]["generate"] - r["timings"]["first_token"] for r in gen]
    tokens = sum(max(r.get("answer_tokens", 0) - 1, 0) for r in gen)  # the first token came with the prompt
    return {
        "llm_calls": len(gen),
        "prompt_eval_mean": mean(prompt_s),
        "first_token_median": percentile(prompt_s, 50),
        "generation_mean": mean(decode_s),
        "tokens_per_s": tokens / sum(decode_s) if sum(decode_s) > 0 else None,
    }


def summarize(results: Sequence[dict]) -> dict:
    """Aggregate per-question results into rates (0–1) and latency statistics (seconds).

    Retrieval, faithfulness and exact match are over the answerable questions (None for faithfulness and
    exact match when there are none, e.g. a set of overview questions); abstention precision/recall over
    all of them.
    """
    answerable = [r for r in results if r.get("answerable", True)]
    overview = [r for r in results if r.get("overview")]
    n = len(answerable)
    rate = lambda key: (sum(bool(r[key]) for r in answerable) / n) if n else 0.0  # noqa: E731
    ok = [r for r in results if not r.get("error")]
    latency = [r["latency"] for r in ok]
    stages = {
        stage: {
            "mean": mean([r["timings"].get(stage, 0.0) for r in ok]),
            "p95": percentile([r["timings"].get(stage, 0.0) for r in ok], 95),
        }
        for stage in STAGES
        if stage in ("retrieve", "rerank", "generate") or any(stage in r["timings"] for r in ok)
    }
    return {
        "questions": len(results),
        "answerable": n,
        "overview": len(overview),
        "coverage": mean([r.get("coverage", 0.0) for r in overview]) if overview else None,
        "source_recall": mean([r.get("source_recall", 0.0) for r in overview]) if overview else None,
        "modes": {m: sum(r.get("mode") == m for r in results) for m in sorted({r.get("mode") or "-" for r in results})},
        "failed": len(results) - len(ok),
        "retrieval_at_top_k": rate("retrieval_hit"),
        "retrieval_at_search_k": rate("retrieval_hit_search_k"),
        "faithfulness": mean([r["faithfulness"] for r in answerable]) if n else None,  # None: no such question
        "exact_match": rate("exact_match") if n else None,
        "context_keywords": mean([r.get("context_keywords", 0.0) for r in answerable]) if n else None,
        "passage_hit": rate("passage_hit") if n and all("passage_hit" in r for r in answerable) else None,
        **evidence_hits(answerable),
        "evidence_shown": sum(bool(r.get("evidence_shown")) for r in results),
        "context_chunks_mean": mean([r.get("context_chunks", 0) for r in ok]),
        "context_chars_mean": mean([r.get("context_chars", 0) for r in ok if r.get("context_chars")]),
        **abstention_scores(results),
        **answer_outcomes(results),
        "citation_rate": citation_rate(results),
        **generation_speed(results),
        "latency_mean": mean(latency),
        "latency_p95": percentile(latency, 95),
        "stages": stages,
    }


def collection_for(data_dir: Path) -> str:
    """The collection a question run on ``data_dir`` uses: one per folder, never the main one."""
    import hashlib

    return "eval_" + hashlib.sha256(str(data_dir.expanduser().absolute()).encode()).hexdigest()[:12]


def write_json(path: Path, payload: dict) -> None:
    """Write ``payload`` as UTF-8 JSON (Japanese kept readable), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=2), encoding="utf-8")
