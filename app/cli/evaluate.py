"""``python -m app.evaluate`` (``make evaluate``): run the evaluation questions and print the report.

Also the options and the ``--data-dir`` step shared with ``python -m app.tune`` (app.cli.tune).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.cli import run
from app.cli.ask import as_user, missing_folders_of
from app.cli.output import ensure_ingested
from app.config import Settings, get_settings, validate_mode
from app.evaluation import report as evaluate_report
from app.evaluation import run as evaluate
from app.graph import default_context
from app.storage.scope import Scope, missing_folder_message
from app.store import RagStore


def add_question_options(parser: argparse.ArgumentParser, default_file: str, json_help: str) -> None:
    """The options shared by the commands that run a question set: --questions, --data-dir, --json."""
    parser.add_argument(
        "--questions", type=Path, default=None, help=f"question set (default: <data dir>/{default_file})"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="sync this folder (pdf/, csv/) into its own collection first and use that "
        "(default: the main collection as stored)",
    )
    parser.add_argument("--json", type=Path, default=None, help=json_help)


def prepare_data_dir(settings: Settings, data_dir: Path | None) -> Settings:
    """With ``--data-dir``: sync it into its own collection and return settings that use it
    (the main collection is never touched); without, the settings as they are."""
    if data_dir is None:
        return settings
    own = settings.changed(retrieval={"collection_name": evaluate.collection_for(data_dir)})
    print(
        f"Using collection '{own.retrieval.collection_name}', synced from {data_dir} "
        f"(the main collection '{settings.retrieval.collection_name}' is not touched)",
        file=sys.stderr,
    )
    RagStore(own).sync(data_dir)
    return own


def print_report(
    summary: dict, settings: Settings, models: dict, reranked: bool, results: list[dict] | None = None
) -> None:
    """The spec's report (§4.11): the settings and the summary's figures; with ``results``, a line per
    question before it."""
    if results is not None:
        print(evaluate_report.format_table(results), end="\n\n")
    print(evaluate_report.format_report(summary, settings, models, reranked))


def scoped_contexts(settings: Settings, ctx: Any, mode: str, who: Sequence[str], generate: bool = True):
    """``scoped(scope)``: the context of a question with a ``scope`` (app.evaluation.run.question_scope),
    sharing ``ctx``'s LLM and re-ranker; ValueError (that question's error) for a folder holding nothing
    ``who`` may read, as ``make ask --in`` says it, or for global mode."""

    def scoped(scope: Scope) -> Any:
        missing = missing_folders_of(settings, scope, who)
        if missing:
            raise ValueError(missing_folder_message(missing))
        return default_context(
            settings, llm=ctx.llm, reranker=ctx.reranker, mode=mode, generate=generate, principals=who, scope=scope
        )

    return scoped


def main(argv: Sequence[str] | None = None, context: Any = None) -> int:
    """CLI: ``python -m app.evaluate [--questions F] [--data-dir D] [--json P] [--per-question]``."""
    parser = argparse.ArgumentParser(prog="python -m app.evaluate", description=evaluate.__doc__.split("\n")[0])
    add_question_options(parser, "eval_questions.json", "write per-question results and the summary here")
    parser.add_argument("--per-question", action="store_true", help="print a line per question")
    parser.add_argument(
        "--mode",
        default=None,
        metavar="MODE",
        help="hybrid | vector | keyword | local | global | auto (default: SEARCH_MODE or hybrid)",
    )
    parser.add_argument(
        "--no-generate",
        action="store_true",
        help="retrieval and re-ranking only: the LLM is not loaded (seconds, not minutes)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--as", dest="as_user", default=None, metavar="NAME", help="evaluate as this user (only what they may read)"
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)

    def body() -> int:
        settings = get_settings()
        mode = validate_mode(args.mode, settings.retrieval.search_mode)
        data_dir = args.data_dir or settings.ingest.data_dir
        questions = evaluate.load_questions(args.questions or data_dir / "eval_questions.json")
        ctx, scoped = context, None
        if ctx is None:
            # the workflow pulls in LangGraph and the model stack: `--help` stays instant

            settings = prepare_data_dir(settings, args.data_dir)
            ensure_ingested(settings)
            who = as_user(settings, args.as_user)
            ctx = default_context(settings, mode=mode, generate=not args.no_generate, principals=who)
            scoped = scoped_contexts(settings, ctx, mode, who, generate=not args.no_generate)
        results = evaluate.run_evaluation(questions, ctx, progress=not args.no_progress, scoped=scoped)
        summary = evaluate.summarize(results)
        reranked = any(r.get("reranked") for r in results)
        models = {**evaluate_report.model_names(ctx, settings), "mode": mode}
        print_report(summary, settings, models, reranked, results if args.per_question else None)
        if args.json:
            evaluate.write_json(args.json, {"summary": summary, "models": models, "results": results})
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
