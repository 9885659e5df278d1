"""Private by default, for real: ``python -m app.mcp --http`` started as a user would (embedded
PostgreSQL, offline models), asked with httpx and the MCP SDK's own client. Without the bearer token
nothing runs (401); the token file is made 0600 in a 0700 folder and another local user can read
neither it nor anything from the server; on 0.0.0.0 it warns and still checks Host and Origin."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest

from app.serving.hosts import server_hosts
from tests.integration.conftest import ROOT, free_port

pytestmark = pytest.mark.integration

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def server_env(integration_env: dict, **extra: str) -> dict:
    """The test environment for a server process, with no token variables from outside."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MCP_TOKEN", "MCP_TOKEN_FILE", "ALLOWED_HOSTS", "ALLOWED_ORIGINS")
    }
    return {**env, **integration_env, **extra}


@contextmanager
def http_server(env: dict, bind: str, port: int, logs: Path) -> Iterator[subprocess.Popen]:
    """``python -m app.mcp --http BIND:PORT --no-preload`` until the block ends; output in ``logs``."""
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "stdout", "w") as out, open(logs / "stderr", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.mcp", "--http", f"{bind}:{port}", "--no-preload"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=err,
            text=True,
        )
    try:
        deadline = time.time() + 180
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, (logs / "stderr").read_text()
            assert time.time() < deadline, "the HTTP server did not start"
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def output(logs: Path) -> str:
    """What the server printed so far (stdout and stderr)."""
    return (logs / "stdout").read_text() + (logs / "stderr").read_text()


@asynccontextmanager
async def mcp_client(url: str, token: str):
    """The SDK's client over streamable HTTP, sending ``Authorization: Bearer <token>``."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def call_tool(url: str, token: str, name: str) -> tuple[bool, str]:
    """Call one tool with the token: (is_error, the result as text)."""

    async def session():
        async with mcp_client(url, token) as client:
            result = await client.call_tool(name, {})
            return result.is_error, json.dumps(result.structured_content or result.content[0].text, ensure_ascii=False)

    return asyncio.run(session())


def open_session(url: str, token: str) -> dict[str, str]:
    """Initialize a session by hand (with the token); the headers later requests of it carry."""
    first = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    assert first.status_code == 200, first.text
    session = {
        **MCP_HEADERS,
        "mcp-session-id": first.headers["mcp-session-id"],
        "mcp-protocol-version": INITIALIZE["params"]["protocolVersion"],
    }
    done = httpx.post(
        url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**session, "Authorization": f"Bearer {token}"},
    )
    assert done.status_code == 202, done.text
    return session


@pytest.fixture
def private_home() -> Iterator[Path]:
    """A folder others may enter (0755), like a home directory, for the server's token file."""
    base = Path(tempfile.mkdtemp(prefix="rag-auth-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_http_needs_the_token_before_any_tool_runs(integration_env, private_home):
    data = private_home / "data"
    (data / "csv").mkdir(parents=True)
    (data / "csv" / "warranty.csv").write_text("製品,保証\nZQ7781,保証期間は5年です\n", encoding="utf-8")
    token_file = private_home / ".secrets" / "mcp_token"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = server_env(
        integration_env, DB_NAME=f"rag_auth_{uuid.uuid4().hex[:6]}", DATA_DIR=str(data), MCP_TOKEN_FILE=str(token_file)
    )
    with http_server(env, "127.0.0.1", port, private_home / "logs"):
        token = token_file.read_text(encoding="utf-8").strip()
        assert len(token) == 43
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
        printed = output(private_home / "logs")
        assert f"MCP server on {url} (Ctrl-C to stop)\n" in printed
        assert (
            f"token: in {token_file} (created now, mode 0600); clients send the header Authorization: Bearer <token>\n"
        ) in printed
        assert "warning: listening on" not in printed

        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Bearer {token[:-1]}"},
            {"Authorization": f"Basic {token}"},
        ):
            refused = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
            assert refused.status_code == 401, headers
            assert refused.headers["WWW-Authenticate"].startswith("Bearer realm=")
            assert refused.json()["error"] == "unauthorized" and "mcp-session-id" not in refused.headers

        # a live session, but a call without the token: refused, and the sync never ran
        session = open_session(url, token)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "sync", "arguments": {}}}
        assert httpx.post(url, json=call, headers=session).status_code == 401
        assert httpx.post(url, json=call, headers={**session, "Authorization": "Bearer nope"}).status_code == 401
        time.sleep(1)
        _, listed = call_tool(url, token, "list_documents")
        assert "csv/warranty.csv" not in listed

        # with the token, the tools work
        failed, synced = call_tool(url, token, "sync")
        assert not failed and "1 added" in synced, synced
        failed, listed = call_tool(url, token, "list_documents")
        assert not failed and "csv/warranty.csv" in listed, listed
        assert token not in output(private_home / "logs")


