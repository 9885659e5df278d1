"""What the two server commands (``python -m app.web``, ``python -m app.mcp``) hand their warm service: the
write side of the store (the page's and the ``sync`` tool's sync) and, with ``--watch``, the file watcher.
Serving itself never imports app.ingestion; the commands give it both here."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from pathlib import Path

from app.config import Settings
from app.ingestion.watch import watch_and_sync
from app.ingestion.writer import StoreWriter
from app.serving.service import RagService
from app.serving.warm import make_service_factory


def service_factory(settings: Settings, data_dir: Path, args: Namespace) -> Callable[[], RagService]:
    """The warm service of a server command started with ``args`` (app.cli.add_serving_arguments):
    its writer always, its watcher with ``--watch``."""
    return make_service_factory(
        settings,
        data_dir,
        args.debounce_ms,
        preload_llm=not args.no_preload,
        make_writer=StoreWriter,
        watch=watch_and_sync if args.watch else None,
    )
