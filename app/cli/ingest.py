"""``python -m app.ingest`` (``make ingest``): sync the data dir into the store and print a one-line summary."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from app.cli import run
from app.config import get_settings
from app.store import RagStore


def positive_int(raw: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m app.ingest [--data-dir DIR] [--dry-run]``; prints a one-line summary."""
    parser = argparse.ArgumentParser(
        prog="python -m app.ingest",
        description="Ingest (§4.7): sync the data dir into PostgreSQL + pgvector (PDF, CSV, Office, HTML, text, scans).",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="folder with pdf/ and csv/ (default: DATA_DIR or ./data)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would be added/updated/removed; change nothing"
    )
    parser.add_argument("--allow-empty", action="store_true", help="let an empty data dir remove every stored document")
    parser.add_argument(
        "--no-wait", action="store_true", help="fail at once if another ingest/remove is running (default: wait for it)"
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="processes that read, chunk and embed in parallel (default: INGEST_WORKERS or 1)",
    )
    parser.add_argument(
        "--queue",
        action="store_true",
        help="queue each file for `python -m app.worker` on any machine and wait for them (docs/scaling.md)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)

    def body() -> int:
        # tqdm loads when a sync runs
        from tqdm.contrib.logging import logging_redirect_tqdm

        settings = get_settings()
        data_dir = args.data_dir or settings.ingest.data_dir
        store = RagStore(settings)
        with logging_redirect_tqdm():  # warnings print above the progress bar, not glued to it
            plan, report = store.sync(
                data_dir,
                dry_run=args.dry_run,
                progress=not args.dry_run,
                allow_empty=args.allow_empty,
                wait=not args.no_wait,
                workers=args.workers,
                queue=args.queue,
            )
        if args.dry_run:
            print("\n".join(plan.lines() or ["nothing to do"]))
            print(
                f"Dry run: {len(plan.added)} to add, {len(plan.updated)} to update, "
                f"{len(plan.unchanged)} unchanged, {len(plan.removed)} to remove"
            )
            return 0
        if not (report.added or report.updated or report.unchanged or report.removed or report.failed):
            print(f"Nothing to ingest: no supported file in {data_dir}/pdf, {data_dir}/csv or under {data_dir}/docs")
            return 0
        print(f"Ingest: {report.summary()}")
        if report.graph is not None:
            print(f"Graph: {report.graph.summary()}")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
