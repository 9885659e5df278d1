"""Measure evidence selection as its own stage (issue 29): for each answerable question, the share of
its expected keywords in the top RERANK_TOP_K chunks (what the LLM read before) and in the evidence
windows chosen from all SEARCH_K candidates (app.workflow.evidence.windows), with the characters of each.
No LLM is loaded.

    DB_NAME=real python scripts/evidence_stage.py --data-dir .cache/real-corpus \
        --questions data/real/tuning_questions.json --budgets 400,600,800,1000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    """Print one line per budget (and the chunks' line), or --json the per-question figures."""
    from app.config import get_settings
    from app.evaluation.run import collection_for, load_questions
    from app.graph import default_context
    from app.metrics import faithfulness
    from app.permissions.principals import FULL_ACCESS
    from app.reranker import rerank_documents
    from app.store import RagStore
    from app.workflow.evidence import windows
    from app.workflow.prompts import focus_context

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--budgets", default="400,600,800,1000")
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE of a windows constant")
    parser.add_argument("--no-dense", action="store_true")
    parser.add_argument("--trims", default="", help="CONTEXT_MAX_CHARS values to measure too (e.g. 250,350)")
    args = parser.parse_args()
    for item in args.set:
        name, value = item.split("=")
        setattr(windows, name, type(getattr(windows, name))(value))
    settings = get_settings().changed(retrieval={"collection_name": collection_for(Path(args.data_dir))})
    RagStore(settings).sync(Path(args.data_dir))
    ctx = default_context(settings, generate=False, reranker=None, principals=FULL_ACCESS)  # the owner's, on purpose
    embeddings = None if args.no_dense else RagStore(settings).embeddings
    questions = [q for q in load_questions(args.questions) if q.get("expected_source")]
    budgets = [int(b) for b in args.budgets.split(",") if b]
    trims = [int(t) for t in args.trims.split(",") if t]
    rows = {"chunks": [], **{f"trim {t}": [] for t in trims}, **{b: [] for b in budgets}}
    for q in questions:
        docs = ctx.search(q["query"], ctx.search_k)
        top = rerank_documents(q["query"], docs, None, ctx.rerank_top_k)
        text = "\n".join(d.page_content for d in top)
        rows["chunks"].append((faithfulness(text, q["expected_keywords"]), len(text)))
        for t in trims:  # CONTEXT_MAX_CHARS: each chunk cut to the sentences around the question's terms
            cut = "\n".join(focus_context(d.page_content, q["query"], t) for d in top)
            rows[f"trim {t}"].append((faithfulness(cut, q["expected_keywords"]), len(cut)))
        ordered = top + [d for d in docs if d not in top]
        for b in budgets:
            chosen = windows.select_evidence(q["query"], ordered, b, embeddings)
            text = "\n".join(w.text for w in chosen)
            rows[b].append((faithfulness(text, q["expected_keywords"]), len(text)))
    for name, values in rows.items():
        n = len(values)
        share = sum(v for v, _ in values) / n
        full = sum(v == 1.0 for v, _ in values) / n
        chars = sum(c for _, c in values) / n
        label = (
            f"top {ctx.rerank_top_k} chunks"
            if name == "chunks"
            else (f"top {ctx.rerank_top_k}, {name}" if isinstance(name, str) else f"evidence {name} chars")
        )
        print(f"{label:22s} keywords {share:6.1%}  all keywords {full:6.1%}  mean chars {chars:6.0f}  (n={n})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
