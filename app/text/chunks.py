"""Chunks: the one place a stored chunk is built (pure functions, no I/O).

A chunk is a LangChain ``Document`` whose ID is stable (collection, document ID, position in the
document and the hash of what is embedded) and whose metadata says where it came from: ``source``
(``file.pdf:p1``, ``faq.csv:r2`` …), ``chunk_index`` within that source, ``file``, ``context`` (the
line embedded and indexed above the text: a title, a heading path, a table's header), ``doc_id``,
``content_hash`` and ``embed_model``. The sync (app.ingestion.sync, files) and ``RagStore.add_document``
(Documents given through the API) both build their chunks with :func:`build_chunks`.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from langchain_core.documents import Document

ID_NAMESPACE = uuid.UUID("6f1b0c3e-2a4d-5e8f-9a1b-3c5d7e9f1a2b")


def text_hash(text: str) -> str:
    """Short hash of a chunk's text (the key for reusing its embedding)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def embedding_text(text: str, context: str = "") -> str:
    """What is embedded for a chunk: its context line, then its text."""
    return f"{context}\n{text}" if context else text


def chunk_id(collection: str, doc_id: str, index: int, content_hash: str) -> str:
    """Stable chunk ID from collection, document ID, position and the chunk's text hash."""
    return str(uuid.uuid5(ID_NAMESPACE, f"{collection}/{doc_id}#{index}@{content_hash}"))


def build_chunks(
    units: Iterable[tuple[str, str, str]],
    split: Callable[[str], list[str]],
    *,
    collection: str,
    doc_id: str,
    file: str,
    embed_model: str,
    titles: Mapping[str, str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Iterator[Document]:
    """The chunks of one document, lazily: each unit ``(text, source, context)`` cut by ``split``.

    ``chunk_index`` counts the pieces of one source (a PDF page cut at headings is several units of
    one source); the ID counts every piece of the document. ``titles`` gives a source its ``title``;
    ``metadata`` (a Document's own, for the API) goes under the keys set here.
    """
    position = 0
    per_source: dict[str, int] = {}
    for text, source, context in units:
        for piece in split(text):
            index = per_source[source] = per_source.get(source, -1) + 1
            digest = text_hash(embedding_text(piece, context))
            yield Document(
                id=chunk_id(collection, doc_id, position, digest),
                page_content=piece,
                metadata={
                    **(metadata or {}),
                    "source": source,
                    "chunk_index": index,
                    "file": file,
                    "context": context,
                    "doc_id": doc_id,
                    "content_hash": digest,
                    "embed_model": embed_model,
                    **({"title": titles[source]} if titles and source in titles else {}),
                },
            )
            position += 1


def row_pairs(text: str) -> list[tuple[str, str]]:
    """A table row chunk's ``column:value`` lines as ``(column, value)`` pairs, in order: the first colon
    splits; a line without one, or an indented one after the first pair, continues the value above."""
    cells: list[tuple[str, str]] = []
    for line in (text or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() and not (cells and name != name.strip()):
            cells.append((name.strip(), value.strip()))
        elif cells:
            cells[-1] = (cells[-1][0], f"{cells[-1][1]}\n{line}")
    return cells


# A table row's source: ``file.csv:r12``, ``book.xlsx:Sheet!r3``; the table is what comes before the row number.
ROW_SOURCE = re.compile(r"^(?P<table>.+?)[:!]r\d+$")


def row_source(file: str, number: int, sheet: str | None = None) -> str:
    """The source ID of a table's row ``number`` (1-based): ``file:rN``, or ``file:sheet!rN`` for a sheet of a
    workbook. The one format every row is cited by (CSV, Excel, the bulk loader, the table path)."""
    return f"{file}:{sheet}!r{number}" if sheet else f"{file}:r{number}"


def table_of(source: str) -> str | None:
    """The table a row's source belongs to (``countries.csv`` for ``countries.csv:r116``, ``b.xlsx:S`` for
    ``b.xlsx:S!r3``), or None for a source that is not a table row."""
    match = ROW_SOURCE.match(source or "")
    return match.group("table") if match else None
