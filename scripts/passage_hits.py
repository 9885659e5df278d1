"""How often the first passage shown (「該当箇所」) holds every expected keyword, in retrieval order and
without the model: `python scripts/passage_hits.py DATA_DIR QUESTIONS [--unwidened] [--json OUT]`.

For each answerable question: RagStore.search as the page does, the first RERANK_TOP_K chunks,
app.workflow.passages.passages, the first passage scored with app.metrics.exact_match. DATA_DIR is
synced into its own collection as `make evaluate --data-dir` does. `--unwidened` scores the window
before issue 52's growth over the sentences around it (for a before/after figure).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    from app.cli.evaluate import prepare_data_dir
    from app.config import get_settings
    from app.metrics import exact_match
    from app.permissions.principals import FULL_ACCESS
    from app.store import RagStore
    from app.workflow import passages as shown_passages

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--unwidened", action="store_true", help="the window as it was before issue 52")
    parser.add_argument("--json", type=Path, default=None, help="each question's first passage and hit")
    args = parser.parse_args()
    if args.unwidened:
        shown_passages.widened = lambda text, window, width=shown_passages.PASSAGE_CHARS: window
    settings = prepare_data_dir(get_settings(), args.data_dir)
    store = RagStore(settings, principals=FULL_ACCESS)
    questions = [q for q in json.loads(args.questions.read_text(encoding="utf-8")) if q.get("expected_keywords")]
    rows = []
    for q in questions:
        docs = store.search(q["query"], top_k=settings.retrieval.search_k, principals=FULL_ACCESS)
        first = (shown_passages.passages(q["query"], docs[: settings.retrieval.rerank_top_k]) or [None])[0]
        text = first["text"] if first else ""
        rows.append({"query": q["query"], "source": first and first["source"], "passage": text,
                     "hit": bool(text) and exact_match(text, q["expected_keywords"])})  # fmt: skip
    hits = sum(r["hit"] for r in rows)
    print(f"first passage holds every expected keyword: {hits}/{len(rows)} = {100 * hits / max(len(rows), 1):.1f}%")
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
