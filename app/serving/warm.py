"""The warm service both servers run: models loaded and the store opened once per process, and,
with ``--watch``, the data dir kept in sync in a background thread."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from app.config import Settings
from app.ingestion.watch import watch_and_sync
from app.serving.service import RagService

log = logging.getLogger(__name__)


def start_watcher(service: RagService, data_dir: Path, debounce_ms: int) -> threading.Event:
    """Keep ``data_dir`` in sync in a background thread while the server runs; returns its stop event."""
    stop = threading.Event()

    def report(reason: str, rep) -> None:
        log.warning("sync (%s): %s", reason, rep.summary())

    def run() -> None:
        try:
            watch_and_sync(data_dir, service, debounce_ms=debounce_ms, stop=stop, on_sync=report)
        except Exception as exc:
            log.warning("the file watcher stopped (%s); changes are no longer synced", exc)

    threading.Thread(target=run, name="watch", daemon=True).start()
    return stop


def make_service_factory(
    settings: Settings, data_dir: Path, watch: bool, debounce_ms: int, preload_llm: bool
) -> Callable[[], RagService]:
    """What the lifespan calls: the warm service, then the watcher; logs the time to ready."""

    def factory() -> RagService:
        begin = time.perf_counter()
        service = RagService.create(settings, data_dir=data_dir, preload_llm=preload_llm)
        if watch:
            start_watcher(service, data_dir, debounce_ms)
        log.warning(
            "ready in %.2f s (models loaded once; collection %r)",
            time.perf_counter() - begin,
            settings.retrieval.collection_name,
        )
        return service

    return factory
