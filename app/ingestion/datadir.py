"""Which files under the data dir a sync reads, and the policy for links.

* Files and folders inside the data dir are read, links among them included (a link to a file
  already listed is stored once, under the first name).
* A link that leaves the data dir is followed only when it points to a regular file and
  ``FOLLOW_EXTERNAL_LINKS`` allows it; a folder link that leaves it is walked only then too.
  ``/proc``, ``/sys`` and ``/dev``, sockets, FIFOs and devices are never read, whatever the setting:
  a link to ``/proc/self/environ`` would store the process's own secrets.
* A link loop, a broken link or a folder reached twice is skipped with one line; the rest go on.

Problems come back as ``(doc_id, reason, keep)``: ``keep`` is True when the file exists but could not
be read this time (its stored version stays), False when the policy refuses it (a stored version
from before the policy is removed by the sync, as for a deleted file).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from app.formats.limits import escape
from app.storage.doc_ids import document_id

# Never read, even through an allowed link: kernel and device file systems.
SYSTEM_PREFIXES = (Path("/proc"), Path("/sys"), Path("/dev"))
ALLOW_HINT = "set FOLLOW_EXTERNAL_LINKS=1 to follow it"


@dataclass(frozen=True)
class Problem:
    """A path the walk did not take: its document ID, the one-line reason, and whether a stored
    version must be kept (the file exists but could not be read)."""

    doc_id: str
    reason: str
    keep: bool


@dataclass
class Walk:
    """The files found (paths as seen from the data dir, not resolved) and the paths skipped."""

    files: list[Path] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def is_system_path(real: Path) -> bool:
    """Whether ``real`` lies in /proc, /sys or /dev (never read)."""
    return any(real == prefix or real.is_relative_to(prefix) for prefix in SYSTEM_PREFIXES)


def resolve_link(path: Path) -> Path | str:
    """The real path ``path`` leads to, or the reason it leads nowhere (a loop, a broken link)."""
    try:
        return path.resolve(strict=True)
    except RuntimeError:
        return "link loop"
    except FileNotFoundError:
        return f"broken link (points to {os.readlink(path) if path.is_symlink() else path}, which does not exist)"
    except OSError as exc:
        if exc.errno == 40:  # ELOOP
            return "link loop"
        return f"cannot resolve ({exc.__class__.__name__}: {exc.strerror or exc})"


def is_hidden(name: str) -> bool:
    """A dot-file (``.DS_Store``, ``.~lock.x.docx#``): never read. A name that starts with ``..`` and
    goes on (``..%2f..%2fetc.md``) is an ordinary name, read as any other."""
    return name.startswith(".") and not name.startswith("..")


class Walker:
    """Walks the data dir's folders under the link policy (one walker per scan)."""

    def __init__(self, data_dir: Path, follow_external: bool = False) -> None:
        self.data_dir = data_dir
        self.root = data_dir.resolve()
        self.follow_external = follow_external
        self.seen_dirs: set[tuple[int, int]] = set()
        self.result = Walk()

    def doc_id(self, path: Path) -> str:
        """The document ID of ``path`` (relative to the data dir, forward slashes, printable)."""
        return escape(document_id(path, self.data_dir))

    def skip(self, path: Path, reason: str, keep: bool = False) -> None:
        """Record a path not taken, with its reason."""
        doc_id = self.doc_id(path)
        self.result.problems.append(Problem(doc_id, f"{doc_id}: {reason}", keep))

    def outside(self, real: Path) -> bool:
        """Whether a real path lies outside the data dir."""
        return not real.is_relative_to(self.root)

    def walk(self, directory: Path, suffixes: tuple[str, ...], recursive: bool) -> None:
        """Add the supported files of ``directory`` (and, if ``recursive``, of its folders)."""
        real = self._enter(directory)
        if real is None:
            return
        try:
            entries = sorted(directory.iterdir())
        except OSError as exc:
            self.skip(directory, f"cannot list ({exc.__class__.__name__}: {exc.strerror or exc})", keep=True)
            return
        for path in entries:
            if is_hidden(path.name):
                continue
            self._visit(path, suffixes, recursive)

    def _enter(self, directory: Path) -> Path | None:
        """The folder's real path if it may be walked (inside, or outside and allowed; never twice)."""
        real = resolve_link(directory)
        if isinstance(real, str):
            self.skip(directory, real + ": skipped")
            return None
        if directory.is_symlink() and self.outside(real):
            if is_system_path(real):
                self.skip(directory, f"a link to {escape(str(real))}: system folders are never read")
                return None
            if not self.follow_external:
                self.skip(
                    directory,
                    f"a link to a folder outside the data directory ({escape(str(real))}): not walked ({ALLOW_HINT})",
                )
                return None
        info = real.stat()
        key = (info.st_dev, info.st_ino)
        if key in self.seen_dirs:
            self.skip(directory, "a folder already read (a link loop, or a second link to it): skipped")
            return None
        self.seen_dirs.add(key)
        return real

    def _visit(self, path: Path, suffixes: tuple[str, ...], recursive: bool) -> None:
        """One entry of a folder: a supported file is taken or skipped; a folder is walked if recursive."""
        real = resolve_link(path)
        if isinstance(real, str):
            if path.suffix.lower() in suffixes or (recursive and not path.suffix):
                self.skip(
                    path, real + ("" if real.startswith("broken") else ": skipped"), keep=real.startswith("broken")
                )
            return
        if real.is_dir():
            if recursive:
                self.walk(path, suffixes, recursive)
            return
        if path.suffix.lower() not in suffixes:
            return
        self._take(path, real)

    def _take(self, path: Path, real: Path) -> None:
        """A supported file: taken if it is a regular file the policy allows."""
        linked_out = path.is_symlink() and self.outside(real)
        if linked_out and is_system_path(real):
            self.skip(path, f"a link to {escape(str(real))}: system files are never read")
            return
        try:
            mode = real.stat().st_mode
        except OSError as exc:
            self.skip(path, f"cannot read ({exc.__class__.__name__}: {exc.strerror or exc})", keep=True)
            return
        if not stat.S_ISREG(mode):
            self.skip(path, "not a regular file (a FIFO, socket or device): skipped")
            return
        if linked_out and not self.follow_external:
            self.skip(
                path, f"a link to a file outside the data directory ({escape(str(real))}): not followed ({ALLOW_HINT})"
            )
            return
        self.result.files.append(path)


def walk_data_dir(
    data_dir: Path, folders: dict[str, tuple[str, ...]], recursive: set[str], follow_external: bool = False
) -> Walk:
    """The supported files under ``data_dir/<folder>`` (``folders``: folder -> suffixes; those in
    ``recursive`` are walked down), hidden names skipped, in folder order then by path."""
    walker = Walker(data_dir, follow_external)
    for folder, suffixes in folders.items():
        directory = data_dir / folder
        if directory.is_symlink() or directory.is_dir():
            walker.walk(directory, suffixes, folder in recursive)
    return walker.result


def link_refusal(path: Path, data_dir: Path, follow_external: bool = False) -> str | None:
    """Why the policy refuses one named file (a loop, a link out of the data dir, not a regular
    file), as one line; None when it may be read (or does not exist: the caller says so)."""
    if not path.is_symlink():
        return None
    real = resolve_link(path)
    walker = Walker(data_dir, follow_external)
    try:
        walker.doc_id(path)
    except ValueError:
        return None  # not under the data dir: the caller says so
    if isinstance(real, str):
        return None if real.startswith("broken") else f"{walker.doc_id(path)}: {real}"
    walker._take(path, real)
    problems = walker.result.problems
    return problems[0].reason if problems else None


@dataclass(frozen=True)
class SourceFile:
    """A file under the data dir, as a document: ID, path, file name and content hash."""

    doc_id: str
    path: Path
    name: str
    content_hash: str
