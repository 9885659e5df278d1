"""Ask a question (§4.8): ``python -m app.ask "質問"`` runs the LangGraph workflow and
prints the answer and its sources."""

from __future__ import annotations

from functools import partial
from typing import Any

from app.config import Settings, get_settings, validate_mode
from app.models.resources import cached
from app.permissions.principals import FULL_ACCESS
from app.reranker import load_reranker, rerank_documents
from app.retrieval.reader import StoreReader
from app.retrieval.search import vector_search
from app.storage.scope import Scope
from app.storage.scores import RERANK_SCORE_KEY


def search(
    query: str,
    k: int | None = None,
    top_k: int | None = None,
    vectorstore: Any = None,
    reranker: Any = "load",
    settings: Settings | None = None,
    mode: str | None = None,
    search_fn: Any = None,
    scope: Scope | None = None,
) -> list[dict]:
    """The spec's search (§4.8): SEARCH_K candidates, then the workflow's own re-ranking down to RERANK_TOP_K.

    The first stage is ``search_fn(query, k)`` when given; else vector search over ``vectorstore`` when
    one is given (the spec's vector search, as the workflow's vector mode runs it); else the store's
    search for ``mode`` (SEARCH_MODE by default), the one a question's ``retrieve`` node runs. The
    candidates are re-ranked by app.reranker.rerank_documents, the rerank node's own step (and the
    compressor of the spec's ContextualCompressionRetriever, app.reranker.get_compression_retriever).
    Returns ``[{"content", "source", "chunk_index", "score"}, ...]`` best first, ``[]`` for a blank
    query. Without a cross-encoder (``reranker=None``, or none found locally) the first-stage order is
    kept and ``score`` is None. It reads with full access (FULL_ACCESS, on purpose): the spec's face is the
    owner's, at the command line; to search as a user, pass ``search_fn=store.search_function(mode, principals)``.
    ``scope`` (app.storage.scope.Scope: folders, formats, a date) narrows the first stage in its SQL (not a
    ``search_fn`` given: pass it to ``search_function`` then).
    """
    if not query or not query.strip():
        return []
    s = settings or get_settings()
    k = k or s.retrieval.search_k
    top_k = top_k or s.retrieval.rerank_top_k
    if search_fn is None and vectorstore is not None:
        search_fn = partial(
            vector_search, vectorstore, principals=FULL_ACCESS, scope=scope
        )  # the spec's face: full access
    if search_fn is None:
        mode = validate_mode(mode, s.retrieval.search_mode)
        search_fn = shared_store(s).search_function(mode, scope=scope)
    if reranker == "load":
        reranker = load_reranker(s)
    docs = rerank_documents(query, search_fn(query, k), reranker, top_k)
    return [
        {
            "content": d.page_content,
            "source": d.metadata.get("source", "unknown"),
            "chunk_index": d.metadata.get("chunk_index"),
            "score": d.metadata.get(RERANK_SCORE_KEY),
        }
        for d in docs
    ]


def shared_store(settings: Settings):
    """One store reader per settings for this process (opened on first use), so repeated searches reuse
    it; it reads with full access: the spec's ``search`` is the owner's, at the command line. Only the read
    side loads: asking never imports the sync (app.ingestion)."""
    return cached("store", settings, lambda: StoreReader(settings, principals=FULL_ACCESS))


def main(argv=None, context=None, out=None) -> int:
    """The spec's entry point (§4.8): the command line of :mod:`app.cli.ask`."""
    from app.cli.ask import main as run_cli

    return run_cli(argv, context, out)


if __name__ == "__main__":  # `python -m app.ask` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.ask", run_name="__main__")
