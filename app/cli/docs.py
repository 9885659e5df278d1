"""``python -m app.docs list`` / ``remove <id|path>`` (``make docs``, ``make remove``): the stored documents."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from app import docs
from app.cli import run
from app.config import get_settings
from app.formats.limits import escape
from app.graphrag.search import GraphSearch  # the graph's tables: read only when documents exist
from app.store import RagStore


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(prog="python -m app.docs", description=docs.__doc__)
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="list stored documents")
    remove = sub.add_parser("remove", help="remove a document from every index")
    remove.add_argument("doc", help="document ID (e.g. csv/faq.csv), file path or file name")
    remove.add_argument("--no-wait", action="store_true", help="fail at once if another writer is running")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)

    def body() -> int:
        store = RagStore(get_settings())
        if args.action == "list":
            documents = store.list_documents()
            print(docs.format_documents(documents))
            if documents:
                print(docs.format_graph(GraphSearch(store.settings, store.engine).counts()))
        else:
            removed = store.remove_document(args.doc, wait=not args.no_wait)
            print(f"Removed {escape(args.doc)} ({removed} chunks)")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
