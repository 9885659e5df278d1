"""Time to the first token in the web page against the warm MCP ``ask``, in one run, one after the
other on the same store and model (issue 28's measurement).

    python scripts/web_ttft.py [--questions 5] [--port 8790]

The web page: ``python -m app.web`` started here; each question is POSTed to ``/api/ask`` and the
clock stops at the first ``token`` event (what a person sees) and at ``done``. The MCP server:
``python -m app.mcp`` over stdio; its ``ask`` is not streamed, so its time to the first token is the
server's own ``route + retrieve + rerank + first_token`` and its total is the call's wall time. Both
processes are warmed with one question first; the medians are printed as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = (
    "サポート窓口の受付時間を教えてください。",
    "エラーコードE3010が出たときの対処方法は？",
    "有給休暇は入社後いつから取得できますか？",
    "ミナトVPNに接続するときに必要なものは何ですか？",
    "経費精算の締め日はいつですか？",
    "パスワードは何日ごとに変更が必要ですか？",
)


def web_ask(url: str, question: str) -> dict:
    """One question through the page's API: seconds to the first token and to the end."""
    start = time.perf_counter()
    first = None
    with httpx.stream("POST", url + "api/ask", json={"question": question}, timeout=600) as response:
        for line in response.iter_lines():
            if line == "event: token" and first is None:
                first = time.perf_counter() - start
    return {"first_token_s": first, "total_s": time.perf_counter() - start}


async def mcp_asks(questions: list[str]) -> list[dict]:
    """The questions through the MCP server's ``ask`` (stdio), after one warm-up question."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "app.mcp"], env=dict(os.environ), cwd=str(ROOT))
    out = []
    async with Client(params) as client:
        await client.call_tool("ask", {"question": QUESTIONS[0]})
        for question in questions:
            start = time.perf_counter()
            result = await client.call_tool("ask", {"question": question})
            total = time.perf_counter() - start
            timings = (result.structured_content or {}).get("timings", {})
            before = sum(timings.get(k, 0.0) for k in ("route", "retrieve", "rerank"))
            first = before + timings["first_token"] if "first_token" in timings else None
            out.append({"first_token_s": first, "total_s": total})
    return out


def median(rows: list[dict], key: str) -> float | None:
    """The median of ``key`` over the rows that have it."""
    values = [r[key] for r in rows if r[key] is not None]
    return round(statistics.median(values), 2) if values else None


def wait_for(url: str) -> None:
    """Until the page answers (the models load first)."""
    for _ in range(240):
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.5)
    raise SystemExit(f"the page at {url} did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--port", type=int, default=8790)
    args = parser.parse_args()
    questions = list(QUESTIONS[1 : 1 + args.questions])
    url = f"http://127.0.0.1:{args.port}/"
    server = subprocess.Popen([sys.executable, "-m", "app.web", "--port", str(args.port)], cwd=ROOT)
    try:
        wait_for(url)
        web_ask(url, QUESTIONS[0])  # warm: the LLM loaded, the prompt's prefix evaluated once
        web = [web_ask(url, q) for q in questions]
    finally:
        server.terminate()
        server.wait(timeout=30)
    mcp = asyncio.run(mcp_asks(questions))
    report = {
        "questions": len(questions),
        "web": {"first_token_s": median(web, "first_token_s"), "total_s": median(web, "total_s")},
        "mcp_ask": {"first_token_s": median(mcp, "first_token_s"), "total_s": median(mcp, "total_s")},
        "per_question": [{"web": w, "mcp": m} for w, m in zip(web, mcp)],
    }
    print(json.dumps(report, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
