"""Reading one source file into text units (pure file I/O: no database, no model).

* a PDF becomes one unit per section part of a page (cut before each heading found by font
  size), source ``file.pdf:p1``, with its heading path;
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
import math
import re
import time
import unicodedata
from collections import Counter
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
_SENTENCE_END = tuple("。！？!?」』）)：:")


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
            settings.max_rows,
            settings.max_cell_chars,
            float(settings.parse_timeout_s),
            settings.max_zip_mb,
            settings.max_zip_entries,
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


def _display_width(line: str) -> int:
    """Width in half-width cells: CJK full-width characters count 2."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def clean_pdf_text(text: str) -> str:
    """Undo PDF line wrapping: join wrapped lines, keep paragraph and heading breaks.

    A line is taken as wrapped when it is nearly as wide as the widest line of
    its block and does not end a sentence; it is then joined to the next line
    directly (Japanese) or with a space (between Latin words). Other line
    breaks stay; blank lines stay as paragraph breaks. NULs are removed.
    """
    blocks = []
    for block in strip_nul(text).replace("\r\n", "\n").split("\n\n"):
        lines = [line.strip() for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        full = max(_display_width(line) for line in lines)
        out = lines[0]
        for prev, line in zip(lines, lines[1:]):
            wrapped = _display_width(prev) >= 0.8 * full and not prev.endswith(_SENTENCE_END)
            if not wrapped:
                out += "\n" + line
            elif prev[-1].isascii() and prev[-1].isalnum() and line[0].isascii() and line[0].isalnum():
                out += " " + line
            else:
                out += line
        blocks.append(out)
    return "\n\n".join(blocks)


def read_pdf(path: Path) -> tuple[str, list[str]]:
    """Return the PDF's title (its metadata title, else the file stem) and the text of each page.

    DataSourceError if it cannot be read.
    """
    title, pages = read_pdf_layout(path)
    return title, [text for text, _ in pages]


def read_pdf_layout(path: Path, limits: Limits = Limits()) -> tuple[str, list[tuple[str, list[float]]]]:
    """Like :func:`read_pdf`, with the font size of each line of a page's text beside the text.

    DataSourceError if it cannot be read, or reading takes longer than ``limits.parse_timeout_s``
    (checked at every content-stream operation, so one slow page cannot hold it long).

    pypdf raises many kinds of exceptions on damaged files (NotImplementedError,
    LimitReachedError, RecursionError, ...), while parsing and while extracting;
    every one of them means "this file is unreadable", never a crash of the sync.
    """
    from pypdf import PdfReader

    try:
        deadline = Deadline(display_name(path), limits.parse_timeout_s)
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise DataSourceError(f"{display_name(path)}: encrypted PDF (decrypt it first)")
        pages = [
            _page_layout(page, lambda n=number: deadline.check(f"page {n}"))
            for number, page in enumerate(reader.pages, start=1)
        ]
        title = strip_nul(str((reader.metadata or {}).get("/Title") or "")).strip()
        return (title if title.lower() not in ("", "untitled") else path.stem), pages
    except DataSourceError:
        raise
    except (OSError, MemoryError) as exc:
        raise DataSourceError(f"{display_name(path)}: cannot read ({exc.__class__.__name__}: {exc})") from exc
    except Exception as exc:  # a damaged PDF: any parser error is this file's failure only
        raise DataSourceError(f"{display_name(path)}: unreadable PDF ({exc.__class__.__name__}: {exc})") from exc


def _page_layout(page, check=lambda: None) -> tuple[str, list[float]]:
    """A pypdf page's extracted text and the rendered font size of each of its lines
    (``text.split("\\n")``): the size (font size times the text and graphics scaling) most of
    the line's characters are drawn in, 0.0 for a blank line.

    pypdf hands its visitor exactly the pieces its text is made of, so the pieces' sizes fall on
    the text's lines without any guessing. ``check()`` runs before every content-stream operation
    (the file's time budget).
    """
    pieces: list[tuple[str, float]] = []

    def visit(text, cm, tm, font, size):
        scale = math.hypot(tm[2], tm[3]) * math.hypot(cm[2], cm[3])
        pieces.append((text, round(float(size) * scale, 1)))

    check()
    text = page.extract_text(visitor_text=visit, visitor_operand_before=lambda *_: check()) or ""
    if "".join(piece for piece, _ in pieces) != text:  # not pypdf's contract: no sizes, no headings
        return text, [0.0] * len(text.split("\n"))
    lines: list[Counter] = [Counter()]
    for piece, size in pieces:
        for i, part in enumerate(piece.split("\n")):
            if i:
                lines.append(Counter())
            lines[-1][size] += len(part.strip())
    return text, [sizes.most_common(1)[0][0] if sum(sizes.values()) else 0.0 for sizes in lines]


def read_pdf_pages(path: Path) -> list[str]:
    """Return the text of each page of ``path``; DataSourceError if it cannot be read."""
    return read_pdf(path)[1]


_HEADING_START = re.compile(
    r"^(第[0-9０-９一二三四五六七八九十百]+[章節条部編]|[0-9０-９]+(?:[.．][0-9０-９]+)*[.．][\s　]?\S|[■□●◆【])"
)
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def page_heading(text: str) -> str:
    """The heading a page starts with, if any, else ''.

    A first line of at most 40 characters that is numbered (``3.1.``, ``第2章``) or marked
    (■, 【); or a short (≤ 25) Japanese line with no sentence end, colon or trailing comma.
    """
    stripped = text.strip()
    first = stripped.split("\n", 1)[0].strip()
    if not first or len(first) > 40 or "\n" not in stripped:
        return ""
    if _HEADING_START.match(first):
        return first
    plain = (
        len(first) <= 25
        and _JAPANESE.search(first)
        and not any(c in first for c in ":：")
        and not first.endswith(_SENTENCE_END + (".", "、", "，", ","))
    )
    return first if plain else ""


HEADING_SCALE = 1.15  # a line drawn this much larger than the body text is a heading
HEADING_MAX_CHARS = 80
RUNNING_HEADER_PAGES = 3  # the same large line on more pages than this is a running header


def _compact(text: str) -> str:
    """``text`` without whitespace (pypdf's text and its drawn lines differ in spacing only)."""
    return re.sub(r"\s+", "", text)


def heading_levels(pages: list[tuple[str, list[float]]]) -> list[list[int | None]]:
    """Each page line's heading level by font size (0 = largest), None for body text.

    ``pages`` are ``(text, size of each line)`` (:func:`read_pdf_layout`). The body size is the
    size most characters of the document have; a line at least HEADING_SCALE times larger, of at
    most HEADING_MAX_CHARS characters with a letter or digit, is a heading, unless the same text is
    that large on more than RUNNING_HEADER_PAGES pages (a running header). A document drawn in one
    size has no headings.
    """
    weights: Counter = Counter()
    for text, sizes in pages:
        for line, size in zip(text.split("\n"), sizes):
            weights[size] += len(line.strip())
    body = weights.most_common(1)[0][0] if weights else 0.0
    if body <= 0:  # no text, or sizes pypdf could not tell: no headings
        return [[None] * len(sizes) for _, sizes in pages]

    def large(line: str, size: float) -> bool:
        return (
            size >= body * HEADING_SCALE
            and 0 < len(_compact(line)) <= HEADING_MAX_CHARS
            and bool(re.search(r"\w", line))
        )

    spread = Counter(
        text
        for page_text, sizes in pages
        for text in {_compact(line) for line, size in zip(page_text.split("\n"), sizes) if large(line, size)}
    )
    marks = [
        [
            size if large(line, size) and spread[_compact(line)] <= RUNNING_HEADER_PAGES else None
            for line, size in zip(text.split("\n"), sizes)
        ]
        for text, sizes in pages
    ]
    ranks = {
        size: level
        for level, size in enumerate(
            sorted({size for page in marks for size in page if size is not None}, reverse=True)
        )
    }
    return [[None if size is None else ranks[size] for size in page] for page in marks]


def split_at_headings(text: str, levels: list[int | None]) -> list[tuple[int | None, str, str]]:
    """Cut a page's text before each heading line: ``[(level, heading, section text), ...]``.

    ``levels`` holds each line's heading level (None: body text). The part before the first
    heading has level None and heading ''; it is left out when blank. A heading drawn over
    several lines (consecutive lines of one level) is one heading; its lines stay in the text.
    """
    parts: list[tuple[int | None, list[str], list[str]]] = [(None, [], [])]  # level, heading lines, text lines
    body = False  # the current part has text under its heading
    for line, level in zip(text.split("\n"), levels):
        current, heading, lines = parts[-1]
        if level is None:
            lines.append(line)
            body = body or bool(line.strip())
        elif current == level and not body:
            heading.append(line.strip())
            lines.append(line)
        else:
            parts.append((level, [line.strip()], [line]))
            body = False
    return [
        (level, " ".join(heading), "\n".join(lines))
        for level, heading, lines in parts
        if level is not None or "".join(lines).strip()
    ]


def pdf_document(path: Path, limits: Limits = Limits(), ocr=None) -> tuple[str, list[tuple[str, str, str]]]:
    """One PDF as ``(title, [(text, "file.pdf:p1", heading path), ...])`` (no unit without text).

    Headings are found by font size (:func:`heading_levels`): a page is cut before each heading,
    and each part carries the path of headings above it (``4章 > 4.2. copyright``), kept across
    pages until the next heading. A PDF drawn in one font size falls back to
    :func:`page_heading`: one unit per page, under the last page-top heading seen. A heading with no
    text under it on its page is carried to the next part only (its text is in that part's path).

    ``ocr(path, numbers, page_count)`` (:meth:`app.formats.ocr.Ocr.pdf_pages`), when given, reads the
    pages without a text layer (scans): ``{number: text}``; their lines have no font size.

    DataSourceError if the file is corrupt or encrypted, or has no extractable text
    at all (a scanned, image-only PDF needs OCR first).
    """
    title, pages = read_pdf_layout(path, limits)
    blank = [number for number, (text, _) in enumerate(pages, start=1) if not text.strip()]
    if ocr is not None and blank:
        read = ocr(path, blank, len(pages))
        pages = [
            (read[number], [0.0] * len(read[number].split("\n"))) if number in read else page
            for number, page in enumerate(pages, start=1)
        ]
    levels = heading_levels(pages)
    units: list[tuple[str, str, str]] = []
    stack: list[tuple[int, str]] = []
    fallback = ""
    by_size = any(level is not None for page in levels for level in page)
    for number, ((raw, _), headings) in enumerate(zip(pages, levels), start=1):
        source = f"{display_name(path)}:p{number}"
        if not by_size:
            text = clean_pdf_text(raw)
            if text:
                fallback = page_heading(text) or fallback
                units.append((text, source, fallback))
            continue
        for level, heading, part in split_at_headings(raw, headings):
            if level is not None:
                stack = [(lv, h) for lv, h in stack if lv < level] + [(level, heading)]
            text = clean_pdf_text(part)
            if text and _compact(text) != _compact(heading):
                units.append((text, source, " > ".join(h for _, h in stack)))
    if not units:
        raise DataSourceError(
            f"{display_name(path)}: no extractable text (an image-only or scanned PDF? run OCR first)"
        )
    return title, units


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
