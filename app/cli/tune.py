"""``python -m app.tune`` (``make tune``): choose RRF_K / HYBRID_WEIGHTS on the tuning questions and print
the grid, the per-question diagnosis and the abstention calibration."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from app.cli import run
from app.cli.evaluate import add_question_options, prepare_data_dir
from app.cli.output import ensure_ingested
from app.config import get_settings
from app.errors import ModelNotFoundError
from app.evaluation import tune
from app.evaluation.run import load_questions, write_json
from app.permissions.principals import FULL_ACCESS
from app.reranker import get_reranker
from app.store import RagStore


def main(argv: Sequence[str] | None = None, store: Any = None) -> int:
    """CLI: ``python -m app.tune [--questions F] [--data-dir D] [--json P]``."""
    parser = argparse.ArgumentParser(prog="python -m app.tune", description=tune.__doc__.split("\n")[0])
    add_question_options(parser, "tuning_questions.json", "write every row and the choice here")
    parser.add_argument(
        "--per-question",
        action="store_true",
        help=f"each question's rank in the vector, keyword (top {tune.DIAGNOSIS_DEPTH}) and hybrid lists, "
        "and what could bring it into the top RERANK_TOP_K",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)

    def body() -> int:
        settings = get_settings()
        questions = load_questions(
            args.questions or (args.data_dir or settings.ingest.data_dir) / "tuning_questions.json"
        )
        rag = store
        if rag is None:
            settings = prepare_data_dir(settings, args.data_dir)
            ensure_ingested(settings)
            # tuning measures retrieval over every document, as the owner: full access, on purpose
            rag = RagStore(settings, principals=FULL_ACCESS)
        depth = (
            max(settings.retrieval.search_k, tune.DIAGNOSIS_DEPTH) if args.per_question else settings.retrieval.search_k
        )
        deep = tune.fetch_candidates(rag, questions, depth)
        candidates = [tune.truncate(c, settings.retrieval.search_k) for c in deep]
        answerable = [(c, q) for c, q in zip(candidates, questions) if q["expected_source"]]
        rows = tune.grid(
            [c for c, _ in answerable],
            [q for _, q in answerable],
            settings.retrieval.rerank_top_k,
            settings.retrieval.search_k,
        )
        chosen = tune.best_setting(rows)
        print(tune.format_grid(rows, settings.retrieval.rerank_top_k, settings.retrieval.search_k, chosen))
        per_question = None
        if args.per_question:
            asked = [(c, q) for c, q in zip(deep, questions) if q["expected_source"]]
            per_question = tune.diagnose(
                [c for c, _ in asked],
                [q for _, q in asked],
                settings.retrieval.rerank_top_k,
                settings.retrieval.search_k,
                settings.retrieval.rrf_k,
                settings.retrieval.hybrid_weights,
            )
            print(tune.format_diagnosis(per_question, depth))
        sims = [(tune.best_similarity(c), bool(q["expected_source"])) for c, q in zip(candidates, questions)]
        calibration = tune.calibrate_abstention(
            [v for v, ok in sims if ok and v is not None], [v for v, ok in sims if not ok and v is not None]
        )
        expected = (bool(q["expected_source"]) for q in questions)
        covered = list(zip(tune.coverages(candidates, questions, settings), expected))
        by_coverage = tune.calibrate_abstention([v for v, ok in covered if ok], [v for v, ok in covered if not ok])
        by_rerank = rerank_calibration(settings, candidates, questions)
        if calibration["unanswerable"]:
            print(tune.format_calibration(calibration))
            print(
                tune.format_calibration(by_coverage, "ABSTAIN_MIN_COVERAGE", "question tokens found in the top chunks")
            )
            if by_rerank:
                print(tune.format_calibration(by_rerank, "ABSTAIN_MIN_RERANK", "the cross-encoder's best score"))
        if args.json:
            write_json(
                args.json,
                {
                    "questions": len(questions),
                    "rows": rows,
                    "chosen": chosen,
                    "abstention": calibration,
                    "abstention_coverage": by_coverage,
                    **({"abstention_rerank": by_rerank} if by_rerank else {}),
                    **({"per_question": per_question} if per_question is not None else {}),
                },
            )
        return 0

    return run(body, debug=args.debug)


def rerank_calibration(settings: Any, candidates: Sequence[Any], questions: Sequence[dict]) -> dict | None:
    """ABSTAIN_MIN_RERANK's calibration when a cross-encoder is installed (RERANKER_MODEL); None without one."""
    try:
        reranker = get_reranker(settings)
    except ModelNotFoundError:
        return None
    scored = list(zip(tune.rerank_scores(reranker, candidates, questions, settings), questions))
    return tune.calibrate_abstention(
        [v for v, q in scored if q["expected_source"]], [v for v, q in scored if not q["expected_source"]]
    )


if __name__ == "__main__":
    raise SystemExit(main())
