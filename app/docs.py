"""Stored documents: ``python -m app.docs list`` and ``python -m app.docs remove <id|path>``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from app.config import get_settings
from app.datadir import escape


def format_documents(docs: Sequence[dict]) -> str:
    """A table: document ID, file, chunks, when ingested."""
    if not docs:
        return "No documents (run `make ingest`)."
    width = max(len("document"), *(len(escape(d["doc_id"])) for d in docs))
    lines = [f"{'document':<{width}}  {'chunks':>6}  ingested at"]
    for d in docs:
        when = d["ingested_at"].astimezone().strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"{escape(d['doc_id']):<{width}}  {d['chunks']:>6}  {when}")
    lines.append(f"{len(docs)} documents, {sum(d['chunks'] for d in docs)} chunks")
    return "\n".join(lines)


def format_graph(counts: dict) -> str:
    """One line on the graph: counts, when built, and whether chunks changed since."""
    if not counts or counts.get("built_at") is None:
        return "Graph: not built (run `make graph`)"
    when = counts["built_at"].astimezone().strftime("%Y-%m-%d %H:%M:%S")
    stale = "; documents changed since: run `make graph` or `make ingest`" if counts.get("dirty") else ""
    return (
        f"Graph: {counts['entities']} entities, {counts['relationships']} relationships, "
        f"{counts['communities']} communities, {counts['reports']} reports, {counts['links']} entity-chunk links "
        f"(built {when} by {counts['extractor']}{stale})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    from app.cli import run

    parser = argparse.ArgumentParser(prog="python -m app.docs", description=__doc__)
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="list stored documents")
    remove = sub.add_parser("remove", help="remove a document from every index")
    remove.add_argument("doc", help="document ID (e.g. csv/faq.csv), file path or file name")
    remove.add_argument("--no-wait", action="store_true", help="fail at once if another writer is running")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)

    def body() -> int:
        from app.store import RagStore

        store = RagStore(get_settings())
        if args.action == "list":
            documents = store.list_documents()
            print(format_documents(documents))
            if documents:
                from app.graphrag.search import GraphSearch

                print(format_graph(GraphSearch(store.settings, store.engine).counts()))
        else:
            removed = store.remove_document(args.doc, wait=not args.no_wait)
            print(f"Removed {escape(args.doc)} ({removed} chunks)")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
