"""Plain text and Markdown files: decoding (UTF-8/16/32 by BOM, UTF-8, else CP932) and Markdown cut at
headings (LangChain's ``MarkdownHeaderTextSplitter``), one unit per section, source ``file.md#slug``;
a plain-text file is one unit, source ``file.txt``. Every failure is a one-line DataSourceError."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from app.errors import DataSourceError
from app.formats.limits import Deadline, Limits, display_name, strip_nul
from app.text.keywords import normalize_text

# Byte-order marks, longest first (a UTF-32-LE BOM starts with the UTF-16-LE one).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


CSV_ENCODINGS = ("utf-8", "cp932")  # without a BOM: UTF-8, then Shift_JIS/CP932


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