def test_http_on_all_addresses_warns_and_still_checks_token_host_and_origin(integration_env, tmp_path):
    token = "tok-" + uuid.uuid4().hex
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = server_env(
        integration_env,
        MCP_TOKEN=token,
        MCP_TOKEN_FILE=str(tmp_path / "never" / "mcp_token"),
        ALLOWED_HOSTS="rag.example",
        ALLOWED_ORIGINS="https://rag.example",
    )
    right = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    with http_server(env, "0.0.0.0", port, tmp_path / "logs"):
        printed = output(tmp_path / "logs")
        assert "token: from MCP_TOKEN; clients send the header Authorization: Bearer <token>\n" in printed
        names = ", ".join(server_hosts("0.0.0.0", port))  # loopback, then this machine's addresses and names
        assert names.startswith(f"127.0.0.1:{port}, localhost:{port}, [::1]:{port}")
        assert (
            f"warning: listening on 0.0.0.0: every request needs the token; the traffic is not encrypted "
            f"(use an SSH tunnel or a TLS proxy); Host names accepted: {names} (add more with ALLOWED_HOSTS)\n"
        ) in printed
        assert token not in printed and not (tmp_path / "never").exists()

        assert httpx.post(url, json=INITIALIZE, headers=MCP_HEADERS).status_code == 401
        evil = {"Host": "evil.example", "Origin": "http://evil.example"}
        assert httpx.post(url, json=INITIALIZE, headers={**right, **evil}).status_code == 421
        assert httpx.post(url, json=INITIALIZE, headers={**right, "Host": f"0.0.0.0:{port}"}).status_code == 421
        for origin in ("http://evil.example", f"http://localhost:{port + 1}", "null"):
            assert httpx.post(url, json=INITIALIZE, headers={**right, "Origin": origin}).status_code == 403, origin
        for extra in (
            {},
            {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
            {"Host": f"rag.example:{port}", "Origin": "https://rag.example"},
        ):
            ok = httpx.post(url, json=INITIALIZE, headers={**right, **extra})
            assert ok.status_code == 200 and "rag-ja" in ok.text, (extra, ok.text)

        other = socket.gethostbyname(socket.gethostname())
        if not other.startswith("127."):  # reached by the machine's own address: accepted, still needs the token
            far = f"http://{other}:{port}/mcp"
            assert httpx.post(far, json=INITIALIZE, headers=MCP_HEADERS).status_code == 401
            assert httpx.post(far, json=INITIALIZE, headers=right).status_code == 200


def test_http_refuses_a_token_file_others_can_read(integration_env, tmp_path):
    token_file = tmp_path / "mcp_token"
    token_file.write_text("shared-token\n", encoding="utf-8")
    token_file.chmod(0o644)
    env = server_env(integration_env, MCP_TOKEN_FILE=str(token_file))
    done = subprocess.run(
        [sys.executable, "-m", "app.mcp", "--http", str(free_port()), "--no-preload"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: the MCP token file {token_file} is open to other users (mode 0644): run "
        f"`chmod 600 {token_file}` (or delete it, and a new token is made at the next start)\n"
    )
    assert "shared-token" not in done.stdout + done.stderr


@pytest.fixture
def other_user() -> Iterator[str]:
    """A throwaway local user (root only), removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second local user")
    if not (shutil.which("useradd") and shutil.which("su") and shutil.which("curl")):
        pytest.skip("needs useradd, su and curl")
    name = f"ragt{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def as_user(name: str, command: str) -> subprocess.CompletedProcess:
    """Run a shell command as another local user."""
    return subprocess.run(["su", "-s", "/bin/sh", name, "-c", command], capture_output=True, text=True, timeout=60)


def test_another_local_user_can_neither_read_the_token_nor_call_without_it(integration_env, private_home, other_user):
    token_file = private_home / ".secrets" / "mcp_token"
    port = free_port()
    env = server_env(integration_env, MCP_TOKEN_FILE=str(token_file))
    with http_server(env, "127.0.0.1", port, private_home / "logs"):
        token = token_file.read_text(encoding="utf-8").strip()
        assert as_user(other_user, f"ls {private_home}").returncode == 0  # the home folder is open to them
        for folder_mode in (0o700, 0o755):  # the folder keeps them out, and so does the file alone
            token_file.parent.chmod(folder_mode)
            read = as_user(other_user, f"cat {token_file}")
            assert read.returncode != 0 and token not in read.stdout, read
        token_file.parent.chmod(0o700)
        curl = (
            f"curl -s -o /dev/null -w '%{{http_code}}' -X POST -H 'Content-Type: application/json' "
            f"-H 'Accept: application/json, text/event-stream' -d '{json.dumps(INITIALIZE)}' "
            f"http://127.0.0.1:{port}/mcp"
        )
        assert as_user(other_user, curl).stdout == "401"
        assert as_user(other_user, curl.replace("curl ", "curl -H 'Authorization: Bearer guess' ", 1)).stdout == "401"
        assert (
            as_user(other_user, curl.replace("curl ", f"curl -H 'Authorization: Bearer {token}' ", 1)).stdout == "200"
        )  # the token, not who asks, decides
