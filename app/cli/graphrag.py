"""``make graph``: rebuild the graph of the collection from the stored chunks and links.

    python -m app.graphrag [--extract] [--no-wait]

The build takes the writer lock (like ingest). ``--extract`` extracts every stored chunk's entities
again first (it happens by itself when GRAPH_EXTRACTOR changed).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from app.cli import run
from app.cli.output import ensure_ingested
from app.config import get_settings
from app.errors import RagError
from app.graphrag import index
from app.llm import get_llm  # llama-cpp: loaded only when the graph is built by the LLM
from app.store import RagStore


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(prog="python -m app.graphrag", description=__doc__.split("\n")[0])
    parser.add_argument("--extract", action="store_true", help="extract every stored chunk's entities again first")
    parser.add_argument("--no-wait", action="store_true", help="fail at once if another writer is running")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)

    def body() -> int:
        settings = get_settings()
        if settings.graph.extractor == "off":
            raise RagError("GRAPH_EXTRACTOR is off: set it to fast (the default) or llm to build the graph")
        ensure_ingested(settings)
        store = RagStore(settings)
        llm = None
        if "llm" in (settings.graph.extractor, settings.graph.reports):
            llm = get_llm(settings)
        with store.writing(wait=not args.no_wait):
            report = index.build(store.engine, settings, store.embeddings, llm=llm, force_extract=args.extract)
        print(f"Graph: {report.summary()}")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
