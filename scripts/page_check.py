"""How fast a warm page feels: for each question, the time to its passages (the ``sources`` event), to
its first token and to its answer; then the same question asked again, and the time to its ``done``.

    python scripts/page_check.py [--questions 5] [--port 8791] [--url http://127.0.0.1:8780/]

Without ``--url`` it starts ``python -m app.web`` on ``--port`` (the default database: run
``make ingest`` first) and warms it with one question. Prints the medians and each question as JSON,
then the check: every new question's passages before its first token and within 1.5 s, every repeated
question's answer within 0.5 s (exit status 1 when either fails). On a page without passages (an older
release) the time to the passages is ``null``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from web_ttft import QUESTIONS, wait_for  # the first-token script's questions (scripts/ is on the path)

ROOT = Path(__file__).resolve().parents[1]
PASSAGES_WITHIN_S = 1.5
REPEAT_WITHIN_S = 0.5


def ask(url: str, question: str) -> dict:
    """One question on the page: seconds to the passages, the first token and ``done``, and the order
    the first two came in."""
    start = time.perf_counter()
    marks: dict[str, float] = {}
    with httpx.stream("POST", url + "api/ask", json={"question": question}, timeout=600) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
                marks.setdefault(kind, time.perf_counter() - start)
    rounded = {k: round(v, 3) for k, v in marks.items()}
    return {
        "passages_s": rounded.get("sources"),
        "first_token_s": rounded.get("token"),
        "done_s": rounded.get("done"),
        "passages_first": "sources" in marks and marks["sources"] < marks.get("token", float("inf")),
    }


def median(rows: list[dict], key: str) -> float | None:
    """The median of ``key`` over the rows that have it."""
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 3) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--url", default="")
    args = parser.parse_args()
    url = args.url.rstrip("/") + "/" if args.url else f"http://127.0.0.1:{args.port}/"
    server = None
    if not args.url:
        server = subprocess.Popen([sys.executable, "-m", "app.web", "--port", str(args.port)], cwd=ROOT)
    try:
        wait_for(url)
        ask(url, QUESTIONS[0])  # warm: the LLM loaded, the prompt's prefix evaluated once
        rows = []
        for question in QUESTIONS[1 : 1 + args.questions]:
            new = ask(url, question)
            again = ask(url, question)
            rows.append({"question": question, "new": new, "again_done_s": again["done_s"]})
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    new_rows = [r["new"] for r in rows]
    report = {
        "questions": len(rows),
        "passages_s": median(new_rows, "passages_s"),
        "first_token_s": median(new_rows, "first_token_s"),
        "done_s": median(new_rows, "done_s"),
        "again_done_s": median(rows, "again_done_s"),
        "per_question": rows,
    }
    print(json.dumps(report, ensure_ascii=False, indent=2))
    passages_ok = all(
        r["passages_first"] and r["passages_s"] is not None and r["passages_s"] <= PASSAGES_WITHIN_S for r in new_rows
    )
    again_ok = all(r["again_done_s"] is not None and r["again_done_s"] <= REPEAT_WITHIN_S for r in rows)
    print(f"passages before the first token and within {PASSAGES_WITHIN_S} s: {'ok' if passages_ok else 'FAILED'}")
    print(f"the same question again answered within {REPEAT_WITHIN_S} s: {'ok' if again_ok else 'FAILED'}")
    return 0 if passages_ok and again_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
