"""What a source looks like on the page: a PDF page opens in the browser's own viewer at its page, a
CSV/Excel row is a small table of its columns, a Markdown section is rendered (app.web.markdown), any
other section or slide is its text.

Only what the store holds is shown: a source is looked up among the stored chunks, a file among the
stored documents (its ID, never a path from the request), and the file must lie inside the data
folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from app.storage.doc_ids import document_path
from app.text.chunks import row_pairs
from app.web.markdown import markdown_blocks

_KINDS = (
    (re.compile(r":p(\d+)$"), "page"),  # guide.pdf:p3 (and scans: scan.tif:p2)
    (re.compile(r"(?::|!)r(\d+)$"), "row"),  # faq.csv:r2, ledger.xlsx:経費!r12
    (re.compile(r":s(\d+)$"), "slide"),  # training.pptx:s3
)


def source_kind(source: str) -> tuple[str, int | None]:
    """``("page", 3)``, ``("row", 2)``, ``("slide", 3)``, or ``("section", None)`` for the rest
    (``file.md#slug``, ``file.txt``)."""
    for pattern, kind in _KINDS:
        found = pattern.search(source)
        if found:
            return kind, int(found.group(1))
    return "section", None


def source_view(chunks: list[dict], source: str) -> dict[str, Any] | None:
    """The view of one stored source from its ``chunks`` (app.storage.source_chunks, read as who
    asks): kind, number, document ID, context line, its text (chunks joined) and, for a row, its
    cells; None when there are none (no such source, or not the asker's to read)."""
    if not chunks:
        return None
    kind, number = source_kind(source)
    text = "\n".join(chunk["text"] for chunk in chunks)
    return {
        "source": source,
        "kind": kind,
        "number": number,
        "doc_id": chunks[0]["doc_id"],
        "context": chunks[0]["context"],
        "title": chunks[0]["title"],
        "text": text,
        "cells": row_pairs(chunks[0]["text"]) if kind == "row" else [],
        "blocks": markdown_blocks(text) if kind == "section" and is_markdown(chunks[0]["doc_id"]) else [],
    }


def is_markdown(doc_id: str) -> bool:
    """Whether a stored document is Markdown (its sections are rendered on the page)."""
    return doc_id.lower().endswith((".md", ".markdown"))


def document_file(documents: Iterable[Mapping[str, Any]], data_dir: Path, doc_id: str) -> Path | None:
    """The stored document ``doc_id``'s file inside ``data_dir``; None when none of ``documents`` (those
    the asker may read) has that ID, or its file is gone or lies outside the folder (a link pointing elsewhere)."""
    if doc_id not in {str(d.get("doc_id")) for d in documents}:
        return None
    root = data_dir.resolve()
    found = document_path(root, doc_id)  # the ID is NFC; the name on disk may be NFD (copied from a Mac)
    path = found.resolve() if found is not None else None
    if path is None or not path.is_relative_to(root) or not path.is_file():
        return None
    return path
