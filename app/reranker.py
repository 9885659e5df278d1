"""Re-ranking (§4.5): a cross-encoder scores (query, passage) pairs; loaded lazily once.

:func:`rerank_documents` is the one re-ranking step: the workflow's rerank node, the spec's
``ask.search``, :func:`rerank` (dicts) and the compressor of :func:`get_compression_retriever`
(LangChain's ContextualCompressionRetriever pattern) all call it. ``get_reranker`` returns LangChain's
``CrossEncoderReranker`` (a subclass whose results are scored copies). When no cross-encoder is
available locally it raises ``ModelNotFoundError``; the callers then keep retrieval order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document

from app.config import Settings, get_settings
from app.errors import ModelNotFoundError
from app.models.locate import resolve_model_dir
from app.models.resources import cached
from app.storage.scores import RERANK_SCORE_KEY

if TYPE_CHECKING:
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_classic.retrievers.document_compressors import CrossEncoderReranker
    from langchain_core.retrievers import BaseRetriever

log = logging.getLogger(__name__)


def _scoring_reranker_class():
    """Build (once) a CrossEncoderReranker subclass that returns scored copies of documents."""
    from langchain_classic.retrievers.document_compressors import CrossEncoderReranker

    class ScoringCrossEncoderReranker(CrossEncoderReranker):
        """CrossEncoderReranker whose results carry ``metadata['rerank_score']`` (inputs untouched)."""

        def compress_documents(self, documents, query, callbacks=None):
            return rerank_documents(query, list(documents), self, self.top_n)

    return ScoringCrossEncoderReranker


def rerank_documents(query: str, documents: Sequence[Document], reranker: Any, top_k: int) -> list[Document]:
    """The best ``top_k`` of ``documents`` for ``query`` by the cross-encoder's score (``reranker.model``),
    as copies carrying ``metadata['rerank_score']`` (the inputs are not touched); with ``reranker`` None,
    the first ``top_k`` in retrieval order, unscored."""
    if reranker is None or not documents:
        return list(documents[:top_k])
    scores = reranker.model.score([(query, doc.page_content) for doc in documents])
    ranked = sorted(zip(documents, scores), key=lambda pair: float(pair[1]), reverse=True)
    return [
        Document(page_content=doc.page_content, id=doc.id, metadata={**doc.metadata, RERANK_SCORE_KEY: float(score)})
        for doc, score in ranked[:top_k]
    ]


def get_reranker(settings: Settings | None = None) -> CrossEncoderReranker:
    """Return the cross-encoder reranker (top_n = RERANK_TOP_K) for these settings, loading it on first use."""
    s = settings or get_settings()
    return cached(
        "reranker", (s.models.reranker_model, str(s.models.dir), s.retrieval.rerank_top_k), lambda: _load_reranker(s)
    )


def load_reranker(settings: Settings):
    """The cross-encoder reranker, or None if no model is available locally: a warning when RERANKER_MODEL
    names one that is missing; an info line when it is unset and the installed model set has none (the
    offline set: ``make models`` already said so, and retrieval order is what the user chose)."""
    try:
        return get_reranker(settings)
    except ModelNotFoundError as exc:
        say = log.info if settings.models.reranker_model_is_default else log.warning
        say("reranking is off: %s; keeping retrieval order for the top %d", exc, settings.retrieval.rerank_top_k)
        return None


def _load_reranker(s: Settings) -> CrossEncoderReranker:
    path = resolve_model_dir(s.models.reranker_model, s.models.dir)
    if path is None:
        raise ModelNotFoundError(f"reranker model {s.models.reranker_model!r} not found locally; run `make models`")
    from langchain_community.cross_encoders import HuggingFaceCrossEncoder

    model = HuggingFaceCrossEncoder(model_name=str(path), model_kwargs={"device": "cpu"})
    return _scoring_reranker_class()(model=model, top_n=s.retrieval.rerank_top_k)


def get_compression_retriever(
    base_retriever: BaseRetriever, reranker: CrossEncoderReranker | None = None
) -> ContextualCompressionRetriever:
    """Wrap ``base_retriever`` so its results are re-ranked by the cross-encoder."""
    from langchain_classic.retrievers import ContextualCompressionRetriever

    return ContextualCompressionRetriever(base_compressor=reranker or get_reranker(), base_retriever=base_retriever)


def rerank(query: str, docs: Sequence[dict] | None, top_k: int = 3, reranker: Any = None) -> list[dict]:
    """Re-rank dicts with a ``content`` key (and usually ``source``); return the best ``top_k``.

    Returns ``[]`` for None or empty input. Each result is a new dict with the
    input's keys plus ``score`` (:func:`rerank_documents` scores them). Raises ValueError
    if an item has no ``content`` or ``top_k`` < 1.
    """
    if not docs:
        return []
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    for i, item in enumerate(docs):
        if not isinstance(item, dict) or not isinstance(item.get("content"), str):
            raise ValueError(f"docs[{i}] must be a dict with a 'content' string")
    as_docs = [Document(page_content=item["content"], metadata={"_index": i}) for i, item in enumerate(docs)]
    return [
        {**docs[d.metadata["_index"]], "score": d.metadata[RERANK_SCORE_KEY]}
        for d in rerank_documents(query, as_docs, reranker or get_reranker(), top_k)
    ]
