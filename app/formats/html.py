"""HTML pages (``.html``, ``.htm``): the main content, without navigation, cut at headings.

trafilatura finds the page's main content (menus, headers, footers and sidebars dropped; it decodes
the bytes by their BOM, ``<meta charset>`` or detection, Shift_JIS included) and gives it as
Markdown, which is then cut at its headings as a ``.md`` file is: source ``file.html#slug``, the
heading path as context. A page where trafilatura finds no main content is read whole (its text
without markup). No model, nothing fetched: links and images are not followed.

trafilatura cannot be stopped from inside and takes more than linear time (2 MB: 3 s, 49 MiB: past
seven minutes): a page over 1 MiB is read in a child process ended at ``PARSE_TIMEOUT_S``
(:mod:`app.formats.bounded`, for every format).
"""

from __future__ import annotations

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
    units = section_units(name, markdown_sections(markdown))
    if not units:
        raise DataSourceError(f"{name}: no text (an empty page)")
    return title, units
