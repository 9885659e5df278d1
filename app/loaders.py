"""Reading one source file into text units (pure file I/O: no database, no model).

* a PDF: :mod:`app.pdf` (one unit per section part of a page, source ``file.pdf:p1``), on the
  limits and helpers here;
* a CSV becomes one unit per data row (``column:value`` lines), source ``file.csv:r1``;
* a Markdown file becomes one unit per section (split at headings by LangChain's
  ``MarkdownHeaderTextSplitter``), source ``file.md#section-slug``, with its heading path;
  a plain-text file is one unit, source ``file.txt``.

Every failure to read or parse a file is raised as :class:`DataSourceError`
naming the file and the reason, so a sync can count that one file as failed and
go on with the others. Text is cleaned of NUL characters (PostgreSQL text
cannot hold them) wherever it comes from.
"""

from __future__ import annotations

import codecs
import io
import re
import time
from dataclasses import dataclass
from pathlib import Path

from app.datadir import escape
from app.errors import DataSourceError
from app.keywords import normalize_text

# Byte-order marks, longest first (a UTF-32-LE BOM starts with the UTF-16-LE one).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
CSV_ENCODINGS = ("utf-8", "cp932")  # without a BOM: UTF-8, then Shift_JIS/CP932


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes (read in 1 MiB blocks)."""
    import hashlib

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
    max_zip_mb: int = 2000  # MAX_ZIP_MB: uncompressed megabytes in one Office file (app.formats.zipguard)
    max_zip_entries: int = 20000  # MAX_ZIP_ENTRIES: entries in one Office file's zip

    @classmethod
    def from_settings(cls, settings) -> Limits:
        """The limits a :class:`app.config.Settings` sets."""
        return cls(
            settings.ingest.max_rows,
            settings.ingest.max_cell_chars,
            float(settings.ingest.parse_timeout_s),
            settings.ingest.max_zip_mb,
            settings.ingest.max_zip_entries,
        )


class Deadline:
    """The wall-clock budget for reading one file: :meth:`check` raises DataSourceError once it is
    spent, naming where the reader was (``page 7``), so a hostile file cannot hold a sync for long."""

    def __init__(self, name: str, seconds: float, clock=time.monotonic) -> None:
        self.name, self.seconds, self.clock = name, seconds, clock
        self.end = clock() + seconds

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


def looks_like_wide_text(raw: bytes) -> bool:
    """True for UTF-16/32 without a BOM (zero bytes on one parity: the high bytes of ASCII characters)
    or binary data (many zero bytes); a stray NUL in UTF-8 text is neither."""
    zeros = [i for i, b in enumerate(raw) if b == 0]
    if len(zeros) > len(raw) // 8:
        return True
    if len(zeros) < 4:  # a stray NUL or two is damage to strip, not an encoding
        return False
    odd = sum(i % 2 for i in zeros)
    return max(odd, len(zeros) - odd) >= 0.9 * len(zeros)


def decode_text(raw: bytes, name: str) -> str:
    """Decode a text file: by its BOM (UTF-8/16/32), else UTF-8, else CP932; NULs removed.

    DataSourceError if no encoding fits, or if the text still holds NULs after
    decoding without a BOM (UTF-16/32 without a BOM, or binary data).
    """
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                return strip_nul(raw.decode(encoding))
            except UnicodeDecodeError as exc:
                raise DataSourceError(f"{name}: invalid {encoding.upper()} text ({exc.reason})") from None
    if looks_like_wide_text(raw):  # CP932 would "decode" it into text full of NULs
        raise DataSourceError(
            f"{name}: looks like UTF-16/32 without a byte-order mark, or binary data; save it as UTF-8"
        )
    for encoding in CSV_ENCODINGS:
        try:
            return strip_nul(raw.decode(encoding))
        except UnicodeDecodeError:
            continue
    raise DataSourceError(f"{name}: not UTF-8, UTF-16/32 (with BOM) or Shift_JIS/CP932 text")


def read_csv_rows(path: Path, limits: Limits = Limits()) -> list[dict[str, str]]:
    """Read a CSV as a list of {column: value} dicts (UTF-8/16/32 by BOM, UTF-8 or CP932).

    Empty cells are left out. An empty file gives ``[]``. DataSourceError if the
    file cannot be read, decoded or parsed, or has more rows than ``limits.max_rows`` or a cell
    longer than ``limits.max_cell_chars``.
    """
    import pandas as pd

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataSourceError(
            f"{display_name(path)}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})"
        ) from exc
    if not raw.strip():
        return []
    text = decode_text(raw, display_name(path))
    if not text.strip():
        return []
    try:
        frame = pd.read_csv(
            io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True, nrows=limits.max_rows + 1
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise DataSourceError(f"{display_name(path)}: unreadable CSV ({reason})") from exc
    if len(frame) > limits.max_rows:
        raise DataSourceError(
            f"{display_name(path)}: more than MAX_ROWS={limits.max_rows} data rows; skipped "
            "(raise MAX_ROWS, or split the file)"
        )
    rows = []
    for number, record in enumerate(frame.to_dict(orient="records"), start=1):
        row = {str(k).strip(): str(v).strip() for k, v in record.items() if str(v).strip()}
        longest = max((len(v) for v in row.values()), default=0)
        if longest > limits.max_cell_chars:
            raise DataSourceError(
                f"{display_name(path)}: row {number} has a cell of {longest} characters, more than "
                f"MAX_CELL_CHARS={limits.max_cell_chars}; skipped (raise MAX_CELL_CHARS to read it)"
            )
        rows.append(row)
    return rows


def row_to_text(row: dict[str, str]) -> str:
    """Render a CSV row as ``column:value`` lines (§4.7)."""
    return "\n".join(f"{column}:{value}" for column, value in row.items())


def csv_table(path: Path, limits: Limits = Limits()) -> tuple[list[str], list[tuple[str, str]]]:
    """One CSV as ``(header, [("col:val\\n...", "file.csv:r1"), ...])``.

    DataSourceError if it cannot be decoded or parsed, has no data rows, or passes a limit.
    """
    records = read_csv_rows(path, limits)
    if not records:
        raise DataSourceError(f"{display_name(path)}: empty CSV (no data rows)")
    header = list(dict.fromkeys(column for record in records for column in record))
    rows = ((row_to_text(record), number) for number, record in enumerate(records, start=1))
    return header, [(text, f"{display_name(path)}:r{number}") for text, number in rows if text]


def csv_splitter(chunk_size: int, chunk_overlap: int):
    """LangChain's RecursiveCharacterTextSplitter with Japanese sentence and clause separators."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=min(chunk_overlap, chunk_size // 2),
        separators=["\n\n", "\n", "。", "、", " ", ""],
        keep_separator="end",
    )


