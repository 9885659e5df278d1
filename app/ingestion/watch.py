"""Keep the store in sync with the data dir: ``python -m app.watch`` (``make watch``).

Runs one sync at start, then one per burst of file changes: a burst ends after
``--debounce-ms`` without changes, so saving a file five times in a row gives one sync.
Each sync skips unchanged files, so it costs little more than the changed files.

The graph (app.graphrag) is rebuilt, when it is out of date, only once the folder has been quiet
for ``--graph-quiet-s`` seconds (at start too): a rebuild reads every entity link, so doing it per
saved file would make each sync cost the whole corpus, and doing it before watching would leave
changes made meanwhile unseen.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from app.errors import RagError, one_line
from app.ingestion.scan import SUPPORTED

log = logging.getLogger(__name__)


ACCESS_FILE_NAME = "access.toml"  # the data dir's access file: a change gives documents new readers


def relevant(change_path: str) -> bool:
    """Only the files a sync reads count (app.ingestion.scan.SUPPORTED; editors' temp files are ignored),
    and the access file (a change of who may read what is applied at once)."""
    path = Path(change_path)
    return path.name == ACCESS_FILE_NAME or path.suffix.lower() in {
        suffix for suffixes in SUPPORTED.values() for suffix in suffixes
    }


GRAPH_QUIET_S = 10.0
RETRY_S = 5.0  # after the watch itself failed (the folder vanished): wait, then watch again


def changed(report) -> bool:
    """Whether a sync wrote or removed anything (so the graph is out of date)."""
    return bool(report.added or report.updated or report.removed)


def watch_and_sync(
    data_dir: Path,
    store,
    *,
    debounce_ms: int = 1000,
    stop: threading.Event | None = None,
    on_sync: Callable | None = None,
    graph_quiet_s: float = GRAPH_QUIET_S,
    on_graph: Callable | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Sync now, then after every burst of relevant changes under ``data_dir`` until ``stop`` is set;
    rebuild the graph once no change came for ``graph_quiet_s`` seconds after a sync that changed
    something (``on_graph`` gets the BuildReport)."""
    from watchfiles import watch

    pending, last = [True], [clock()]  # at start: build the graph if it is out of date

    def do_sync(reason: str) -> None:
        try:
            _, report = store.sync(data_dir, graph=False)
        except RagError as exc:  # the data dir vanished, the database is down or full: keep watching
            log.warning("sync failed (%s): %s; watching on", reason, exc)
            return
        except Exception as exc:
            log.warning("sync failed (%s): %s; watching on", reason, one_line(exc))
            return
        pending[0], last[0] = pending[0] or changed(report), clock()
        if on_sync is not None:
            on_sync(reason, report)

    def rebuild_graph() -> None:
        pending[0] = False
        try:
            built = store.update_graph()
        except RagError as exc:
            log.warning("graph rebuild failed: %s; watching on", exc)
            return
        if built is not None and on_graph is not None:
            on_graph(built)

    do_sync("start")
    while not (stop is not None and stop.is_set()):
        try:
            # step: the quiet time that ends a burst; debounce: the longest a burst may be grouped. Empty
            # yields every half second let the graph wait for a quiet folder.
            for changes in watch(
                data_dir,
                step=debounce_ms,
                debounce=max(10 * debounce_ms, 5000),
                stop_event=stop,
                rust_timeout=500,
                watch_filter=lambda _change, path: relevant(path),
                yield_on_timeout=True,
            ):
                if changes:
                    do_sync(f"{len(changes)} change(s)")
                elif pending[0] and clock() - last[0] >= graph_quiet_s:
                    rebuild_graph()
            return
        except Exception as exc:
            log.warning("watching %s failed (%s); trying again in %.0f s", data_dir, one_line(exc), RETRY_S)
            if stop is not None and stop.wait(RETRY_S) or stop is None and time.sleep(RETRY_S):
                return
            do_sync("watch restarted")
