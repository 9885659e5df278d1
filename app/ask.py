"""Ask a question (§4.8): ``python -m app.ask "質問"`` runs the LangGraph workflow and
prints the answer and its sources."""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from app.config import Settings, get_settings, validate_mode
from app.errors import RagError
from app.reranker import SCORE_KEY, load_reranker, rerank_documents
from app.retrieval import vector_search


def search(
    query: str,
    k: int | None = None,
    top_k: int | None = None,
    vectorstore: Any = None,
    reranker: Any = "load",
    settings: Settings | None = None,
    mode: str | None = None,
    search_fn: Any = None,
) -> list[dict]:
    """The spec's search (§4.8): SEARCH_K candidates, then the workflow's own re-ranking down to RERANK_TOP_K.

    The first stage is ``search_fn(query, k)`` when given; else vector search over ``vectorstore`` when
    one is given (the spec's vector search, as the workflow's vector mode runs it); else the store's
    search for ``mode`` (SEARCH_MODE by default), the one a question's ``retrieve`` node runs. The
    candidates are re-ranked by app.reranker.rerank_documents, the rerank node's own step (and the
    compressor of the spec's ContextualCompressionRetriever, app.reranker.get_compression_retriever).
    Returns ``[{"content", "source", "chunk_index", "score"}, ...]`` best first, ``[]`` for a blank
    query. Without a cross-encoder (``reranker=None``, or none found locally) the first-stage order is
    kept and ``score`` is None.
    """
    if not query or not query.strip():
        return []
    s = settings or get_settings()
    k = k or s.retrieval.search_k
    top_k = top_k or s.retrieval.rerank_top_k
    if search_fn is None and vectorstore is not None:
        search_fn = partial(vector_search, vectorstore)
    if search_fn is None:
        mode = validate_mode(mode, s.retrieval.search_mode)
        search_fn = shared_store(s).search_function(mode)
    if reranker == "load":
        reranker = load_reranker(s)
    docs = rerank_documents(query, search_fn(query, k), reranker, top_k)
    return [
        {
            "content": d.page_content,
            "source": d.metadata.get("source", "unknown"),
            "chunk_index": d.metadata.get("chunk_index"),
            "score": d.metadata.get(SCORE_KEY),
        }
        for d in docs
    ]


def shared_store(settings: Settings):
    """One RagStore per settings for this process (opened on first use), so repeated searches reuse it."""
    from app.resources import cached
    from app.store import RagStore

    return cached("store", settings, lambda: RagStore(settings))


def format_sources(sources: Sequence[str], cited: Sequence[str] | None = None, abstained: bool = False) -> str:
    """The Sources section: a header and one ``- source`` line per source.

    With ``cited`` (the sources the answer cites), those come first and the
    others are marked ``(not cited)``; after an abstention they are the closest
    sources found, and the header says so.
    """
    header = "=== Sources (closest; they do not answer the question) ===" if abstained else "=== Sources ==="
    if cited is None or abstained:
        lines = [f"- {source}" for source in sources]
    else:
        lines = [f"- {source}" for source in cited]
        lines += [f"- {source} (not cited)" for source in sources if source not in cited]
    return "\n".join([header] + (lines or ["(none)"]))


def format_output(
    answer: str,
    sources: Sequence[str],
    cited: Sequence[str] | None = None,
    abstained: bool = False,
    quote: str | None = None,
) -> str:
    """The §4.8 output: an Answer section (the answer, then the ``根拠: 「…」[n]`` line quoting the context
    it was taken from, when found), then one ``- source`` line per source."""
    body = answer.strip() + (f"\n{quote}" if quote else "")
    return f"=== Answer ===\n{body}\n\n{format_sources(sources, cited, abstained)}"


def unsupported_note(unstated: Sequence[str], answer: str, kind: str = "unsupported") -> str:
    """After a streamed answer that states numbers (``unsupported``) or words (``unstated``) no document
    holds: the withdrawal, naming them, and the real answer."""
    if kind == "unstated":
        named = "、".join(f"「{w}」" for w in unstated)
        return f"（取り消し: 上の回答の{named or '内容'}はどの資料にも書かれていません）\n{answer}"
    return f"（取り消し: 上の回答の数値 {'、'.join(unstated)} はどの資料にも書かれていません）\n{answer}"


def ensure_ingested(settings: Settings) -> None:
    """RagError if nothing is stored yet (the user has not run ingest); a read: creates nothing."""
    from app.db import check_schema, count_chunks, get_engine

    engine = get_engine(settings)
    check_schema(engine, settings.retrieval.collection_name)
    if count_chunks(engine, settings.retrieval.collection_name) == 0:
        raise RagError(f"the collection '{settings.retrieval.collection_name}' is empty; run `make ingest` first")


class TokenPrinter:
    """Writes streamed pieces to a stream: leading whitespace dropped, trailing whitespace held
    back until more text follows (so the output matches the non-streamed answer)."""

    def __init__(self, out):
        self.out, self.started, self.pending = out, False, ""

    def __call__(self, piece: str) -> None:
        if not self.started:
            piece = piece.lstrip()
            if not piece:
                return
            self.started = True
        text = self.pending + piece
        body = text.rstrip()
        self.pending = text[len(body) :]
        if body:
            self.out.write(body)
            self.out.flush()


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB.

    Reads VmHWM (reset by exec) rather than ru_maxrss, which on Linux carries the
    parent's peak into a child started with fork + exec.
    """
    import resource
    from pathlib import Path

    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timing_report(state: dict, first_token_at: float | None) -> str:
    """One JSON line for ``--timings``: the mode that answered, per-node seconds, peak RSS, process
    start to first token."""
    import json

    peak_mb = peak_rss_mb()
    return json.dumps(
        {
            "mode": state.get("mode"),
            "route_reason": state.get("route_reason"),
            "timings": state.get("timings", {}),
            "peak_rss_mb": round(peak_mb, 1),
            "process_start_to_first_token_s": first_token_at,
        },
        ensure_ascii=False,
    )


JSON_KEYS = (
    "answer",
    "quote",
    "sources",
    "cited_sources",
    "warnings",
    "mode",
    "route_reason",
    "abstained",
    "evidence_shown",
    "model_answer",
    "confidence",
    "graph",
    "traceability",
    "map_results",
    "timings",
)


def json_report(state: dict, seconds: float | None = None) -> str:
    """``--json``: the question's answer, sources, the mode chosen (and why), the graph's IDs
    (local), the traceability and map results (global), the timings and peak RSS."""
    import json

    payload = {key: state[key] for key in JSON_KEYS if key in state}
    payload["query"] = state.get("query")
    payload["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if seconds is not None:
        payload["process_seconds"] = round(seconds, 3)
    return json.dumps(payload, ensure_ascii=False, default=str)


def _process_age() -> float:
    """Seconds since this process started (for the cold-start figure)."""
    import psutil

    return time.time() - psutil.Process().create_time()


if __name__ == "__main__":  # `python -m app.ask` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.ask", run_name="__main__")
