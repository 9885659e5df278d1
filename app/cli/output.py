"""What the ask command prints: the answer, its sources, the notes under it, timings and the JSON
report (``python -m app.ask``, and the evaluation's and tuning's reuse of the same pieces)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from app import storage
from app.config import Settings
from app.errors import RagError
from app.storage.scope import Scope
from app.versions.preference import answer_version_notes, source_versions


def format_sources(
    sources: Sequence[str],
    cited: Sequence[str] | None = None,
    abstained: bool = False,
    versions: Mapping[str, Mapping] | None = None,
) -> str:
    """The Sources section: a header and one ``- source`` line per source.

    With ``cited`` (the sources the answer cites), those come first and the
    others are marked ``(not cited)``; after an abstention they are the closest
    sources found, and the header says so. With ``versions`` (source -> :func:`source_versions`'
    entry), a source of a past version says so and names the version in force.
    """
    header = "=== Sources (closest; they do not answer the question) ===" if abstained else "=== Sources ==="
    if cited is None or abstained:
        lines = [f"- {source}{past_mark(source, versions)}" for source in sources]
    else:
        lines = [f"- {source}{past_mark(source, versions)}" for source in cited]
        lines += [f"- {source}{past_mark(source, versions)} (not cited)" for source in sources if source not in cited]
    return "\n".join([header] + (lines or ["(none)"]))


def past_mark(source: str, versions: Mapping[str, Mapping] | None) -> str:
    """`` (旧版 2023-04-01; 現行: 規程/就業規則_2024.md)`` for a source of a past version, else ``""``."""
    version = (versions or {}).get(source) or {}
    if not version.get("superseded_by"):
        return ""
    return f" (旧版 {version.get('effective') or '日付不明'}; 現行: {version['superseded_by']})"


def format_output(
    answer: str,
    sources: Sequence[str],
    cited: Sequence[str] | None = None,
    abstained: bool = False,
    quote: str | None = None,
    versions: Mapping[str, Mapping] | None = None,
) -> str:
    """The §4.8 output: an Answer section (the answer, then the ``根拠: 「…」[n]`` line quoting the context
    it was taken from, when found), then one ``- source`` line per source (past versions marked)."""
    body = answer.strip() + (f"\n{quote}" if quote else "")
    return f"=== Answer ===\n{body}\n\n{format_sources(sources, cited, abstained, versions)}"


def format_table(table: Mapping) -> str:
    """The 「計算に使った行と式」 section of an answer computed over a table: the table, the SQL run and
    the result rows, one ``- column: value、…`` line each."""
    lines = ["=== 計算に使った行と式 ===", f"表: {table.get('table')}", f"SQL: {table.get('sql')}"]
    for row in table.get("rows") or []:
        lines.append("- " + "、".join(f"{name}: {value}" for name, value in row.items()))
    return "\n".join(lines)


def ensure_ingested(settings: Settings) -> None:
    """RagError if nothing is stored yet (the user has not run ingest); a read: creates nothing."""
    engine = storage.get_engine(settings)
    storage.check_schema(engine, settings.retrieval.collection_name)
    if storage.count_chunks(engine, settings.retrieval.collection_name) == 0:
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
    "table",  # the table path (app.tables): the table, the SQL run, the result rows
    "timings",
)


def json_report(state: dict, seconds: float | None = None, scope: Scope | None = None) -> str:
    """``--json``: the question's answer, sources (and ``source_versions``: each source's ``doc_id``,
    ``effective`` and ``superseded_by``; ``version_notes``), the mode chosen (and why), the graph's IDs
    (local), the traceability and map results (global), the ``scope`` used (app.storage.scope.Scope:
    ``{"folders", "formats", "since"}``, empty lists and null without one), the timings and peak RSS."""
    import json

    payload = {key: state[key] for key in JSON_KEYS if key in state}
    if "sources" in state:
        payload["source_versions"] = source_versions(state)
        payload["version_notes"] = answer_version_notes(state)
    payload["query"] = state.get("query")
    payload["scope"] = (scope or Scope()).as_dict()
    payload["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if seconds is not None:
        payload["process_seconds"] = round(seconds, 3)
    return json.dumps(payload, ensure_ascii=False, default=str)


def _process_age() -> float:
    """Seconds since this process started (for the cold-start figure)."""
    import psutil

    return time.time() - psutil.Process().create_time()
