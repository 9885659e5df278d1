"""Which files of the data dir a sync reads, and as which documents: the folders and suffixes of the
format registry, the link policy (:mod:`app.ingestion.datadir`), the size limits, and a document's ID
(its path relative to the data dir, exactly; a name with a control character is refused)."""

from __future__ import annotations

import logging
from pathlib import Path

from app import formats
from app.config import Settings
from app.errors import DataSourceError
from app.formats.limits import escape, file_hash
from app.ingestion.datadir import SourceFile, link_refusal, walk_data_dir
from app.permissions.principals import nfc
from app.storage.doc_ids import document_id

log = logging.getLogger(__name__)


# folder -> file suffixes; docs/ is searched recursively (Dialogoi's **/*.md and **/*.txt). Scans
# (images) go with the PDFs, workbooks with the CSVs; docs/ takes every document format but images
# (a Markdown tree's screenshots are not documents to OCR).
SUPPORTED = formats.folder_suffixes()  # folder → the suffixes a sync reads there (the format registry's)
RECURSIVE = formats.RECURSIVE_FOLDERS
SUPPORTED_TEXT = formats.supported_text()


def doc_id_for(path: Path, data_dir: Path) -> str:
    """A document's ID: its path relative to the data dir, with forward slashes, in Unicode NFC
    (:func:`~app.storage.doc_ids.document_id`: a name copied from a Mac keeps one identity), else
    as the file system names it (no escaping, which could make two names one ID: a real newline and a
    written ``\\n``). A name with a control character is refused before it gets an ID (:func:`name_refusal`).

    Links are not followed here, so a link inside the data dir keeps its own name
    even when it points elsewhere.
    """
    return document_id(path, data_dir)


def name_refusal(relative: str) -> str | None:
    """The one-line reason a file's path cannot be a document's ID (a control or invisible character:
    a newline, an escape sequence, which would forge lines or move the cursor where it is shown), the
    path shown escaped; None for any other name, ``..%2f`` and the like included."""
    if escape(relative) == relative:
        return None
    return f"{escape(relative)}: a file name with a control character is not read; rename the file"


def scan(data_dir: Path, settings: Settings | None = None) -> tuple[list[SourceFile], list[tuple[str | None, str]]]:
    """Every supported file under ``data_dir/pdf/*.pdf``, ``data_dir/csv/*.csv`` and ``data_dir/docs/**``,
    under the link policy of :mod:`app.ingestion.datadir` (FOLLOW_EXTERNAL_LINKS) and the size limits
    (MAX_PDF_MB, MAX_CSV_MB, MAX_TEXT_MB) of ``settings`` (default: the defaults).

    Returns ``(files, failures)``; a failure is ``(doc_id, reason)`` for a file that exists but cannot
    be read (no permission, a broken link: its stored version is kept), or ``(None, reason)`` for a
    path the policy refuses (a link out of the data dir, a loop, a FIFO: never stored). A link to a
    file that is already listed is skipped, so one file is never stored twice. DataSourceError if
    ``data_dir`` is not a folder.
    """
    if not data_dir.is_dir():
        raise DataSourceError(f"data directory not found: {data_dir}")
    settings = settings or Settings()
    walk = walk_data_dir(data_dir, SUPPORTED, RECURSIVE, settings.ingest.follow_external_links)
    failures: list[tuple[str | None, str]] = [(p.doc_id if p.keep else None, p.reason) for p in walk.problems]
    files: list[SourceFile] = []
    seen: dict[Path, str] = {}
    ids: set[str] = set()
    for path in sorted(walk.files, key=lambda p: p.is_symlink()):  # stable: pdf/ csv/ docs/, by path
        doc_id = doc_id_for(path, data_dir)
        refused = name_refusal(doc_id)
        if refused:
            failures.append((None, refused))
            continue
        real = path.resolve()
        if real in seen:
            log.info("%s is a link to %s: stored once, as %s", doc_id, seen[real], seen[real])
            continue
        if doc_id in ids:  # two names that differ only in Unicode form (NFC, NFD): one ID, the first file's
            failures.append((None, f"{doc_id}: a second file with this name in another Unicode form; skipped"))
            continue
        ids.add(doc_id)
        too_big = size_refusal(doc_id, real, settings)
        if too_big:
            failures.append((doc_id, too_big))
            continue
        try:
            digest = file_hash(path)
        except OSError as exc:
            failures.append((doc_id, f"{doc_id}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})"))
            continue
        seen[real] = doc_id
        files.append(SourceFile(doc_id, path, escape(nfc(path.name)), digest))
    return files, failures


def size_refusal(doc_id: str, path: Path, settings: Settings) -> str | None:
    """The one-line reason a file is larger than its format's limit (MAX_PDF_MB …), or None."""
    name, limit = formats.size_limit(Path(doc_id).suffix, settings)
    try:
        size = path.stat().st_size
    except OSError:
        return None  # the read that follows says why
    if size <= limit * 1024 * 1024:
        return None
    return f"{doc_id}: {size / 1024 / 1024:.0f} MB, larger than {name}={limit}; skipped (raise {name} to read it)"


def resolve_file(path: Path, data_dir: Path, settings: Settings | None = None) -> SourceFile:
    """One file as a document (it must lie under data_dir/pdf, data_dir/csv or data_dir/docs, and the
    link policy of :func:`scan` must allow it)."""
    settings = settings or Settings()
    refused = link_refusal(path, data_dir, settings.ingest.follow_external_links)
    if refused:
        raise DataSourceError(refused)
    if not path.is_file():
        raise DataSourceError(f"file not found: {path}")
    try:
        doc_id = doc_id_for(path, data_dir)
    except ValueError:
        raise DataSourceError(f"{escape(str(path))} is not under the data directory {data_dir}") from None
    refused_name = name_refusal(doc_id)
    if refused_name:
        raise DataSourceError(refused_name)
    folder = doc_id.split("/", 1)[0]
    if (
        folder not in SUPPORTED
        or path.suffix.lower() not in SUPPORTED[folder]
        or (folder not in RECURSIVE and doc_id.count("/") > 1)
    ):
        raise DataSourceError(f"{doc_id}: only {SUPPORTED_TEXT} are ingested")
    too_big = size_refusal(doc_id, path, settings)
    if too_big:
        raise DataSourceError(too_big)
    try:
        return SourceFile(doc_id, path, escape(nfc(path.name)), file_hash(path))
    except OSError as exc:
        raise DataSourceError(f"{doc_id}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})") from None
