"""First-stage retrieval: vector, keyword and hybrid (Reciprocal Rank Fusion) search.

Every function returns new ``Document`` objects (inputs and store rows are never
mutated) with ``metadata['relevance_score']``:

* vector: ``1 - cosine distance``, also as ``vector_score`` (hybrid keeps it: the abstention signal);
* keyword: BM25 (computed in PostgreSQL) over the Japanese-aware tokens of app.keywords;
* hybrid: the RRF score, with ``vector_rank`` / ``keyword_rank`` (1-based, None if absent). A third
  ranking joins the fusion: the table rows (CSV, Excel) among the candidates with a cell the question
  names as a whole word (``日本の3文字の国コードは？`` names the row whose ``name_ja`` is ``日本``), the
  longest named cell first (``cell_rank``).

A source (a PDF page, a CSV row, a Markdown section) appears once in a result list, by its best
chunk: each search fetches COLLAPSE_DEPTH times ``k`` chunks and keeps the first chunk of each
source (:func:`best_per_source`), so ``k`` results are ``k`` different places to cite and the
three chunks the LLM gets are never two overlapping pieces of one page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from app.config import DEFAULT_HYBRID_WEIGHTS, DEFAULT_RRF_K, SEARCH_MODES

__all__ = [
    "SEARCH_MODES",
    "SCORE_KEY",
    "reciprocal_rank_fusion",
    "best_per_source",
    "vector_search",
    "keyword_search",
    "hybrid_search",
    "SearchRetriever",
]

SCORE_KEY = "relevance_score"
COLLAPSE_DEPTH = 3
# A table row's source: ``file.csv:r12``, ``book.xlsx:Sheet1!r3``.
ROW_SOURCE = re.compile(r"[:!]r[0-9]+$")
MIN_CELL_CHARS = 2  # shorter cells (``3``, ``有``) name nothing
MAX_ROWS_PER_CELL = 2  # a value more candidate rows hold (``東京``, ``有効``) picks no row
CELL_WEIGHT = 1.0  # the named-cell ranking's weight in the fusion (the other two: HYBRID_WEIGHTS)


def source_key(doc: Document) -> str:
    """What a result stands for: its ``metadata['source']``, else (no source) the chunk itself."""
    return doc.metadata.get("source") or f"id:{doc.id}"


def best_per_source(docs: Sequence[Document], k: int) -> list[Document]:
    """The first ``k`` documents whose :func:`source_key` was not seen before, in order."""
    seen: set = set()
    kept: list[Document] = []
    for doc in docs:
        source = source_key(doc)
        if source not in seen:
            seen.add(source)
            kept.append(doc)
            if len(kept) == k:
                break
    return kept


def row_cells(doc: Document) -> list[str]:
    """The cell values of a table-row chunk (its ``column:value`` lines), normalized as the keyword index
    normalizes text; ``[]`` for any other chunk."""
    from app.keywords import normalize_text

    if not ROW_SOURCE.search(str(doc.metadata.get("source") or "")):
        return []
    values = (line.split(":", 1)[1] for line in doc.page_content.splitlines() if ":" in line)
    return [v for v in (normalize_text(value).strip() for value in values) if len(v) >= MIN_CELL_CHARS]


def _word_class(char: str) -> str:
    """The script a character belongs to, for telling where a word ends: ``latin`` (letters, digits),
    ``kanji``, ``katakana``, ``hiragana`` or ``other``."""
    from app.keywords import KANJI, KATAKANA

    if char.isascii():
        return "latin" if char.isalnum() else "other"
    for name, chars in (("kanji", KANJI), ("katakana", KATAKANA), ("hiragana", "\u3040-\u309f")):
        if re.match(f"[{chars}]", char):
            return name
    return "other"


def names_cell(query: str, cell: str) -> bool:
    """Whether the normalized ``query`` holds ``cell`` as a whole word: not inside a longer run of the
    same script (``日本`` in ``日本の国コード``, not in ``日本語``; ``jp`` not in ``jpn``)."""
    start = query.find(cell)
    while start >= 0:
        end = start + len(cell)
        before = start == 0 or _word_class(query[start - 1]) != _word_class(cell[0])
        after = end == len(query) or _word_class(query[end]) != _word_class(cell[-1])
        if before and after:
            return True
        start = query.find(cell, start + 1)
    return False


def named_rows(query: str, docs: Sequence[Document]) -> list[str]:
    """The :func:`source_key` of the table rows among ``docs`` with a cell ``query`` names (see
    :func:`names_cell`), the longest named cell first, then in ``docs`` order; a value named by more than
    MAX_ROWS_PER_CELL of them picks none."""
    from app.keywords import normalize_text

    text = normalize_text(query)
    named = {source_key(d): [c for c in row_cells(d) if names_cell(text, c)] for d in docs}
    holders: dict[str, int] = {}
    for cells in named.values():
        for cell in set(cells):
            holders[cell] = holders.get(cell, 0) + 1
    longest = {
        key: max(len(c) for c in kept)
        for key, cells in named.items()
        if (kept := [c for c in cells if holders[c] <= MAX_ROWS_PER_CELL])
    }
    order = list(dict.fromkeys(source_key(d) for d in docs))
    return sorted(longest, key=lambda key: (-longest[key], order.index(key)))


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse ranked id lists: ``score(d) = Σ weight_i / (k + rank_i(d))`` (rank from 1).

    Returns ``[(id, score), ...]`` best first; ties keep the order in which ids
    were first seen (earlier rankings first).
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    weights = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for rank, key in enumerate(dict.fromkeys(ranking), start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def _copy(doc: Document, **extra: Any) -> Document:
    return Document(page_content=doc.page_content, id=doc.id, metadata={**doc.metadata, **extra})


def vector_search(vectorstore: Any, query: str, k: int, filter: dict | None = None) -> list[Document]:
    """Top ``k`` chunks by cosine distance (through the HNSW index), one per source, best first."""
    if not query or not query.strip():
        return []
    hits = vectorstore.similarity_search_with_score(
        query, k=k * COLLAPSE_DEPTH, **({"filter": filter} if filter else {})
    )
    return best_per_source(
        [
            _copy(doc, **{SCORE_KEY: round(1.0 - float(distance), 6), "vector_score": round(1.0 - float(distance), 6)})
            for doc, distance in hits
        ],
        k,
    )


def keyword_search(engine: Any, collection_name: str, query: str, k: int) -> list[Document]:
    """Top ``k`` chunks by BM25 over Japanese-aware tokens (candidates from the GIN index), one per
    source, best first."""
    from app import db
    from app.keywords import query_tokens

    rows = db.keyword_search(engine, collection_name, query_tokens(query), k * COLLAPSE_DEPTH)
    return best_per_source(
        [
            Document(page_content=document, id=id_, metadata={**(metadata or {}), SCORE_KEY: round(float(rank), 6)})
            for id_, document, metadata, rank in rows
        ],
        k,
    )


def hybrid_search(
    vector: Callable[[str, int], list[Document]],
    keyword: Callable[[str, int], list[Document]],
    query: str,
    k: int,
    rrf_k: int = DEFAULT_RRF_K,
    weights: Sequence[float] = DEFAULT_HYBRID_WEIGHTS,
) -> list[Document]:
    """``k`` candidates from each search, fused with RRF by source with the rows whose cell the question
    names (:func:`named_rows`, weight CELL_WEIGHT); the best ``k`` are returned.

    A source found by both searches (even through different chunks) sums both ranks and is
    shown by the vector search's chunk (it carries the ``vector_score``).
    """
    by_vector, by_keyword = vector(query, k), keyword(query, k)
    docs = {source_key(d): d for d in [*by_keyword, *by_vector]}
    vector_keys, keyword_keys = [source_key(d) for d in by_vector], [source_key(d) for d in by_keyword]
    cell_keys = named_rows(query, list(docs.values()))
    fused = reciprocal_rank_fusion([vector_keys, keyword_keys, cell_keys], k=rrf_k, weights=[*weights, CELL_WEIGHT])
    return [
        _copy(
            docs[name],
            **{
                SCORE_KEY: round(score, 6),
                "vector_rank": vector_keys.index(name) + 1 if name in vector_keys else None,
                "keyword_rank": keyword_keys.index(name) + 1 if name in keyword_keys else None,
                "cell_rank": cell_keys.index(name) + 1 if name in cell_keys else None,
            },
        )
        for name, score in fused[:k]
    ]


class SearchRetriever(BaseRetriever):
    """A LangChain retriever over a ``search(query, k)`` function (any mode)."""

    search: Callable[[str, int], list[Document]]
    k: int = 10

    def _get_relevant_documents(self, query: str, *, run_manager=None, k: int | None = None) -> list[Document]:
        """The best ``k`` (default: the retriever's ``k``) chunks for ``query``."""
        return self.search(query, k or self.k)
