"""Checks on an Office file's container before any library opens it.

``.docx``, ``.xlsx``, ``.xlsm`` and ``.pptx`` files are zip archives. A password-protected one is not: Office
wraps it, encrypted, in an OLE compound file (the old ``.doc``/``.xls`` container), so the zip readers
would fail with an unhelpful message. A zip bomb (a few kilobytes that inflate to gigabytes, or
millions of entries) must be refused from the archive's directory alone, before anything is
inflated: the readers (openpyxl, python-docx, python-pptx) inflate through :mod:`zipfile`, which
never reads past an entry's declared size, so the declared sizes bound what they can inflate.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from app.errors import DataSourceError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # compound file: encrypted OOXML, or .doc/.xls/.ppt
# The part that makes an Office Open XML zip a document of each kind, and the kind's name.
MAIN_PARTS = {
    "word/document.xml": "Word document",
    "xl/workbook.xml": "Excel workbook",
    "ppt/presentation.xml": "PowerPoint presentation",
}
EXPECTED_KIND = {".docx": "Word document", ".xlsx": "Excel workbook", ".xlsm": "Excel workbook"}
EXPECTED_KIND[".pptx"] = "PowerPoint presentation"


def is_read(part: str) -> bool:
    """Whether a reader inflates ``part``: the XML of the text, not pictures or embedded files
    (``word/media/…``, ``xl/embeddings/…``), which no reader here opens."""
    return not any(f"/{folder}/" in f"/{part}" for folder in ("media", "embeddings"))


def wrong_kind(suffix: str, names: set[str]) -> str | None:
    """The one-line reason a zip is not the Office kind its suffix says (a Word document renamed .xlsx),
    or None when it is, or when no Office kind is recognized (the reader then says what is wrong)."""
    expected = EXPECTED_KIND.get(suffix.lower())
    found = [kind for part, kind in MAIN_PARTS.items() if part in names]
    if expected is None or not found or expected in found:
        return None
    article = "an" if found[0][0] in "AEIOU" else "a"
    return f"not a valid {expected.split()[0]} file ({article} {found[0]} renamed {suffix.lower()}?); skipped"


def check_office_zip(path: Path, name: str, max_mb: int, max_entries: int) -> None:
    """Raise DataSourceError (one line naming ``name``) unless ``path`` is a zip an Office reader may open:
    not an encrypted (OLE-wrapped) file, not corrupt or truncated, at most ``max_entries`` entries and
    ``max_mb`` megabytes uncompressed in the parts a reader inflates (MAX_ZIP_ENTRIES, MAX_ZIP_MB), and
    of the Office kind its suffix says."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise DataSourceError(f"{name}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})") from None
    if head == OLE_MAGIC:
        raise DataSourceError(
            f"{name}: password-protected (encrypted) Office file, or an old binary format saved "
            "under a new name; skipped (remove the password, or save it again as "
            f"{path.suffix.lower() or 'an Office Open XML file'})"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise DataSourceError(f"{name}: corrupt or truncated file (not a readable zip: {exc})") from None
    except OSError as exc:
        raise DataSourceError(f"{name}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})") from None
    if len(entries) > max_entries:
        raise DataSourceError(
            f"{name}: {len(entries)} entries in its zip, more than MAX_ZIP_ENTRIES={max_entries}; "
            "skipped (a zip bomb? raise MAX_ZIP_ENTRIES to read it)"
        )
    mismatch = wrong_kind(path.suffix, {entry.filename for entry in entries})
    if mismatch:
        raise DataSourceError(f"{name}: {mismatch}")
    inflated = sum(entry.file_size for entry in entries if is_read(entry.filename))
    if inflated > max_mb * 1024 * 1024:
        raise DataSourceError(
            f"{name}: {inflated / 1024 / 1024:.0f} MB of text parts uncompressed, more than MAX_ZIP_MB={max_mb}; "
            "skipped (a zip bomb? raise MAX_ZIP_MB to read it)"
        )
