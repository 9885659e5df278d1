"""What one file may make a reader do, and the helpers every reader shares: the file's hash, its
display name (control characters escaped), the wall-clock deadline, NUL stripping."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.errors import DataSourceError


def escape(name: str) -> str:
    """A file name as it may be printed: control characters (escape sequences, newlines) shown as
    ``\\x1b``, ``\\n`` … so a hostile name cannot move the cursor or forge a line."""
    return "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in name)


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Limits:
    """What one file may make a reader do (README, "Limits"); past one the file fails with one line."""

    max_rows: int = 1_000_000  # MAX_ROWS: data rows of one CSV
    max_cell_chars: int = 100_000  # MAX_CELL_CHARS: characters in one CSV cell
    parse_timeout_s: float = 300.0  # PARSE_TIMEOUT_S: wall-clock seconds to read one file
    max_zip_mb: int = 800  # MAX_ZIP_MB: uncompressed megabytes of the parts read (app.formats.zipguard)
    max_zip_entries: int = 20000  # MAX_ZIP_ENTRIES: entries in one Office file's zip
    max_file_chars: int = 2_000_000  # MAX_FILE_CHARS: characters of text one file may yield

    @classmethod
    def from_settings(cls, settings) -> Limits:
        """The limits a :class:`app.config.Settings` sets."""
        return cls(
            settings.ingest.max_rows,
            settings.ingest.max_cell_chars,
            float(settings.ingest.parse_timeout_s),
            settings.ingest.max_zip_mb,
            settings.ingest.max_zip_entries,
            settings.ingest.max_file_chars,
        )


class Deadline:
    """The wall-clock budget for reading one file: :meth:`check` raises DataSourceError once it is
    spent, naming where the reader was (``page 7``), so a hostile file cannot hold a sync for long."""

    def __init__(self, name: str, seconds: float, clock=time.monotonic) -> None:
        self.name, self.seconds, self.clock = name, seconds, clock
        self.end = clock() + seconds

    def remaining(self) -> float:
        """Seconds left of the budget (never below 1: a step given them still gets a chance to start)."""
        return max(1.0, self.end - self.clock())

    def check(self, where: str = "") -> None:
        """Raise DataSourceError if the budget is spent."""
        if self.clock() > self.end:
            at = f" (stopped at {where})" if where else ""
            raise DataSourceError(
                f"{self.name}: reading took longer than PARSE_TIMEOUT_S={self.seconds:g} s{at}; "
                "skipped (raise PARSE_TIMEOUT_S to read it)"
            )


def display_name(path: Path) -> str:
    """A file's name as sources and messages show it (control characters escaped)."""
    return escape(path.name)


def strip_nul(text: str) -> str:
    """``text`` without NUL characters (PostgreSQL text fields cannot contain them)."""
    return text.replace("\x00", "")


@contextmanager
def this_file_only(name: str, kind: str) -> Iterator[None]:
    """Whatever a parser raises inside is this file's one-line DataSourceError, never a crash of the sync:
    ``name: cannot read (...)`` for an OSError or MemoryError, ``name: unreadable <kind> (...)`` for any
    other error of a damaged file; a DataSourceError (a limit, an encrypted file) passes as it is. The one
    catch-and-wrap block of the format readers (PDF, Word, PowerPoint, Excel)."""
    try:
        yield
    except DataSourceError:
        raise
    except (OSError, MemoryError) as exc:
        raise DataSourceError(f"{name}: cannot read ({exc.__class__.__name__}: {exc})") from exc
    except Exception as exc:  # a damaged file: any parser error is this file's failure only
        raise DataSourceError(f"{name}: unreadable {kind} ({exc.__class__.__name__}: {exc})") from exc
