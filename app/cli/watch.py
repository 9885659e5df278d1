"""``python -m app.watch`` (``make watch``): keep the store in sync with the data dir, one line per sync."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from app.cli import run
from app.config import get_settings
from app.ingestion import watch
from app.ingestion.scan import scan
from app.store import RagStore


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: watch until Ctrl-C."""
    parser = argparse.ArgumentParser(prog="python -m app.watch", description=watch.__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--debounce-ms", type=int, default=1000, help="quiet time that ends a burst of changes")
    parser.add_argument(
        "--graph-quiet-s",
        type=float,
        default=watch.GRAPH_QUIET_S,
        help="rebuild the graph after a change once the folder is quiet this long (seconds)",
    )
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)

    def body() -> int:
        settings = get_settings()
        data_dir = args.data_dir or settings.ingest.data_dir
        scan(data_dir)  # a missing data dir is an error before anything loads
        store = RagStore(settings)

        def report(reason: str, rep) -> None:
            print(f"{time.strftime('%H:%M:%S')} sync ({reason}): {rep.summary()}", flush=True)

        def graph(built) -> None:
            print(f"{time.strftime('%H:%M:%S')} graph: {built.summary()}", flush=True)

        print(f"Watching {data_dir} (Ctrl-C to stop)", flush=True)
        watch.watch_and_sync(
            data_dir,
            store,
            debounce_ms=args.debounce_ms,
            on_sync=report,
            graph_quiet_s=args.graph_quiet_s,
            on_graph=graph,
        )
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
