"""The tables of any file a sync reads: a CSV's, a workbook's sheets (app.tables.extract), and those
in a Word, PowerPoint or HTML document (app.tables.documents), read in a bounded child process where
its text is."""

from __future__ import annotations

from pathlib import Path

from app.formats.limits import Limits
from app.tables.documents import DOCUMENT_TABLE_SUFFIXES, document_tables, may_hold_tables
from app.tables.extract import TABLE_SUFFIXES, SourceTable, csv_tables, workbook_tables

__all__ = ["read_tables"]


def _read_here(path: Path, settings, on_page=None) -> list[SourceTable]:
    """The tables of ``path`` read in this process."""
    if path.suffix.lower() == ".csv":
        return csv_tables(path, Limits.from_settings(settings))
    if path.suffix.lower() in TABLE_SUFFIXES:
        return workbook_tables(path, settings)
    return document_tables(path, settings)


def read_tables(path: Path, settings) -> list[SourceTable]:
    """The tables of a CSV file, a workbook, or a Word, PowerPoint or HTML file (``[]`` for any other
    file); an Office file, or a file over 1 MiB, is read in a bounded child process as its text is
    (app.formats.bounded). DataSourceError (one line) when it cannot be read."""
    from app.formats import OFFICE_SUFFIXES
    from app.formats.bounded import IN_PROCESS_BYTES, read_bounded

    if path.suffix.lower() not in TABLE_SUFFIXES + DOCUMENT_TABLE_SUFFIXES:
        return []
    if path.suffix.lower() in DOCUMENT_TABLE_SUFFIXES and not may_hold_tables(path):
        return []  # no table tag: no child process started
    try:
        large = path.stat().st_size > IN_PROCESS_BYTES
    except OSError:
        large = False
    if (large or path.suffix.lower() in OFFICE_SUFFIXES) and settings.ingest.max_reader_mb:
        return read_bounded(_read_here, path, settings)
    return _read_here(path, settings)
