"""Each synced document's readers: the access file's rules, and the file share's own permissions
with ACCESS_FROM_FS (app.permissions). Computed before a sync writes anything: an access file that
cannot be used stops the sync with one line, and the stored readers stay as they were."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from app.config import Settings
from app.ingestion.datadir import SourceFile
from app.permissions.filesystem import fs_readers
from app.permissions.rules import AccessRules, document_readers, load_rules

log = logging.getLogger(__name__)


def access_rules(settings: Settings, data_dir: Path) -> AccessRules | None:
    """The access file's rules for ``data_dir`` (None without the file); AccessFileError for a bad one."""
    return load_rules(settings.access.file_in(data_dir))


def permissions_on(settings: Settings, data_dir: Path) -> bool:
    """Whether documents have readers other than everyone: an access file exists, or ACCESS_FROM_FS is set."""
    return settings.access.from_fs or settings.access.file_in(data_dir).exists()


def readers_by_doc(files: Iterable[SourceFile], data_dir: Path, settings: Settings) -> dict[str, tuple[str, ...]]:
    """doc_id -> readers for ``files``; a file whose permissions cannot be read is ``admin``-only (one warning)."""
    rules = access_rules(settings, data_dir)
    out: dict[str, tuple[str, ...]] = {}
    for source in files:
        from_fs = None
        if settings.access.from_fs:
            from_fs = fs_readers(source.path)
            if not from_fs:
                log.warning("%s: its permissions could not be read; only admin may read it", source.doc_id)
        out[source.doc_id] = document_readers(rules, source.doc_id, from_fs)
    return out


def api_document_readers(doc_id: str, settings: Settings) -> tuple[str, ...]:
    """Readers of a Document stored through the Python API: the access file's rule for its ID."""
    return document_readers(access_rules(settings, settings.ingest.data_dir), doc_id)
