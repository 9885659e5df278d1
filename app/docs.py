"""Stored documents: ``python -m app.docs list`` and ``python -m app.docs remove <id|path>``."""

from __future__ import annotations

from collections.abc import Sequence

from app.formats.limits import escape


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


def format_queue_failures(rows: Sequence[dict]) -> str:
    """The queued files that failed for good (app.storage.queue.failed_queued): a header, then one line
    each with its tries and reason; ``""`` when there are none."""
    if not rows:
        return ""
    lines = [f"Failed in the queue: {len(rows)} files (`make ingest QUEUE=1` tries them again)"]
    lines += [f"  {escape(row['doc_id'])} ({row['attempts']} tries): {escape(row['error'] or '')}" for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":  # `python -m app.docs` runs the command line (app.cli), by name
    import runpy

    runpy.run_module("app.cli.docs", run_name="__main__")
