"""Evaluation (§4.11): the spec's entry points, where the design card puts them.

``python -m app.evaluate`` (``make evaluate``) runs the evaluation questions through the same
workflow as ``ask`` and prints the report. The run and its summary are in :mod:`app.evaluation.run`,
the report's text in :mod:`app.evaluation.report`, the command line in :mod:`app.cli.evaluate`.
"""

from __future__ import annotations

from app.evaluation.run import evaluate_single, load_questions, run_evaluation

__all__ = ["evaluate_single", "load_questions", "main", "print_report", "run_evaluation"]


def main(argv=None, context=None) -> int:
    """The spec's entry point: the command line of :mod:`app.cli.evaluate` (imported when called, so
    ``python -m app.evaluate`` runs that module once)."""
    from app.cli.evaluate import main as run_cli

    return run_cli(argv, context)


def print_report(summary: dict, settings, models: dict, reranked: bool, results: list[dict] | None = None) -> None:
    """The spec's report (§4.11), printed by :func:`app.cli.evaluate.print_report`."""
    from app.cli.evaluate import print_report as print_cli_report

    print_cli_report(summary, settings, models, reranked, results)


if __name__ == "__main__":  # `python -m app.evaluate` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.evaluate", run_name="__main__")