MARKDOWN_HEADINGS = [("#" * level, f"h{level}") for level in range(1, 7)]


def heading_slug(heading: str) -> str:
    """A GitHub-style anchor for a heading: lower-case, punctuation dropped (letters and digits of
    any script kept), spaces to hyphens; ``section`` if nothing is left."""
    slug = re.sub(r"[^\w\- ]", "", normalize_text(heading).strip()).replace(" ", "-")
    return slug or "section"


def markdown_sections(text: str) -> list[tuple[list[str], str]]:
    """``[(heading path, body), ...]`` in file order; text before the first heading has an empty path.
    Headings inside code fences are not headings. Paragraph breaks are kept."""
    from langchain_text_splitters import MarkdownHeaderTextSplitter

    splitter = MarkdownHeaderTextSplitter(headers_to_split_on=MARKDOWN_HEADINGS, strip_headers=True)
    sections = []
    for doc in splitter.split_text(text):
        path = [doc.metadata[key] for _, key in MARKDOWN_HEADINGS if key in doc.metadata]
        # the splitter joins the lines of a section, marking blank-line breaks with "  \n"
        sections.append((path, doc.page_content.replace("  \n", "\n\n")))
    return sections


def text_document(path: Path, limits: Limits = Limits()) -> list[tuple[str, str, str]]:
    """A Markdown or plain-text file as ``[(text, source, heading path), ...]``: a section's source is
    ``file.md#slug`` of its own heading (``-1``, ``-2`` … for repeated headings), ``file.md`` before
    the first heading; the heading path is ``H1 > H2 > …``. DataSourceError if unreadable or empty."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataSourceError(
            f"{display_name(path)}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})"
        ) from None
    text = decode_text(raw, display_name(path))
    deadline = Deadline(display_name(path), limits.parse_timeout_s)
    sections = markdown_sections(text) if path.suffix.lower() == ".md" else [([], text)]
    deadline.check("the headings")
    units = section_units(display_name(path), sections)
    if not units:
        raise DataSourceError(f"{display_name(path)}: no text (an empty file)")
    return units


def section_units(name: str, sections: list[tuple[list[str], str]]) -> list[tuple[str, str, str]]:
    """``[(text, source, heading path), ...]`` for the non-blank sections (Markdown's, and Word's and
    HTML's through app.formats): a section's source is ``name#slug`` of its own heading (``-1``,
    ``-2`` … for a repeated one), ``name`` before the first heading; the heading path is ``H1 > H2 > …``."""
    units, seen = [], {}
    for headings, body in sections:
        source = name
        if headings:
            slug = heading_slug(headings[-1])
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            source = f"{name}#{slug}" + (f"-{count}" if count else "")
        if body.strip():
            units.append((body.strip(), source, " > ".join(headings)))
    return units
