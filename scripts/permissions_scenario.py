"""The two-user scenario of docs/security.md, run on this checkout as a user would.

    python scripts/permissions_scenario.py            # after the data and users below exist

It expects ``make ingest`` to have run over the sample data plus ``data/docs/経理/賞与規程.md``,
``data/docs/営業/営業手当.md`` and ``data/access.toml``, and ``python -m app.users add`` of alice
(経理) and bob (営業). It makes a token for each, asks on the command line (``--as``), through the page
(``python -m app.web``) and through MCP over HTTP (``python -m app.mcp --http``), and prints one line per
check: bob never receives 3.7, KX-4471 or 賞与規程; alice finds the document; no identity gets 401.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from urllib.parse import quote

import httpx

SECRETS = ("3.7", "KX-4471", "賞与規程")
QUESTION = "賞与の支給率は基本給の何か月分ですか？"
SOURCE = "賞与規程.md#支給率"
FILE = "docs/経理/賞与規程.md"


def strings(value) -> list[str]:
    """Every string in a JSON value but times (numbers such as timings, and times such as
    ``…T21:38:03.712…``, may hold "3.7" by chance)."""
    if isinstance(value, str):
        return [] if re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.+-]+", value) else [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in [k, *strings(v)]]
    if isinstance(value, list):
        return [t for v in value for t in strings(v)]
    return []


def shown(text: str) -> list[str]:
    """The secrets in a response body (JSON or server-sent events)."""
    values: list[str] = []
    for line in text.splitlines() or [text]:
        body = line[len("data: ") :] if line.startswith("data: ") else line
        try:
            values += strings(json.loads(body))
        except ValueError:
            values.append(body)
    return [s for s in SECRETS if s in " ".join(values)]


def run(*args: str) -> str:
    """``python -m <args>``'s stdout (an error stops the scenario)."""
    done = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, check=True)
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(*args: str) -> subprocess.Popen:
    """A server in the background (``python -m <args>``), once it listens."""
    port = int(args[-1].rpartition(":")[2])
    proc = subprocess.Popen([sys.executable, "-m", *args, "--no-preload"], stderr=subprocess.DEVNULL)
    for _ in range(600):
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.2)
    raise SystemExit(f"{args} did not start")


@asynccontextmanager
async def mcp(url: str, token: str):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


async def mcp_checks(url: str, token: str) -> dict[str, str]:
    """search_rag and list_documents as the token's user: what each returned, as text."""
    async with mcp(url, token) as client:
        hits = await client.call_tool("search_rag", {"query": QUESTION, "k": 50})
        docs = await client.call_tool("list_documents", {})
        return {
            "search_rag": json.dumps(hits.structured_content),
            "list_documents": json.dumps(docs.structured_content),
        }


def main() -> int:
    tokens = {who: run("app.users", "token", who).strip() for who in ("alice", "bob")}
    report: list[tuple[str, str, bool]] = []

    def check(name: str, bob_text: str, alice_text: str) -> None:
        report.append((name, "bob sees none of them", not shown(bob_text)))
        report.append((name, "alice finds it", bool(shown(alice_text))))

    ask = {who: run("app.ask", "--as", who, "--json", "--", QUESTION) for who in tokens}
    check("python -m app.ask --as NAME --json", ask["bob"], ask["alice"])

    web_port, mcp_port = free_port(), free_port()
    servers = [start("app.web", "--port", str(web_port)), start("app.mcp", "--http", f"127.0.0.1:{mcp_port}")]
    try:
        base = f"http://127.0.0.1:{web_port}"
        with httpx.Client(base_url=base, timeout=600) as web:
            report.append(("/api/documents without a token", "401", web.get("/api/documents").status_code == 401))
            for route in ("/api/documents", f"/api/source?id={quote(SOURCE)}", f"/files/{quote(FILE)}"):
                got = {w: web.get(route, headers={"Authorization": f"Bearer {t}"}).text for w, t in tokens.items()}
                check(route, got["bob"], got["alice"])
            answers = {
                w: web.post("/api/ask", json={"question": QUESTION}, headers={"Authorization": f"Bearer {t}"}).text
                for w, t in tokens.items()
            }
            check("POST /api/ask (server-sent events)", answers["bob"], answers["alice"])
        results = {w: asyncio.run(mcp_checks(f"http://127.0.0.1:{mcp_port}/mcp", t)) for w, t in tokens.items()}
        for tool in ("search_rag", "list_documents"):
            check(f"MCP {tool}", results["bob"][tool], results["alice"][tool])
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=30)
    for name, what, ok in report:
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {what}")
    return 0 if all(ok for _, _, ok in report) else 1


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
