"""Evaluation (§4.11, §14.3): run each question through the same workflow as ``ask`` and
score Retrieval@k (before and after re-ranking), faithfulness, exact match and latency."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from app.config import Settings, get_settings
from app.errors import DataSourceError
from app.metrics import exact_match, faithfulness, mean, measure_latency, percentile, retrieval_at_k

STAGES = ("retrieve", "rerank", "generate")
REQUIRED_KEYS = ("query", "expected_source", "expected_keywords")


def load_questions(path: str | Path = "data/eval_questions.json") -> list[dict]:
    """Read and validate the question set: a JSON list of {query, expected_source, expected_keywords}."""
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
        missing = [k for k in REQUIRED_KEYS if not isinstance(item, dict) or k not in item]
        if missing:
            raise DataSourceError(f"{path}: question {i + 1} lacks {', '.join(missing)}")
        if not isinstance(item["expected_keywords"], list):
            raise DataSourceError(f"{path}: question {i + 1}: expected_keywords must be a list")
    return items


def evaluate_single(question: dict, context: Any, graph: Any = None) -> dict:
    """Run one question through retrieve → rerank → generate and score it.

    A failure is recorded in ``error`` (and scores as a miss), never raised.
    """
    from app.graph import run_rag

    keywords = question.get("expected_keywords") or []
    result = {"query": question["query"], "expected_source": question["expected_source"],
              "expected_keywords": keywords}
    try:
        state, seconds = measure_latency(run_rag, question["query"], context, graph)
    except Exception as exc:  # one bad question must not end the evaluation
        return {**result, "error": f"{type(exc).__name__}: {exc}", "retrieval_hit": False,
                "retrieval_hit_search_k": False, "faithfulness": 0.0, "exact_match": False,
                "latency": 0.0, "timings": {}, "answer": "", "sources": [], "retrieved": []}
    answer = state.get("answer", "")
    return {
        **result,
        "answer": answer,
        "sources": state.get("sources", []),
        "retrieved": [d.metadata.get("source") for d in state.get("documents", [])],
        "retrieval_hit": retrieval_at_k(state.get("reranked_documents", []), question["expected_source"]),
        "retrieval_hit_search_k": retrieval_at_k(state.get("documents", []), question["expected_source"]),
        "faithfulness": faithfulness(answer, keywords),
        "exact_match": exact_match(answer, keywords),
        "latency": seconds,
        "timings": dict(state.get("timings", {})),
        "reranked": bool(state.get("reranked")),
        "error": None,
    }


def run_evaluation(questions: Sequence[dict], context: Any, progress: bool = False) -> list[dict]:
    """Evaluate every question (with a progress bar on stderr if asked)."""
    from app.graph import get_graph

    graph = get_graph()
    items = questions
    if progress:
        from tqdm import tqdm

        items = tqdm(questions, desc="Evaluating", unit="q", file=sys.stderr)
    return [evaluate_single(q, context, graph) for q in items]


def summarize(results: Sequence[dict]) -> dict:
    """Aggregate per-question results into rates (0–1) and latency statistics (seconds)."""
    n = len(results)
    rate = lambda key: (sum(bool(r[key]) for r in results) / n) if n else 0.0  # noqa: E731
    ok = [r for r in results if not r.get("error")]
    latency = [r["latency"] for r in ok]
    stages = {stage: {"mean": mean([r["timings"].get(stage, 0.0) for r in ok]),
                      "p95": percentile([r["timings"].get(stage, 0.0) for r in ok], 95)}
              for stage in STAGES}
    return {
        "questions": n,
        "failed": n - len(ok),
        "retrieval_at_top_k": rate("retrieval_hit"),
        "retrieval_at_search_k": rate("retrieval_hit_search_k"),
        "faithfulness": mean([r["faithfulness"] for r in results]),
        "exact_match": rate("exact_match"),
        "latency_mean": mean(latency),
        "latency_p95": percentile(latency, 95),
        "stages": stages,
    }


def format_report(summary: dict, settings: Settings, models: dict, reranked: bool) -> str:
    """The §4.11 report, plus both retrieval figures, per-stage latency and the models used."""
    s, pct = settings, (lambda x: f"{100 * x:.1f}%")
    lines = [
        "=== Evaluation Report ===", "",
        f"Chunk={s.chunk_size} overlap={s.chunk_overlap}",
        f"Top-k={s.search_k}",
        f"Re-rank={'ON' if reranked else 'OFF'} (top_k={s.rerank_top_k})",
        f"Search: {models.get('mode', s.search_mode)} (RRF k={s.rrf_k}, weights vector={s.hybrid_weights[0]:g} "
        f"keyword={s.hybrid_weights[1]:g})" if models.get("mode", s.search_mode) == "hybrid"
        else f"Search: {models.get('mode', s.search_mode)}",
        f"Models: embed={models.get('embed')} reranker={models.get('reranker')} llm={models.get('llm')}",
        "",
        f"Retrieval@k: {pct(summary['retrieval_at_top_k'])}  (k={s.rerank_top_k}: the chunks given to the LLM)",
        f"Retrieval@{s.search_k}: {pct(summary['retrieval_at_search_k'])}  (before re-ranking)",
        *([f"Faithfulness: {pct(summary['faithfulness'])}", f"Exact Match: {pct(summary['exact_match'])}"]
          if not str(models.get("llm", "")).startswith("none") else ["Faithfulness, Exact Match: - (--no-generate)"]),
        f"Latency: {summary['latency_mean']:.1f}s  (mean; p95 {summary['latency_p95']:.1f}s)",
    ]
    for stage in STAGES:
        st = summary["stages"][stage]
        lines.append(f"  {stage:<9} mean {st['mean']:.2f}s  p95 {st['p95']:.2f}s")
    lines += ["", f"Questions evaluated: {summary['questions']}"
              + (f" (failed: {summary['failed']})" if summary["failed"] else "")]
    return "\n".join(lines)


def format_table(results: Sequence[dict]) -> str:
    """One line per question: hits, faithfulness, latency, query."""
    rows = [f"{'#':>2}  {'@k':<3} {'@K':<3} {'faith':>5} {'time':>6}  query / expected → got"]
    for i, r in enumerate(results, 1):
        mark = lambda b: "✓" if b else "✗"  # noqa: E731
        got = ", ".join(r.get("sources", [])) or (r.get("error") or "-")
        rows.append(f"{i:>2}  {mark(r['retrieval_hit']):<3} {mark(r['retrieval_hit_search_k']):<3} "
                    f"{r['faithfulness']:>5.2f} {r['latency']:>5.1f}s  {r['query']}  "
                    f"[{r['expected_source']} → {got}]")
    return "\n".join(rows)


def print_report(summary: dict, settings: Settings, models: dict, reranked: bool) -> None:
    """Print the report to stdout (the CLI's output)."""
    print(format_report(summary, settings, models, reranked))


def model_names(context: Any, settings: Settings) -> dict:
    """Which models the run used, for the report."""
    from app.llm import model_name

    reranker = "none (retrieval order)" if context.reranker is None else settings.reranker_model
    llm = "none (--no-generate)" if context.llm is None else model_name(context.llm)
    return {"embed": settings.embed_model, "reranker": reranker, "llm": llm}


def add_question_options(parser: argparse.ArgumentParser, default_file: str, json_help: str) -> None:
    """The options shared by the commands that run a question set: --questions, --data-dir, --json."""
    parser.add_argument("--questions", type=Path, default=None,
                        help=f"question set (default: <data dir>/{default_file})")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="sync this folder (pdf/, csv/) into its own collection first and use that "
                             "(default: the main collection as stored)")
    parser.add_argument("--json", type=Path, default=None, help=json_help)


