"""``python -m app.feedback export FILE`` / ``list``: the askers' feedback, read as the store's owner."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.cli import run
from app.config import get_settings
from app.formats.limits import escape
from app.serving.feedback import FLAGGED_SHOWN, evaluation_questions, flagged_questions

DESCRIPTION = (
    "The askers' feedback on answers: `export FILE` writes the questions flagged 👎 with a chosen source as "
    "an evaluation set (python -m app.evaluate --questions FILE); `list` shows the most flagged questions."
)


def evaluation_json(questions: Sequence[dict[str, Any]]) -> str:
    """The evaluation set as data/eval_questions.json is written: a JSON list, one question a line."""
    if not questions:
        return "[]\n"
    lines = [json.dumps(q, ensure_ascii=False) for q in questions]
    return "[\n" + ",\n".join(f"  {line}" for line in lines) + "\n]\n"


def format_flagged(rows: Sequence[dict[str, Any]]) -> str:
    """The most flagged questions: 👎 and 👍 counts, how often none was right, the sources chosen, the question."""
    if not rows:
        return "No question has been flagged."
    lines = ["flagged  helpful  none right  chosen sources / question"]
    for row in rows:
        chosen = ", ".join(escape(s) for s in row["chosen_sources"]) or "-"
        lines.append(f"{row['flagged']:>7}  {row['helpful']:>7}  {row['none_right']:>10}  {chosen}")
        lines.append(f"{'':>30}{escape(row['question'])}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(prog="python -m app.feedback", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="action", required=True)
    export = sub.add_parser("export", help="write the flagged questions with a chosen source as an evaluation set")
    export.add_argument("file", type=Path, help="the JSON file to write (python -m app.evaluate --questions FILE)")
    shown = sub.add_parser("list", help="the questions most often flagged")
    shown.add_argument("--limit", type=int, default=FLAGGED_SHOWN)
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)

    def body() -> int:
        from app import storage
        from app.storage.feedback import chosen_sources

        settings = get_settings()
        engine = storage.get_engine(settings)
        storage.check_schema(engine, settings.retrieval.collection_name)  # one line when nothing is stored yet
        if args.action == "list":
            print(format_flagged(flagged_questions(settings, engine, args.limit)))
            return 0
        questions = evaluation_questions(chosen_sources(engine, settings.retrieval.collection_name))
        args.file.write_text(evaluation_json(questions), encoding="utf-8")
        print(f"Wrote {len(questions)} questions to {escape(str(args.file))}")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
