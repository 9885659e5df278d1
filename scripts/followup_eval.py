"""Follow-up questions: the rules against the LLM, by what the search then finds (issue 28, item 4).

    DB_NAME=real python scripts/followup_eval.py data/real/followup_questions.json \
        --data-dir .cache/real-corpus [--json out.json]

Each entry is a conversation's previous question(s) (``history``), a follow-up (``query``) and the
source that answers it (``expected_source``). The follow-up is searched three ways: as typed, made to
stand alone by the rules (app.web.followup), and by the loaded LLM (app.web.rewrite, asked only when
the rules see the need). For each way: the expected source in the top 3 and top 10 of the hybrid
search, and the seconds the rewrite took. The store must already hold the folder's documents in
the collection ``make evaluate`` uses for it (``python -m app.evaluate --no-generate --data-dir …``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from app.config import get_settings
from app.evaluation.run import collection_for
from app.llm import generate, get_llm, with_options
from app.models.locate import resolve_llm_path
from app.permissions.principals import FULL_ACCESS
from app.store import RagStore
from app.web.followup import standalone
from app.web.rewrite import llm_standalone


def main() -> None:
    """Measure and print one JSON summary (``--json``: also the per-question rows)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    settings = get_settings().changed(retrieval={"collection_name": collection_for(args.data_dir)})
    store = RagStore(settings, principals=FULL_ACCESS)  # measures retrieval over every document, on purpose
    llm = with_options(get_llm(settings), stop=["\n"], max_tokens=80)
    items = json.loads(args.questions.read_text(encoding="utf-8"))
    ways = {
        "typed": lambda q, h: q,
        "rules": standalone,
        "llm": lambda q, h: llm_standalone(q, h, lambda prompt, system: generate(prompt, llm, system=system)),
    }
    generate("こんにちは", llm)  # load and warm the model outside the clock
    rows = []
    for item in items:
        row = {"query": item["query"], "expected_source": item["expected_source"]}
        for way, rewrite in ways.items():
            start = time.perf_counter()
            searched = rewrite(item["query"], item["history"])
            seconds = time.perf_counter() - start
            found = [d.metadata.get("source") for d in store.search(searched, search_mode="hybrid", top_k=10)]
            rank = found.index(item["expected_source"]) + 1 if item["expected_source"] in found else None
            row[way] = {"searched": searched, "rank": rank, "seconds": round(seconds, 2)}
        rows.append(row)
    summary = {
        "questions": len(rows),
        "model": resolve_llm_path(
            settings.llm.model_path, settings.models.dir, settings.llm.model_path_is_default
        ).name,
    }
    for way in ways:
        ranks = [r[way]["rank"] for r in rows]
        summary[way] = {
            "hit@3": round(sum(1 for k in ranks if k and k <= 3) / len(rows), 3),
            "hit@10": round(sum(1 for k in ranks if k) / len(rows), 3),
            "rewritten": sum(1 for r in rows if r[way]["searched"] != r["query"]),
            "median_s_when_rewritten": round(
                statistics.median([r[way]["seconds"] for r in rows if r[way]["searched"] != r["query"]] or [0]), 2
            ),
        }
    print(json.dumps(summary, ensure_ascii=False, indent=1))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows}, ensure_ascii=False, indent=1), "utf-8")


if __name__ == "__main__":
    main()
