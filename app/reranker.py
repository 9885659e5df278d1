"""Re-ranking (§4.5): a cross-encoder scores (query, passage) pairs; loaded lazily once.

``get_reranker`` returns LangChain's ``CrossEncoderReranker`` (a subclass that
also records each passage's score in a copy of its metadata). When no
cross-encoder is available locally it raises ``ModelNotFoundError``; the graph
then keeps retrieval order (see ``graph.rerank_node``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document

from app.config import Settings, get_settings
from app.errors import ModelNotFoundError
from app.models import resolve_model_dir

if TYPE_CHECKING:
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_classic.retrievers.document_compressors import CrossEncoderReranker
    from langchain_core.retrievers import BaseRetriever

SCORE_KEY = "rerank_score"


def _scoring_reranker_class():
    """Build (once) a CrossEncoderReranker subclass that returns scored copies of documents."""
    from langchain_classic.retrievers.document_compressors import CrossEncoderReranker

    class ScoringCrossEncoderReranker(CrossEncoderReranker):
        """CrossEncoderReranker whose results carry ``metadata['rerank_score']`` (inputs untouched)."""

        def compress_documents(self, documents, query, callbacks=None):
            return score_documents(self.model, query, list(documents), self.top_n)

    return ScoringCrossEncoderReranker


def score_documents(model: Any, query: str, documents: Sequence[Document], top_n: int) -> list[Document]:
    """Score ``documents`` against ``query`` with a cross-encoder; return the best ``top_n`` as copies."""
    if not documents:
        return []
    scores = model.score([(query, doc.page_content) for doc in documents])
    ranked = sorted(zip(documents, scores), key=lambda pair: float(pair[1]), reverse=True)
    return [
        Document(page_content=doc.page_content, id=doc.id, metadata={**doc.metadata, SCORE_KEY: float(score)})
        for doc, score in ranked[:top_n]
    ]


def get_reranker(settings: Settings | None = None) -> CrossEncoderReranker:
    """Return the cross-encoder reranker (top_n = RERANK_TOP_K) for these settings, loading it on first use."""
    from app.resources import cached

    s = settings or get_settings()
    return cached("reranker", (s.reranker_model, str(s.models_dir), s.rerank_top_k), lambda: _load_reranker(s))


def _load_reranker(s: Settings) -> CrossEncoderReranker:
    path = resolve_model_dir(s.reranker_model, s.models_dir)
    if path is None:
        raise ModelNotFoundError(f"reranker model {s.reranker_model!r} not found locally; run `make models`")
    from langchain_community.cross_encoders import HuggingFaceCrossEncoder

    model = HuggingFaceCrossEncoder(model_name=str(path), model_kwargs={"device": "cpu"})
    return _scoring_reranker_class()(model=model, top_n=s.rerank_top_k)


def get_compression_retriever(
    base_retriever: BaseRetriever, reranker: CrossEncoderReranker | None = None
) -> ContextualCompressionRetriever:
    """Wrap ``base_retriever`` so its results are re-ranked by the cross-encoder."""
    from langchain_classic.retrievers import ContextualCompressionRetriever

    return ContextualCompressionRetriever(base_compressor=reranker or get_reranker(), base_retriever=base_retriever)


def rerank(query: str, docs: Sequence[dict] | None, top_k: int = 3, reranker: Any = None) -> list[dict]:
    """Re-rank dicts with a ``content`` key (and usually ``source``); return the best ``top_k``.

    Returns ``[]`` for None or empty input. Each result is a new dict with the
    input's keys plus ``score``. Raises ValueError if an item has no ``content``
    or ``top_k`` < 1.
    """
    if not docs:
        return []
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    for i, item in enumerate(docs):
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise ValueError(f"docs[{i}] must be a dict with a 'content' string")
    model = (reranker or get_reranker()).model
    as_docs = [Document(page_content=item["content"], metadata={"_index": i}) for i, item in enumerate(docs)]
    return [
        {**docs[d.metadata["_index"]], "score": d.metadata[SCORE_KEY]}
        for d in score_documents(model, query, as_docs, top_k)
    ]
