"""First-stage retrieval: turns store hits into scored Document copies (inputs never mutated)."""
from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

SCORE_KEY = "relevance_score"


def vector_search(vectorstore: Any, query: str, k: int) -> list[Document]:
    """Top ``k`` chunks by cosine distance (through the HNSW index), best first.

    Each result is a copy with ``metadata['relevance_score'] = 1 - cosine distance``.
    Returns ``[]`` for a blank query.
    """
    if not query or not query.strip():
        return []
    hits = vectorstore.similarity_search_with_score(query, k=k)
    return [
        Document(page_content=doc.page_content, id=doc.id,
                 metadata={**doc.metadata, SCORE_KEY: round(1.0 - float(distance), 6)})
        for doc, distance in hits
    ]
