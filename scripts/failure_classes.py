"""Count an evaluation's questions by what went wrong (issue 29's classes), from `app.evaluation.run --json`:

    python scripts/failure_classes.py /tmp/report.json [--list]

Each question lands in exactly one row, the first that applies:

* ``right``: an answerable question whose answer holds every expected keyword;
* ``0 not in context``: the expected keywords are not in the contexts the model read (retrieval's loss);
* ``1 in context, answered wrong``: they are, and the answer (not refused) misses them;
* ``1 in context, refused after the model``: they are, and the answer was withdrawn or the model refused;
* ``3 refused before the model``: a check refused before the LLM (``low_coverage`` …) although the
  expected source was among the chunks it would have read (without it: ``0``);
* ``2 right only in another form``: counted apart, over the right answers: the keyword is found only after
  dates and numbers are read in one form (app.text.normalize), not as NFKC text;
* ``4 unanswerable, answered`` / ``unanswerable, refused``: the questions no document answers;
* class 5 (long prompts) is not a per-question class: the summary's first-token median and context
  characters are printed under the table.

Issue 39's reader failures come before the rows above (``c`` for the classes of that issue), from the
answer as given:

* ``c1 cut short``: the answer stops before its value or points at a context instead
  (app.workflow.checks.restated.stops_before_value);
* ``c2 question given back``: every content term of the answer is the question's
  (app.workflow.checks.restated.adds_nothing);
* ``c3 right row, wrong cell``: the expected source is a table row among the contexts, the answer misses
  its keywords;
* ``c4 value past the table's end``: the question names a value no row of the asked table holds among
  the contexts (app.workflow.checks.cells), and the answer was given;
* ``c5 another chunk of the source``: the expected source is among the contexts, its chunk given to the
  model does not hold the keywords (another chunk of that page or section does), the answer is wrong;
* ``c6 neighbouring fact, cited``: the keywords are in the contexts, the answer cites one and misses them.
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.workflow.checks.cells import absent_from_rows, table_of
from app.workflow.checks.restated import adds_nothing, stops_before_value

BEFORE_LLM = {"no_context", "no_entities", "low_confidence", "low_rerank", "absent_value", "low_coverage"}


def plain_contains(text: str, keyword: str) -> bool:
    """``keyword`` in ``text`` after NFKC, case folding and dropping whitespace only (no date rules)."""

    def fold(s: str) -> str:
        return "".join(unicodedata.normalize("NFKC", s or "").casefold().split())

    return bool(fold(keyword)) and fold(keyword) in fold(text)


def reader_class(result: dict) -> str | None:
    """Issue 39's class of ``result`` (see the module docstring), or None."""
    answer, query, given = result.get("answer") or "", result.get("query") or "", not result.get("abstained")
    contexts = result.get("contexts") or []
    ranked = list(zip(result.get("retrieved") or [], contexts))
    if result.get("answerable", True) and result.get("faithfulness") == 1.0:
        return None
    if given and not result.get("evidence_shown"):
        if stops_before_value(answer):
            return "c1 cut short"
        if adds_nothing(answer, query):
            return "c2 question given back"
    if given and absent_from_rows(query, ranked, []):
        return "c4 value past the table's end"
    if not result.get("answerable", True) or result.get("faithfulness") == 1.0 or not given:
        return None
    expected = result.get("expected_source")
    shown = [source for source, _ in ranked]
    if table_of(expected or "") and expected in shown:
        return "c3 right row, wrong cell"
    if expected in shown and (result.get("context_keywords") or 0.0) < 1.0:
        return "c5 another chunk of the source"
    if (result.get("context_keywords") or 0.0) >= 1.0 and result.get("cited_sources"):
        return "c6 neighbouring fact, cited"
    return None


def classify(result: dict) -> str:
    """The row of ``result`` (one question of an evaluation's ``results``)."""
    reader = reader_class(result)
    if reader:
        return reader
    if not result.get("answerable", True):
        return "4 unanswerable, answered" if not result.get("abstained") else "unanswerable, refused"
    if result.get("faithfulness") == 1.0:
        return "right"
    reason = result.get("abstained")
    if reason in BEFORE_LLM:  # no context was given to the model: the ranking says whether it would have been
        return "3 refused before the model" if result.get("retrieval_hit") else "0 not in context"
    if (result.get("context_keywords") or 0.0) < 1.0:
        return "0 not in context"
    if reason:
        return "1 in context, refused after the model"
    return "1 in context, answered wrong"


def main(argv: list[str] | None = None) -> int:
    """Print the table (and with --list each question's row)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", help="the file `python -m app.evaluate --json` wrote")
    parser.add_argument("--list", action="store_true", help="each question with its row")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.json).read_text(encoding="utf-8"))
    results = [r for r in data["results"] if not r.get("overview") and not r.get("error")]
    rows = Counter(classify(r) for r in results)
    other_form = sum(
        classify(r) == "right" and not all(plain_contains(r["answer"], k) for k in r["expected_keywords"])
        for r in results
    )
    for name in sorted(rows):
        print(f"{name:40} {rows[name]:3}")
    print(f"{'2 right only in another form':40} {other_form:3}  (of the right ones)")
    summary = data.get("summary", {})
    print(
        f"5 prompt: {summary.get('context_chars_mean') or 0:.0f} context characters (mean), "
        f"first token {summary.get('first_token_median') or 0:.2f} s (median)"
    )
    if args.list:
        for r in results:
            print(f"{classify(r):40} {r['query']}  →  {(r.get('answer') or '')[:60]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
