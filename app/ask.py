"""Ask a question (§4.8): ``python -m app.ask "質問"`` runs the LangGraph workflow and
prints the answer and its sources."""
from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from app.config import Settings, get_settings
from app.errors import RagError


def search(query: str, k: int | None = None, top_k: int | None = None, vectorstore: Any = None,
           reranker: Any = "load", settings: Settings | None = None, mode: str | None = None,
           search_fn: Any = None) -> list[dict]:
    """First-stage search (SEARCH_K) then cross-encoder re-ranking (RERANK_TOP_K) via ContextualCompressionRetriever.

    The first stage is ``vectorstore.as_retriever`` when a vectorstore is given
    (the spec's vector search), else ``search_fn`` or the SEARCH_MODE search
    (hybrid by default). Returns ``[{"content", "source", "chunk_index", "score"}, ...]``
    best first, ``[]`` for a blank query. Without a cross-encoder the first-stage order is kept.
    """
    if not query or not query.strip():
        return []
    s = settings or get_settings()
    k = k or s.search_k
    top_k = top_k or s.rerank_top_k
    if vectorstore is not None:
        base = vectorstore.as_retriever(search_kwargs={"k": k})
    else:
        from app.retrieval import SearchRetriever

        if search_fn is None:
            from app.store import RagStore

            search_fn = RagStore(s).search_function(mode)
        base = SearchRetriever(search=search_fn, k=k)
    if reranker == "load":
        from app.graph import load_reranker

        reranker = load_reranker(s)
    if reranker is None:
        docs = base.invoke(query)[:top_k]
    else:
        from app.reranker import get_compression_retriever

        docs = get_compression_retriever(base, reranker).invoke(query)[:top_k]
    return [
        {"content": d.page_content, "source": d.metadata.get("source", "unknown"),
         "chunk_index": d.metadata.get("chunk_index"), "score": d.metadata.get("rerank_score")}
        for d in docs
    ]


def format_output(answer: str, sources: Sequence[str]) -> str:
    """The §4.8 output: an Answer section, then one ``- source`` line per source."""
    lines = ["=== Answer ===", answer.strip(), "", "=== Sources ==="]
    lines += [f"- {source}" for source in sources] or ["(none)"]
    return "\n".join(lines)


def ensure_ingested(settings: Settings) -> None:
    """RagError if the collection has no chunks yet (the user has not run ingest)."""
    from app.db import count_chunks, get_engine

    if count_chunks(get_engine(settings), settings.collection_name) == 0:
        raise RagError(f"the collection '{settings.collection_name}' is empty; run `make ingest` first")


def main(argv: Sequence[str] | None = None, context: Any = None) -> int:
    """CLI entry point: the question is the first argument (``sys.argv[1]``)."""
    from app.cli import run

    parser = argparse.ArgumentParser(prog="python -m app.ask", description=__doc__.split("\n")[0])
    parser.add_argument("query", nargs="*", help="the question (quote it)")
    parser.add_argument("--mode", choices=["hybrid", "vector", "keyword"], default=None,
                        help="first-stage search (default: SEARCH_MODE or hybrid)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)
    query = " ".join(args.query).strip()
    if not query:
        parser.print_usage(sys.stderr)
        print('Error: no question given; usage: make ask Q="質問文"', file=sys.stderr)
        return 2

    def body() -> int:
        from app.graph import default_context, run_rag

        settings = get_settings()
        ctx = context
        if ctx is None:
            ensure_ingested(settings)
            ctx = default_context(settings, mode=args.mode)
        state = run_rag(query, ctx)
        print(format_output(state["answer"], state["sources"]))
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
