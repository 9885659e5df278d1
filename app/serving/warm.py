"""The warm service both servers run: models loaded and the store opened once per process, and,
with ``--watch``, the data dir kept in sync in a background thread. The write side (the writer and the
watcher) is given by the command that starts the server: serving itself never imports app.ingestion."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.config import Settings, mask_url
from app.errors import ModelNotFoundError
from app.models.locate import resolve_llm_path, resolve_model_dir
from app.serving.service import RagService
from app.storage import describe_target

log = logging.getLogger(__name__)


def start_watcher(service: RagService, data_dir: Path, debounce_ms: int, watch_and_sync: Callable) -> threading.Event:
    """Keep ``data_dir`` in sync in a background thread while the server runs, with ``watch_and_sync``
    (app.ingestion.watch) driving the service's writer; returns its stop event."""
    stop = threading.Event()

    def report(reason: str, rep) -> None:
        log.info("sync (%s): %s", reason, rep.summary())

    def run() -> None:
        try:
            watch_and_sync(data_dir, service, debounce_ms=debounce_ms, stop=stop, on_sync=report)
        except Exception as exc:
            log.warning("the file watcher stopped (%s); changes are no longer synced", exc)

    threading.Thread(target=run, name="watch", daemon=True).start()
    return stop


def what_runs(settings: Settings) -> str:
    """What a warm server answers with, said once at its start: the embedder, the re-ranker (or that
    none is installed), the LLM (in process, or the server it asks) and where the database is."""
    models = settings.models
    embedder = f"server {mask_url(models.embed_base_url)}" if models.embed_base_url else models.embed_model
    reranker = (
        models.reranker_model
        if resolve_model_dir(models.reranker_model, models.dir)
        else "none installed (retrieval order)"
    )
    if settings.llm.base_url:
        llm = f"server {mask_url(settings.llm.base_url)}"
    else:
        try:
            gguf = resolve_llm_path(settings.llm.model_path, models.dir, settings.llm.model_path_is_default)
            llm = f"{gguf.name} in process"
        except ModelNotFoundError:
            llm = f"{Path(settings.llm.model_path).name} (not found: run make models)"
    return f"embeddings {embedder}; re-ranker {reranker}; LLM {llm}; database: {describe_target(settings)}"


def make_service_factory(
    settings: Settings,
    data_dir: Path,
    debounce_ms: int,
    preload_llm: bool,
    make_writer: Callable[..., Any] | None = None,
    watch: Callable | None = None,
) -> Callable[[], RagService]:
    """What the lifespan calls: the warm service, then the watcher; logs the time to ready.
    ``make_writer`` (app.ingestion.writer.StoreWriter) gives the service its write side; ``watch``
    (app.ingestion.watch.watch_and_sync, with ``--watch``) keeps the data dir in sync through it."""

    def factory() -> RagService:
        begin = time.perf_counter()
        service = RagService.create(settings, data_dir=data_dir, preload_llm=preload_llm, make_writer=make_writer)
        if watch is not None:
            start_watcher(service, data_dir, debounce_ms, watch)
        log.info(
            "ready in %.2f s (models loaded once; collection %r): %s",
            time.perf_counter() - begin,
            settings.retrieval.collection_name,
            what_runs(settings),
        )
        return service

    return factory
