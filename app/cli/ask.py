"""``python -m app.ask "質問"`` (``make ask``): run the workflow and print the answer and its sources."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from app.cli import output, run
from app.config import get_settings, validate_mode
from app.graph import default_context, run_rag
from app.permissions.principals import FULL_ACCESS
from app.storage.scope import Scope, missing_folder_message, parse_scope
from app.text.storable import check_fields
from app.versions.preference import answer_version_notes, source_versions
from app.workflow.withdrawals import WITHDRAWN, streamed_note


def main(argv: Sequence[str] | None = None, context: Any = None, out=None) -> int:
    """CLI entry point: the question is the first argument (``sys.argv[1]``)."""
    parser = argparse.ArgumentParser(
        prog="python -m app.ask",
        description="Ask a question (§4.8): run the LangGraph workflow and print the answer and its sources.",
    )
    parser.add_argument("query", nargs="*", help="the question (quote it)")
    parser.add_argument(
        "--mode",
        default=None,
        metavar="MODE",
        help="hybrid | vector | keyword (first-stage search), local | global (graph search) or "
        "auto (chosen per question); default: SEARCH_MODE or hybrid",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: answer, sources, the mode chosen, traceability, timings",
    )
    parser.add_argument("--no-stream", action="store_true", help="print the answer only when complete")
    parser.add_argument(
        "--timings", action="store_true", help="print per-node timings and peak memory as JSON on stderr"
    )
    parser.add_argument(
        "--as", dest="as_user", default=None, metavar="NAME", help="answer as this user (only what they may read)"
    )
    parser.add_argument(
        "--in",
        dest="folders",
        action="append",
        default=None,
        metavar="FOLDER",
        help="only documents under this folder of the data folder (docs/規程); repeat for several",
    )
    parser.add_argument(
        "--format",
        dest="formats",
        action="append",
        default=None,
        metavar="LIST",
        help="only documents of these formats, by extension (pdf,docx)",
    )
    parser.add_argument(
        "--since", default=None, metavar="DATE", help="only documents dated this day or later (YYYY-MM-DD)"
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)
    query = " ".join(args.query).strip()
    out = out or sys.stdout
    if not query:
        parser.print_usage(sys.stderr)
        print('Error: no question given; usage: make ask Q="質問文"', file=sys.stderr)
        return 2
    try:  # an argument whose bytes were not UTF-8 arrives as lone surrogates: refused before any work
        check_fields(
            {
                "question": query,
                "--mode": args.mode,
                "--as": args.as_user,
                "--in": args.folders or [],
                "--format": args.formats or [],
                "--since": args.since,
            }
        )
        scope = parse_scope(args.folders, args.formats, args.since)  # ambiguous input fails, never widens
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2

    def body() -> int:
        # the workflow pulls in LangGraph and the model stack: `--help` and a missing question stay instant

        settings = get_settings()
        mode = validate_mode(args.mode, settings.retrieval.search_mode)
        ctx = context
        if ctx is None:
            output.ensure_ingested(settings)
            principals = as_user(settings, args.as_user)
            missing = missing_folders_of(settings, scope, principals)
            if missing:
                print(f"Error: {missing_folder_message(missing)}", file=sys.stderr)
                return 2
            ctx = default_context(settings, mode=mode, principals=principals, scope=scope or None)
        first_token_at: list[float] = []
        if args.json:
            state = run_rag(query, ctx)
            out.write(output.json_report(state, output._process_age(), scope=scope) + "\n")
            return 0
        if not args.no_stream:
            printer = output.TokenPrinter(out)

            def on_token(piece: str) -> None:
                if not first_token_at:
                    first_token_at.append(output._process_age())
                    out.write("=== Answer ===\n")
                printer(piece)

            ctx = replace(ctx, on_token=on_token)
        state = run_rag(query, ctx)
        cited = state.get("cited_sources") or None  # none cited or matched: the plain list
        abstained = bool(state.get("abstained"))
        quote = (state.get("quote") or {}).get("line")
        versions = {v["source"]: v for v in source_versions(state)}
        if args.no_stream or not first_token_at:
            out.write(output.format_output(state["answer"], state["sources"], cited, abstained, quote, versions) + "\n")
        else:
            if state.get("abstained") in WITHDRAWN or state.get("evidence_shown"):
                kind = state.get("evidence_shown") or state.get("abstained")
                out.write("\n\n" + streamed_note(state.get("unsupported", []), state["answer"], kind))
            if quote:
                out.write("\n" + quote)
            out.write("\n\n" + output.format_sources(state["sources"], cited, abstained, versions) + "\n")
        for warning in state.get("warnings") or []:
            out.write(f"注意: {warning}\n")
        for note in [] if abstained else answer_version_notes(state):
            out.write(f"版: {note}\n")
        if state.get("table"):
            out.write("\n" + output.format_table(state["table"]) + "\n")
        out.flush()
        if args.timings:
            print(output.timing_report(state, first_token_at[0] if first_token_at else None), file=sys.stderr)
        return 0

    return run(body, debug=args.debug)


def missing_folders_of(settings, scope: Scope, principals) -> list[str]:
    """The ``--in`` folders holding no document ``principals`` may read (app.storage.scope.missing_folders)."""
    if not scope.folders:
        return []
    from app.storage import get_engine
    from app.storage.scope import missing_folders

    return missing_folders(get_engine(settings), settings.retrieval.collection_name, scope, principals)


def as_user(settings, name: str | None) -> tuple[str, ...]:
    """The principals of ``--as NAME``, FULL_ACCESS without it; UnknownUserError for no such user."""
    if name is None:
        return FULL_ACCESS  # the owner at the command line reads data/ anyway: full access, on purpose
    from app.storage import get_engine
    from app.users.identity import principals_for_user

    return principals_for_user(get_engine(settings), name)


if __name__ == "__main__":
    raise SystemExit(main())
