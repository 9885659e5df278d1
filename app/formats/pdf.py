"""Reading a PDF into text units (pypdf): the text of each page cleaned of layout line breaks, cut
before each heading found by font size, each part with the path of headings above it; pages without
a text layer read by OCR when a reader is given (app.formats.ocr). Pure file I/O, no database."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from pathlib import Path

from app.errors import DataSourceError
from app.formats.limits import Deadline, Limits, display_name, strip_nul, this_file_only

_SENTENCE_END = tuple("。！？!?」』）)：:")


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

    with this_file_only(display_name(path), "PDF"):
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
