"""A document's ID and its file: the ID is the file's path relative to the data folder, in Unicode NFC.
The sync names what it stores by it; the page's ``/files`` and the version check find the file by it."""

from __future__ import annotations

from pathlib import Path

from app.permissions.principals import nfc


def document_id(path: Path, data_dir: Path) -> str:
    """The document ID of ``path``: its path relative to ``data_dir``, forward slashes, in Unicode NFC,
    so a file copied from a Mac (its name in NFD: ボ as ホ + ゛) keeps the ID the same name typed here
    has, and the access file's keys (NFC too) name it. ValueError when ``path`` is not under ``data_dir``."""
    return nfc(path.absolute().relative_to(data_dir.absolute()).as_posix())


def document_path(data_dir: Path, doc_id: str) -> Path | None:
    """The file under ``data_dir`` whose :func:`document_id` is ``doc_id``, whichever Unicode form its
    name is written in on disk (the ID is NFC, a name copied from a Mac NFD); None when there is none.
    Each name is looked up in its folder, so nothing outside ``data_dir`` is reached by ``..``."""
    current = data_dir
    for part in doc_id.split("/"):
        exact = current / part
        if part not in ("", ".", "..") and (exact.exists() or exact.is_symlink()):
            current = exact
            continue
        try:
            found = [c for c in current.iterdir() if nfc(c.name) == part and part not in (".", "..")]
        except OSError:
            return None
        if len(found) != 1:  # none, or two names in different forms: not this one's to choose
            return None
        current = found[0]
    return current
