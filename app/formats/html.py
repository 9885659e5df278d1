"""HTML pages (``.html``, ``.htm``): the main content, without navigation, cut at headings.

trafilatura finds the page's main content (menus, headers, footers and sidebars dropped; it decodes
the bytes by their BOM, ``<meta charset>`` or detection, Shift_JIS included) and gives it as
Markdown, which is then cut at its headings as a ``.md`` file is: source ``file.html#slug``, the
heading path as context. A page where trafilatura finds no main content is read whole (its text
without markup). No model, nothing fetched: links and images are not followed.

trafilatura drops the headings of pages it reads without an ``<article>`` or ``<main>`` (every heading of
DocBook-made and LibreOffice help pages, issue 39): the page's own ``<h1>``–``<h6>`` are read here and put
back into the Markdown, each before the first line that holds the text following it on the page
(:func:`with_headings`); a heading whose following text trafilatura dropped stays out.

trafilatura cannot be stopped from inside and takes more than linear time (2 MB: 3 s, 49 MiB: past
seven minutes): a page over 1 MiB is read in a child process ended at ``PARSE_TIMEOUT_S``
(:mod:`app.formats.bounded`, for every format).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from app.errors import DataSourceError
from app.formats.limits import Deadline, Limits, display_name, strip_nul
from app.formats.text import markdown_sections, section_units

DEFAULT_LIMITS = Limits()  # the defaults of every limit (app.config's defaults)


def _config():
    """trafilatura's settings, less its minimum sizes (made for news pages: a short intranet page is
    content too) and its signal-based timeout (a sync may run in a thread; PARSE_TIMEOUT_S applies)."""
    from trafilatura.settings import use_config

    config = use_config()
    for key in ("MIN_EXTRACTED_SIZE", "MIN_OUTPUT_SIZE", "MIN_EXTRACTED_COMM_SIZE", "MIN_OUTPUT_COMM_SIZE"):
        config.set("DEFAULT", key, "1")
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")
    return config


def main_text(raw: bytes) -> tuple[str, str]:
    """``(title, main content as Markdown)`` of an HTML page; the content is the whole page's text when
    no main content is found, '' when the page has no text at all."""
    import trafilatura

    markdown = trafilatura.extract(
        raw,
        output_format="markdown",
        include_tables=True,
        include_links=False,
        include_images=False,
        include_comments=False,
        include_formatting=True,
        favor_recall=True,
        with_metadata=False,
        config=_config(),
    )
    metadata = trafilatura.extract_metadata(raw)
    title = (metadata.title or "").strip() if metadata is not None else ""
    if not markdown or not markdown.strip():
        markdown = trafilatura.html2txt(raw) or ""
    return strip_nul(title), strip_nul(markdown)


_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SNIPPET_CHARS = 12  # characters of the text after a heading that place it in the Markdown
_MARKUP = re.compile(r"[\s*_`#|>\\\[\]()!~-]+")


def page_headings(raw: bytes) -> list[tuple[int, str, str]]:
    """``(level, heading text, the text after it)`` of each ``<h1>``–``<h6>`` of a page, in order; the text
    after a heading runs to the next heading, a line per text node (scripts and styles left out). One pass
    over the tree."""
    from lxml import etree
    from trafilatura.utils import load_html  # decodes as trafilatura does (BOM, <meta charset>, detection)

    root = load_html(raw)
    if root is None:
        return []
    found: list[list] = []  # [level, text, [pieces after it]]
    skip: object | None = None  # the heading, script or style element being passed over
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag if isinstance(el.tag, str) else ""
        if event == "start":
            if skip is None and tag in _HEADINGS:
                found.append([_HEADINGS[tag], " ".join(el.text_content().split()), []])
                skip = el
            elif skip is None and tag in ("script", "style"):
                skip = el
            elif skip is None and found and el.text:
                found[-1][2].append(el.text)
            continue
        if el is skip:
            skip = None
        if skip is None and found and el.tail:
            found[-1][2].append(el.tail)
    return [
        (level, text, "\n".join(" ".join(p.split()) for p in after if p.strip()))
        for level, text, after in found
        if text
    ]


def _plain(text: str) -> str:
    """``text`` compared with Markdown: NFKC, without whitespace and Markdown's marks."""
    return _MARKUP.sub("", unicodedata.normalize("NFKC", text)).casefold()


def with_headings(markdown: str, headings: list[tuple[int, str, str]]) -> str:
    """``markdown`` with each heading of :func:`page_headings` that it lacks put back as ``#``…``######``
    before the first line (after the previous heading's) holding the start of the text that follows the
    heading on the page, or in place of a line that is the heading's text alone. A heading whose following
    text is not found is left out; Markdown that already has headings is returned as it is."""
    lines = markdown.split("\n")
    if any(re.match(r"#{1,6} ", line) for line in lines):
        return markdown
    plain = [_plain(line) for line in lines]
    inserted: dict[int, list[str]] = {}
    replaced: dict[int, str] = {}
    cursor, pending = 0, []  # headings not placed yet: an enclosing one goes before the next placed one
    for level, text, after in headings:
        mark, own = "#" * level + " " + text, _plain(text)
        same = next((j for j in range(cursor, len(lines)) if plain[j] and plain[j] == own), None)
        if same is not None:
            replaced[same], cursor, pending = mark, same + 1, []
            continue
        spot = _first_line_of(after, plain, cursor)
        if spot is None or spot in replaced:
            pending.append((level, mark))
            continue
        enclosing = [m for lv, m in pending if lv < level]
        inserted.setdefault(spot, []).extend([*enclosing, mark])
        cursor, pending = spot, []
    out: list[str] = []
    for j, line in enumerate(lines):
        for mark in inserted.get(j, []):
            out += [mark, ""]
        out.append(replaced.get(j, line))
    return "\n".join(out)


def _first_line_of(after: str, plain: list[str], start: int) -> int | None:
    """The first line from ``start`` holding the start of one of the first text nodes of ``after`` (those
    trafilatura dropped, a table of contents, are passed over), or None."""
    for piece in after.splitlines()[:20]:
        key = _plain(piece)[:_SNIPPET_CHARS]
        if len(key) < 4:
            continue
        spot = next((j for j in range(start, len(plain)) if key in plain[j]), None)
        if spot is not None:
            return spot
    return None


def html_document(path: Path, limits: Limits = DEFAULT_LIMITS) -> tuple[str, list[tuple[str, str, str]]]:
    """An HTML page as ``(title, [(text, "file.html#slug", heading path), ...])``; the title is the
    page's ``<title>`` (or ''). DataSourceError if unreadable or without text."""
    name = display_name(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataSourceError(f"{name}: cannot read ({exc.__class__.__name__}: {exc.strerror or exc})") from None
    deadline = Deadline(name, limits.parse_timeout_s)
    try:
        title, markdown = main_text(raw)
    except DataSourceError:
        raise
    except (MemoryError, RecursionError) as exc:
        raise DataSourceError(f"{name}: unreadable HTML ({exc.__class__.__name__})") from exc
    except Exception as exc:  # a damaged page: any parser error is this file's failure only
        raise DataSourceError(f"{name}: unreadable HTML ({exc.__class__.__name__}: {exc})") from exc
    deadline.check("the main content")
    markdown = with_headings(markdown, page_headings(raw))
    units = section_units(name, markdown_sections(markdown))
    if not units:
        raise DataSourceError(f"{name}: no text (an empty page)")
    return title, units
