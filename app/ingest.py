"""Ingest (§4.7, §14.1): PDFs and CSVs under the data dir → chunks → embeddings → pgvector.

PDFs are read page by page (source ``file.pdf:p1``) and split by paragraph;
CSV rows become ``column:value`` lines (source ``file.csv:r1``, 1-based data
rows) split with LangChain's RecursiveCharacterTextSplitter. ``make ingest`` is
a sync (app.ingestion.sync): unchanged files are skipped, changed ones replaced in one
transaction, deleted ones purged. A bad file is skipped with a warning; the rest go in.

The sync's parts are the package :mod:`app.ingestion`.
"""

from __future__ import annotations

import logging
from pathlib import Path

from app.config import get_settings
from app.errors import DataSourceError
from app.ingestion.reading import read_units
from app.ingestion.scan import size_refusal

log = logging.getLogger(__name__)


def _files(directory: Path, suffix: str) -> list[Path]:
    """Files in ``directory`` (not recursive) whose suffix matches, case-insensitively, sorted."""
    if not directory.is_dir():
        raise FileNotFoundError(f"directory not found: {directory}")
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix.lower() == suffix)


def _load(directory: Path, suffix: str) -> list[tuple[str, str, str]]:
    """The units ``(text, source, context)`` of every file in ``directory``, read as the sync reads them
    (app.ingestion.reading.read_units: the size limits, parse limits and OCR of the settings); a file that is too
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


def main(argv=None) -> int:
    """The spec's entry point (§4.7): the command line of :mod:`app.cli.ingest` (a sync of the data dir)."""
    from app.cli.ingest import main as run_cli

    return run_cli(argv)


if __name__ == "__main__":  # `python -m app.ingest` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.ingest", run_name="__main__")
