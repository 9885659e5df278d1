"""``python -m app.docs [list]`` / ``remove <id|path>`` (``make docs``, ``make remove``): the stored documents,
their versions (families and the current version, app.versions) and the graph."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from app import docs
from app.cli import run
from app.config import get_settings
from app.formats.limits import escape
from app.graphrag.search import GraphSearch  # the graph's tables: read only when documents exist
from app.permissions.principals import FULL_ACCESS
from app.storage import queue as queue_store
from app.storage import versions as version_store
from app.store import RagStore


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(prog="python -m app.docs", description=docs.__doc__)
    sub = parser.add_subparsers(dest="action")
    sub.add_parser("list", help="list stored documents, their versions and the graph (the default)")
    remove = sub.add_parser("remove", help="remove a document from every index")
    remove.add_argument("doc", help="document ID (e.g. csv/faq.csv), file path or file name")
    remove.add_argument("--no-wait", action="store_true", help="fail at once if another writer is running")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)

    def body() -> int:
        # the owner at the command line lists every document (the files are theirs): full access, on purpose
        store = RagStore(get_settings(), principals=FULL_ACCESS)
        if args.action in (None, "list"):
            documents = store.list_documents()
            print(docs.format_documents(documents))
            if documents:
                families = format_families(
                    version_store.list_versions(
                        store.engine, store.settings.retrieval.collection_name, store.principals
                    )
                )
                if families:
                    print(families)
                print(docs.format_graph(GraphSearch(store.settings, store.engine, principals=FULL_ACCESS).counts()))
            failed = docs.format_queue_failures(queue_store.failed_queued(store.engine, store.collection))
            if failed:  # files a queued ingest could not store (python -m app.worker)
                print(failed)
        else:
            removed = store.remove_document(args.doc, wait=not args.no_wait)
            print(f"Removed {escape(args.doc)} ({removed} chunks)")
        return 0

    return run(body, debug=args.debug)


def format_families(rows: Sequence[dict]) -> str:
    """The families among ``rows`` (app.storage.versions.list_versions): a header, then per family its
    current version first and each other version with its status, effective date and what supersedes
    it; ``""`` when no document has another version."""
    families: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("family"):
            families.setdefault(row["family"], []).append(row)
    families = {name: members for name, members in families.items() if len(members) > 1}
    if not families:
        return ""
    lines = [f"Versions: {len(families)} documents with more than one version (current first)"]
    for name in sorted(families):
        members = sorted(families[name], key=lambda r: (r["superseded_by"] is not None, str(r["effective"] or "")))
        for row in members:
            when = f"effective {row['effective'] or '?'} ({row['effective_from'] or 'unknown'})"
            if row["superseded_by"] is None:
                lines.append(f"  {escape(row['doc_id'])}  current  {when}")
            else:
                lines.append(
                    f"    {escape(row['doc_id'])}  {row['status']}, superseded by {escape(row['superseded_by'])}  {when}"
                )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
