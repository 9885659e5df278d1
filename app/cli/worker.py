"""``python -m app.worker``: take files from the ingest queue and stage them, until stopped (or, with
``--once``, until the queue is empty: for cron and batch jobs)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from app.cli import run
from app.cli.ingest import positive_int
from app.config import get_settings


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: one line per file staged or failed, on stderr."""
    parser = argparse.ArgumentParser(
        prog="python -m app.worker",
        description="Read, OCR, chunk and embed the files `make ingest QUEUE=1` queued (docs/scaling.md).",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="this machine's copy of the data folder (default: DATA_DIR or ./data)",
    )
    parser.add_argument(
        "--concurrency", type=positive_int, default=None, help="files read at once (default: WORKER_CONCURRENCY or 1)"
    )
    parser.add_argument("--once", action="store_true", help="stop when the queue has nothing left to do")
    parser.add_argument("--quiet", action="store_true", help="no line per file staged, only warnings")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)

    def body() -> int:
        from app.ingestion.queue_runner import serve
        from app.ingestion.queue_worker import WorkerContext

        if not args.quiet and not args.debug:
            logging.getLogger("app.ingestion.queue_worker").setLevel(logging.INFO)
        if not args.debug:  # one line each of ours says what failed; theirs repeat it with tracebacks
            for noisy in ("procrastinate", "psycopg.pool"):
                logging.getLogger(noisy).setLevel(logging.CRITICAL)
        settings = get_settings()
        ctx = WorkerContext(settings, args.data_dir or settings.ingest.data_dir)
        logging.getLogger(__name__).warning(
            "worker %s: taking files from the ingest queue%s (Ctrl-C to stop)",
            ctx.name,
            " until it is empty" if args.once else "",
        )
        serve(ctx, args.concurrency or settings.ingest.worker_concurrency, once=args.once)
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
