"""A ``search_rag`` hit as MCP returns it: a 0-1 score monotone with rank, the snippet holding the most
of the query's terms, and where it comes from (source, document, page or row, offsets). Pure functions,
tested with exact values."""

from __future__ import annotations

import re

from langchain_core.documents import Document
from typing_extensions import TypedDict

from app.config import Settings
from app.text.keywords import query_tokens
from app.workflow.passages import normalized_with_map

SNIPPET_CHARS = 120
# keyword scores are BM25 sums (unbounded): score = bm25 / (bm25 + KEYWORD_SCORE_HALF) maps them to 0-1
KEYWORD_SCORE_HALF = 10.0
_LOCATION = re.compile(r":(p|r)(\d+)$")


class HitPayload(TypedDict, total=False):
    """Where a hit comes from; ``start``/``end`` locate the snippet in the chunk's text."""

    source: str
    document_id: str | None
    chunk_index: int | None
    start: int
    end: int
    page: int
    row: int


class SearchHit(TypedDict):
    """One ``search_rag`` result."""

    id: str
    score: float
    snippet: str
    payload: HitPayload


def normalized_score(doc: Document, mode: str, settings: Settings) -> float:
    """A 0-1 score, monotone with rank within one result list (documented in README):

    * vector: the cosine similarity, clipped to 0-1;
    * keyword: ``bm25 / (bm25 + 10)``;
    * hybrid: the RRF score divided by the best possible one (first in both lists), so 1.0 means
      ranked first by both searches.
    """
    raw = float(doc.metadata.get("relevance_score") or 0.0)
    if mode == "vector":
        value = raw
    elif mode == "keyword":
        value = raw / (raw + KEYWORD_SCORE_HALF) if raw > 0 else 0.0
    else:
        best = sum(w / (settings.retrieval.rrf_k + 1) for w in settings.retrieval.hybrid_weights)
        value = raw / best if best > 0 else 0.0
    return round(min(1.0, max(0.0, value)), 4)


def snippet_span(text: str, query: str, width: int = SNIPPET_CHARS) -> tuple[int, int]:
    """``(start, end)`` of the ``width``-character window of ``text`` holding the most occurrences of
    the query's tokens (bigrams, words); the first window if none occurs. Offsets are into ``text``."""
    if len(text) <= width:
        return 0, len(text)
    norm, where = normalized_with_map(text)
    hits: list[int] = []
    for token in query_tokens(query):
        start = norm.find(token)
        while start != -1:
            hits.append(where[start])
            start = norm.find(token, start + 1)
    if not hits:
        return 0, width
    hits.sort()
    best_start, best_count, j = hits[0], 0, 0
    for i, first in enumerate(hits):  # slide a window that starts at each hit
        while j < len(hits) and hits[j] < first + width:
            j += 1
        if j - i > best_count:
            best_start, best_count = first, j - i
    # centre the hits: start a little before the first one, never past the text's end
    last = max(h for h in hits if best_start <= h < best_start + width)
    start = max(0, min(best_start - (width - (last - best_start)) // 2, len(text) - width))
    return start, start + width


def payload(doc: Document, span: tuple[int, int]) -> HitPayload:
    """Where a hit comes from: source, document ID, page or row, chunk index, snippet offsets."""
    meta = doc.metadata
    source = str(meta.get("source", ""))
    out: HitPayload = {
        "source": source,
        "document_id": meta.get("doc_id"),
        "chunk_index": meta.get("chunk_index"),
        "start": span[0],
        "end": span[1],
    }
    match = _LOCATION.search(source)
    if match:
        out["page" if match.group(1) == "p" else "row"] = int(match.group(2))
    return out


def search_hit(doc: Document, query: str, mode: str, settings: Settings) -> SearchHit:
    """One ``search_rag`` result: ``{id, score, snippet, payload}``."""
    span = snippet_span(doc.page_content, query)
    return {
        "id": doc.id,
        "score": normalized_score(doc, mode, settings),
        "snippet": doc.page_content[span[0] : span[1]],
        "payload": payload(doc, span),
    }
