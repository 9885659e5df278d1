"""Each synced document's readers: the access file's rules, and the file share's own permissions
with ACCESS_FROM_FS (app.permissions). Computed before a sync writes anything: an access file that
cannot be used stops the sync with one line, and the stored readers stay as they were."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.config import Settings
from app.permissions.filesystem import fs_readers
from app.permissions.rules import AccessRules, document_readers, load_rules, rule_problems

if TYPE_CHECKING:  # the files a sync found (app.ingestion.datadir): only their doc_id and path are read here
    from app.ingestion.datadir import SourceFile

log = logging.getLogger(__name__)


def access_rules(settings: Settings, data_dir: Path) -> AccessRules | None:
    """The access file's rules for ``data_dir`` (None without the file); AccessFileError for a bad one."""
    return load_rules(settings.access.file_in(data_dir))


def permissions_on(settings: Settings, data_dir: Path) -> bool:
    """Whether documents have readers other than everyone: an access file exists, or ACCESS_FROM_FS is set."""
    return settings.access.from_fs or settings.access.file_in(data_dir).exists()


def readers_by_doc(
    files: Iterable[SourceFile], data_dir: Path, settings: Settings, complete: bool = False
) -> dict[str, tuple[str, ...]]:
    """doc_id -> readers for ``files``; a file whose permissions cannot be read, or let nobody read it,
    is ``admin``-only (one warning). The access file's ties, and, when ``files`` are all the data
    folder's files (``complete``), its keys that cover no file, are one warning line each."""
    rules, out = compute_readers(files, data_dir, settings)
    if rules is not None:
        for line in rule_problems(rules, out, complete):
            log.warning("%s", line)
    return out


def compute_readers(
    files: Iterable[SourceFile], data_dir: Path, settings: Settings
) -> tuple[AccessRules | None, dict[str, tuple[str, ...]]]:
    """The access file's rules and doc_id -> readers for ``files`` (file-share permissions with
    ACCESS_FROM_FS, one warning for a file they give to nobody); AccessFileError for a bad access file."""
    rules = access_rules(settings, data_dir)
    cache: dict = {}  # each folder examined once per sync
    out: dict[str, tuple[str, ...]] = {}
    for source in files:
        from_fs = None
        if settings.access.from_fs:
            from_fs = fs_readers(source.path, data_dir, cache)
            if not from_fs:
                log.warning(
                    "%s: its permissions (or its folders') could not be read or let nobody reach it; only admin may "
                    "read it",
                    source.doc_id,
                )
        out[source.doc_id] = document_readers(rules, source.doc_id, from_fs)
    return rules, out


@dataclass(frozen=True)
class AccessCheck:
    """What ``python -m app.users check`` shows: the readers the next sync gives each file of the data
    folder, and the access file's problems (:func:`~app.permissions.rules.rule_problems`)."""

    readers: dict[str, tuple[str, ...]]
    problems: list[str]


def access_check(
    settings: Settings,
    data_dir: Path,
    files: Iterable[SourceFile],
    groups: Iterable[str] | None = None,
    users: Iterable[str] | None = None,
) -> AccessCheck:
    """Every one of ``files``' readers (all the data folder's files, as a sync scans them) as the next
    sync of ``data_dir`` computes them, and the access file's keys that cover no file, keys that tie, and
    readers no user (of ``users``, in ``groups``) can hold. AccessFileError for a bad access file."""
    rules, readers = compute_readers(files, data_dir, settings)
    problems = [] if rules is None else rule_problems(rules, readers, True, groups, users)
    return AccessCheck(readers, problems)


def api_document_readers(doc_id: str, settings: Settings) -> tuple[str, ...]:
    """Readers of a Document stored through the Python API: the access file's rule for its ID."""
    return document_readers(access_rules(settings, settings.ingest.data_dir), doc_id)
