"""The command-line layer: every command's argument parsing, printing and exit codes.

``python -m app.<module>`` runs ``app.cli.<command>`` (each face ends with a shim that runs it by name, or a
package has a ``__main__``; the spec's ``ask.main``, ``ingest.main`` and ``evaluate.main`` call it when
called, and no library module imports this package). One module per command; :mod:`app.cli.output` is what
``ask`` prints (answer, sources, notes, timings, JSON). This module holds what every command shares:
logging setup and one-line errors. Library modules raise; only this layer prints and chooses the exit
code. May import every other package.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

from app.config.urls import mask_urls
from app.errors import RagError
from app.storage.engine import database_error


def add_serving_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every warm server takes (``make serve``, ``make web``): watch the data folder,
    which folder, the watcher's quiet time, load the LLM at start or on first use, tracebacks."""
    parser.add_argument("--watch", action="store_true", help="sync data/ while serving (debounced)")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--debounce-ms", type=int, default=1000)
    parser.add_argument("--no-preload", action="store_true", help="load the LLM on the first question, not at start")
    parser.add_argument("--debug", action="store_true")


class MaskingFormatter(logging.Formatter):
    """Log lines with every URL's user:password and query values masked, whoever logged them (the
    HTTP clients' own ``--debug`` lines name the URLs they call)."""

    def format(self, record: logging.LogRecord) -> str:
        return mask_urls(super().format(record))


def setup_logging(debug: bool = False, model_progress: bool = False) -> None:
    """Warnings (skipped files, reranking off) go to stderr as one line each.

    Model-loading progress bars ("Loading weights") are hidden unless
    ``model_progress`` (``make models`` shows its download bars).
    """
    # huggingface_hub pulls in much of the model stack; commands that fail on their arguments never need it
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

    # langchain-community announces its own sunset on import; users can do nothing about it here.
    warnings.filterwarnings("ignore", message=".*langchain-community.*", category=DeprecationWarning)

    (enable_progress_bars if model_progress or debug else disable_progress_bars)()
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    for handler in logging.getLogger().handlers:
        handler.setFormatter(MaskingFormatter("%(levelname)s: %(message)s"))
    for noisy in ("httpx", "sentence_transformers", "transformers", "urllib3", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if debug else logging.ERROR)


def run(body: Callable[[], int], debug: bool = False, model_progress: bool = False, server: bool = False) -> int:
    """Run a CLI body; map known errors to ``Error: ...`` on stderr and exit code 1. A ``server``
    (the page, MCP) also shows the serving layer's INFO lines: ready, what runs, each sync."""
    setup_logging(debug, model_progress)
    if server and not debug:
        logging.getLogger("app.serving").setLevel(logging.INFO)
    try:
        return body()
    except KeyboardInterrupt:
        print("Interrupted", file=sys.stderr)
        return 130
    except (RagError, ValueError, FileNotFoundError) as exc:
        if debug:
            traceback.print_exc()
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        mapped = database_error(exc)  # the database went away or filled up mid-command
        if mapped is None:
            raise
        if debug:
            traceback.print_exc()
        print(f"Error: {mapped}", file=sys.stderr)
        return 1
