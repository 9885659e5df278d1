"""Ingest (§4.7, §14.1): PDFs and CSVs under the data dir → chunks → embeddings → pgvector.

PDFs are read page by page (source ``file.pdf:p1``) and split by paragraph;
CSV rows become ``column:value`` lines (source ``file.csv:r1``, 1-based data
rows) split with LangChain's RecursiveCharacterTextSplitter. ``make ingest`` is
a sync (app.sync): unchanged files are skipped, changed ones replaced in one
transaction, deleted ones purged. A bad file is skipped with a warning; the rest go in.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from app.config import get_settings
from app.errors import DataSourceError
from app.reading import read_units
from app.sync import size_refusal

log = logging.getLogger(__name__)


def _files(directory: Path, suffix: str) -> list[Path]:
    """Files in ``directory`` (not recursive) whose suffix matches, case-insensitively, sorted."""
    if not directory.is_dir():
        raise FileNotFoundError(f"directory not found: {directory}")
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix.lower() == suffix)


def _load(directory: Path, suffix: str) -> list[tuple[str, str, str]]:
    """The units ``(text, source, context)`` of every file in ``directory``, read as the sync reads them
    (app.reading.read_units: the size limits, parse limits and OCR of the settings); a file that is too
    large or unreadable is skipped with a warning."""
    settings = get_settings()
    out: list[tuple[str, str, str]] = []
    for path in _files(directory, suffix):
        too_big = size_refusal(path.name, path, settings)
        if too_big:
            log.warning("skipped %s", too_big)
            continue
        try:
            out.extend(read_units(path, settings)[0])
        except DataSourceError as exc:
            log.warning("skipped %s", exc)
    return out


def load_pdfs(pdf_dir: str | Path) -> list[tuple[str, str]]:
    """Read every PDF in ``pdf_dir`` page by page: ``[(text, "file.pdf:p1"), ...]``.

    A page's sections (a page cut at headings) are joined by blank lines; pages without text are
    left out. A corrupt, encrypted, text-less or too large file is skipped with a warning.
    FileNotFoundError if the folder does not exist.
    """
    pages: dict[str, list[str]] = {}
    for text, source, _ in _load(Path(pdf_dir), ".pdf"):
        pages.setdefault(source, []).append(text)
    return [("\n\n".join(parts), source) for source, parts in pages.items()]


def load_csvs(csv_dir: str | Path) -> list[tuple[str, str]]:
    """Read every CSV in ``csv_dir`` row by row: ``[("col:val\\n...", "file.csv:r1"), ...]``.

    An empty, unreadable or too large file is skipped with a warning. FileNotFoundError if
    the folder does not exist.
    """
    return [(text, source) for text, source, _ in _load(Path(csv_dir), ".csv")]


def _positive_int(raw: str) -> int:
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
    from app.cli import run

    parser = argparse.ArgumentParser(prog="python -m app.ingest", description=__doc__.split("\n")[0])
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
        type=_positive_int,
        default=None,
        help="processes that read, chunk and embed in parallel (default: INGEST_WORKERS or 1)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)

    def body() -> int:
        from app.store import RagStore

        settings = get_settings()
        data_dir = args.data_dir or settings.data_dir
        store = RagStore(settings)
        from tqdm.contrib.logging import logging_redirect_tqdm

        with logging_redirect_tqdm():  # warnings print above the progress bar, not glued to it
            plan, report = store.sync(
                data_dir,
                dry_run=args.dry_run,
                progress=not args.dry_run,
                allow_empty=args.allow_empty,
                wait=not args.no_wait,
                workers=args.workers,
            )
        if args.dry_run:
            print("\n".join(plan.lines() or ["nothing to do"]))
            print(
                f"Dry run: {len(plan.added)} to add, {len(plan.updated)} to update, "
                f"{len(plan.unchanged)} unchanged, {len(plan.removed)} to remove"
            )
            return 0
        if not (report.added or report.updated or report.unchanged or report.removed or report.failed):
            print(f"Nothing to ingest: no PDF or CSV under {data_dir}/pdf or {data_dir}/csv")
            return 0
        print(f"Ingest: {report.summary()}")
        if report.graph is not None:
            print(f"Graph: {report.graph.summary()}")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