def collection_for(data_dir: Path) -> str:
    """The collection a question run on ``data_dir`` uses: one per folder, never the main one."""
    import hashlib

    return "eval_" + hashlib.sha256(str(data_dir.expanduser().absolute()).encode()).hexdigest()[:12]


def prepare_data_dir(settings: Settings, data_dir: Path | None) -> Settings:
    """With ``--data-dir``: sync it into its own collection and return settings that use it
    (the main collection is never touched); without, the settings as they are."""
    if data_dir is None:
        return settings
    from dataclasses import replace

    from app.store import RagStore

    own = replace(settings, collection_name=collection_for(data_dir))
    print(f"Using collection '{own.collection_name}', synced from {data_dir} "
          f"(the main collection '{settings.collection_name}' is not touched)", file=sys.stderr)
    RagStore(own).sync(data_dir)
    return own


def write_json(path: Path, payload: dict) -> None:
    """Write ``payload`` as UTF-8 JSON (Japanese kept readable), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=2), encoding="utf-8")


def main(argv: Sequence[str] | None = None, context: Any = None) -> int:
    """CLI: ``python -m app.evaluate [--questions F] [--data-dir D] [--json P] [--per-question]``."""
    from app.cli import run

    parser = argparse.ArgumentParser(prog="python -m app.evaluate", description=__doc__.split("\n")[0])
    add_question_options(parser, "eval_questions.json", "write per-question results and the summary here")
    parser.add_argument("--per-question", action="store_true", help="print a line per question")
    parser.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default=None,
                        help="first-stage search (default: SEARCH_MODE or hybrid)")
    parser.add_argument("--no-generate", action="store_true",
                        help="retrieval and re-ranking only: the LLM is not loaded (seconds, not minutes)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)

    def body() -> int:
        settings = get_settings()
        data_dir = args.data_dir or settings.data_dir
        questions = load_questions(args.questions or data_dir / "eval_questions.json")
        ctx = context
        if ctx is None:
            from app.ask import ensure_ingested
            from app.graph import default_context

            settings = prepare_data_dir(settings, args.data_dir)
            ensure_ingested(settings)
            ctx = default_context(settings, mode=args.mode, generate=not args.no_generate)
        results = run_evaluation(questions, ctx, progress=not args.no_progress)
        summary = summarize(results)
        reranked = any(r.get("reranked") for r in results)
        models = {**model_names(ctx, settings), "mode": args.mode or settings.search_mode}
        if args.per_question:
            print(format_table(results), end="\n\n")
        print_report(summary, settings, models, reranked)
        if args.json:
            write_json(args.json, {"summary": summary, "models": models, "results": results})
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
