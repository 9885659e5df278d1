"""First-stage retrieval: vector, keyword and hybrid (Reciprocal Rank Fusion) search.

Every function returns new ``Document`` objects (inputs and store rows are never
mutated) with ``metadata['relevance_score']``:

* vector: ``1 - cosine distance``, also as ``vector_score`` (hybrid keeps it: the abstention signal);
* keyword: BM25 (computed in PostgreSQL) over the Japanese-aware tokens of app.text.keywords;
* hybrid: the RRF score, with ``vector_rank`` / ``keyword_rank`` (1-based, None if absent).

A source (a PDF page, a CSV row, a Markdown section) appears once in a result list, by its best
chunk: each search fetches COLLAPSE_DEPTH times ``k`` chunks and keeps the first chunk of each
source (:func:`best_per_source`), so ``k`` results are ``k`` different places to cite and the
three chunks the LLM gets are never two overlapping pieces of one page.

Versions (app.versions): every chunk a search returns carries ``metadata['superseded_by']`` (the
current version's doc_id; None when its document is current, alone, or its current version is one
the asker may not read) and ``metadata['effective']`` (ISO date, None when unknown), read at search
time from the documents' rows (:func:`current_first`, one primary-key lookup). A chunk of a past
version is moved just below the matching passage of the version in force when both were found
(:func:`prefer_current`), unless the question asks about the past.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from app import storage
from app.config import DEFAULT_HYBRID_WEIGHTS, DEFAULT_RRF_K, SEARCH_MODES
from app.storage import versions as storage_versions
from app.storage.scope import Scope
from app.storage.scores import RELEVANCE_SCORE_KEY
from app.text.keywords import query_tokens
from app.versions.preference import MATCH, asked_year, asks_about_past, in_force_on, trigrams

__all__ = [
    "SEARCH_MODES",
    "RELEVANCE_SCORE_KEY",
    "reciprocal_rank_fusion",
    "best_per_source",
    "vector_search",
    "keyword_search",
    "hybrid_search",
    "SearchRetriever",
    "VERSION_KEYS",
    "with_versions",
    "prefer_current",
    "current_first",
]

COLLAPSE_DEPTH = 3


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


def vector_search(
    vectorstore: Any,
    query: str,
    k: int,
    principals: Sequence[str],
    filter: dict | None = None,
    scope: Scope | None = None,
) -> list[Document]:
    """Top ``k`` chunks ``principals`` may read (within ``scope`` when given: app.storage.scope) by cosine
    distance (through the HNSW index), one per source, best first."""
    if not query or not query.strip():
        return []
    extra: dict[str, Any] = {"filter": filter} if filter else {}
    if scope:
        extra["scope"] = scope
    hits = vectorstore.similarity_search_with_score(query, k=k * COLLAPSE_DEPTH, principals=tuple(principals), **extra)
    return best_per_source(
        [
            _copy(
                doc,
                **{
                    RELEVANCE_SCORE_KEY: round(1.0 - float(distance), 6),
                    "vector_score": round(1.0 - float(distance), 6),
                },
            )
            for doc, distance in hits
        ],
        k,
    )


def keyword_search(
    engine: Any, collection_name: str, query: str, k: int, principals: Sequence[str], scope: Scope | None = None
) -> list[Document]:
    """Top ``k`` chunks ``principals`` may read (within ``scope`` when given) by BM25 over Japanese-aware
    tokens (candidates from the GIN index), one per source, best first."""
    narrowed = {"scope": scope} if scope else {}  # no scope: the call as before it existed
    rows = storage.keyword_search(
        engine, collection_name, query_tokens(query), k * COLLAPSE_DEPTH, principals, **narrowed
    )
    return best_per_source(
        [
            Document(
                page_content=document, id=id_, metadata={**(metadata or {}), RELEVANCE_SCORE_KEY: round(float(rank), 6)}
            )
            for id_, document, metadata, rank in rows
        ],
        k,
    )


def hybrid_search(
    by_vector: Sequence[Document],
    by_keyword: Sequence[Document],
    k: int,
    rrf_k: int = DEFAULT_RRF_K,
    weights: Sequence[float] = DEFAULT_HYBRID_WEIGHTS,
) -> list[Document]:
    """The two searches' result lists fused with RRF by source; the best ``k`` are returned (as
    langchain-postgres' ``reciprocal_rank_fusion`` takes its result lists).

    A source found by both searches (even through different chunks) sums both ranks and is
    shown by the vector search's chunk (it carries the ``vector_score``).
    """
    docs = {source_key(d): d for d in [*by_keyword, *by_vector]}
    vector_keys, keyword_keys = [source_key(d) for d in by_vector], [source_key(d) for d in by_keyword]
    fused = reciprocal_rank_fusion([vector_keys, keyword_keys], k=rrf_k, weights=weights)
    return [
        _copy(
            docs[name],
            **{
                RELEVANCE_SCORE_KEY: round(score, 6),
                "vector_rank": vector_keys.index(name) + 1 if name in vector_keys else None,
                "keyword_rank": keyword_keys.index(name) + 1 if name in keyword_keys else None,
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


VERSION_KEYS = ("superseded_by", "effective")


def with_versions(docs: Sequence[Document], versions: Mapping[str, Mapping[str, Any]]) -> list[Document]:
    """Copies of ``docs`` carrying ``superseded_by`` and ``effective`` (ISO) from ``versions`` (doc_id ->
    app.storage.versions.versions_of's row); both None for a document it does not list."""
    out = []
    for doc in docs:
        version = versions.get(doc.metadata.get("doc_id") or "", {})
        effective = version.get("effective")
        out.append(
            _copy(
                doc,
                superseded_by=version.get("superseded_by"),
                effective=effective.isoformat() if hasattr(effective, "isoformat") else effective,
            )
        )
    return out


def _wanted_versions(docs: Sequence[Document], year: int | None) -> dict[str, str]:
    """Family (its current version's doc_id) -> the doc_id the question wants: the current one, or with
    ``year`` the latest version among ``docs`` already in force that year (none: the family is left alone)."""
    families: dict[str, dict[str, str | None]] = {}
    for doc in docs:
        doc_id = doc.metadata.get("doc_id")
        if doc_id:
            family = doc.metadata.get("superseded_by") or doc_id
            families.setdefault(family, {})[doc_id] = doc.metadata.get("effective")
    wanted = {}
    for family, members in families.items():
        if len(members) < 2:
            continue
        if year is None:
            wanted[family] = family
            continue
        in_force = [(str(eff), doc_id) for doc_id, eff in members.items() if in_force_on(eff, year)]
        if in_force:
            wanted[family] = max(in_force)[1]
    return wanted


def prefer_current(docs: Sequence[Document], query: str) -> list[Document]:
    """``docs`` with each chunk of an unwanted version moved just below the chunk of the wanted version
    most like it (character trigrams, at least ``MATCH``), when that one ranks lower, its score lowered
    to that chunk's (:func:`_below`); other chunks keep their order. The wanted version is the current
    one; for a question naming a year, the one in force that year; a question asking about the past
    otherwise (旧, 以前, 改定前 …) keeps the order."""
    docs = list(docs)
    if not any(d.metadata.get("superseded_by") for d in docs):
        return docs
    year = asked_year(query)
    if year is None and asks_about_past(query):
        return docs
    wanted = _wanted_versions(docs, year)
    moves: dict[int, int] = {}
    grams: dict[int, set[str]] = {}  # each chunk's trigrams, made once

    def like(i: int, j: int) -> float:
        x, y = (grams.setdefault(n, trigrams(docs[n].page_content)) for n in (i, j))
        return len(x & y) / len(x | y) if x | y else 0.0

    for i, doc in enumerate(docs):
        doc_id = doc.metadata.get("doc_id")
        target = wanted.get(doc.metadata.get("superseded_by") or doc_id or "")
        if target is None or doc_id == target:
            continue
        anchors = [(like(i, j), j) for j, d in enumerate(docs) if d.metadata.get("doc_id") == target]
        score, j = max(anchors, key=lambda pair: (pair[0], -pair[1]), default=(0.0, -1))
        if score >= MATCH and j > i:
            moves[i] = j
    if not moves:
        return docs
    out: list[Document] = []
    for j, doc in enumerate(docs):
        if j in moves:
            continue
        out.append(doc)
        out.extend(_below(docs[i], doc) for i in sorted(moves) if moves[i] == j)
    return out


def _below(moved: Document, anchor: Document) -> Document:
    """``moved`` placed just under ``anchor``: its score capped at the anchor's, so that scores still fall
    down the list (the search's own kept as ``metadata['search_score']``)."""
    own, cap = moved.metadata.get(RELEVANCE_SCORE_KEY), anchor.metadata.get(RELEVANCE_SCORE_KEY)
    if own is None or cap is None or float(own) <= float(cap):
        return moved
    return _copy(moved, **{RELEVANCE_SCORE_KEY: cap, "search_score": own})


def current_first(
    engine: Any, collection_name: str, query: str, docs: Sequence[Document], principals: Sequence[str]
) -> list[Document]:
    """``docs`` carrying their versions (one lookup of their documents' rows, as ``principals``), past
    versions below the current ones (:func:`prefer_current`)."""
    doc_ids = [d.metadata["doc_id"] for d in docs if d.metadata.get("doc_id")]
    versions = storage_versions.versions_of(engine, collection_name, doc_ids, principals) if doc_ids else {}
    return prefer_current(with_versions(docs, versions), query)
