"""app.serving.access: the bearer token (from MCP_TOKEN, a file, or made into a 0600 file), loopback
detection, the Host/Origin allow-lists, and the AccessGuard middleware on a tiny real Starlette app
and on the real MCP server's app (exact values; nothing mocked). The real server process is in
tests/integration/test_mcp_auth.py."""

from __future__ import annotations

import os
import stat
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.config import Settings
from app.errors import RagError
from app.mcp.server import build_server, http_app, start_lines
from app.serving import hosts
from app.serving.access import Token, TokenFileError, bearer_token, guard, read_token_file, resolve_token, token_matches
from app.serving.hosts import (
    MachineNames,
    allowed_hosts,
    allowed_origins,
    host_allowed,
    host_pattern,
    is_loopback,
    origin_allowed,
    origin_value,
)

TOKEN = "s3cret-token_for-tests"

# What this machine is called, fixed for these tests (the real one is asked in tests/test_sharing.py).
MACHINE = MachineNames(("127.0.0.1", "::1", "192.0.2.10", "2001:db8::10", "fe80::1%eth0"), ("ragbox", "localhost"))


@pytest.fixture(autouse=True)
def fixed_machine(monkeypatch):
    """Servers bound beyond loopback see :data:`MACHINE` instead of this machine's own names."""
    monkeypatch.setattr(hosts, "this_machine", lambda: MACHINE)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_zero():
    """Run with umask 0, so modes come from the code and not from a friendly umask."""
    old = os.umask(0)
    yield
    os.umask(old)


# --- the token ------------------------------------------------------------------------------


def test_resolve_token_prefers_mcp_token_and_writes_no_file(tmp_path):
    path = tmp_path / ".secrets" / "mcp_token"
    token = resolve_token("from-env", path)
    assert (token.value, token.source, token.created) == ("from-env", "MCP_TOKEN", False)
    assert token.describe() == "from MCP_TOKEN"
    assert not path.parent.exists()


def test_resolve_token_reads_a_private_file(tmp_path):
    path = tmp_path / "token"
    path.write_text("  stored-token\n", encoding="utf-8")
    path.chmod(0o600)
    token = resolve_token("", path)
    assert (token.value, token.source, token.created) == ("stored-token", str(path), False)
    assert token.describe() == f"in {path}"


def test_resolve_token_creates_a_0600_file_in_a_0700_folder_once(tmp_path, umask_zero):
    path = tmp_path / "state" / ".secrets" / "mcp_token"
    first = resolve_token("", path)
    assert first.created and first.source == str(path) and len(first.value) == 43  # token_urlsafe(32)
    assert path.read_text(encoding="utf-8") == first.value + "\n"
    assert (_mode(path), _mode(path.parent)) == (0o600, 0o700)
    assert first.describe() == f"in {path} (created now, mode 0600)"
    again = resolve_token("", path)
    assert (again.value, again.created) == (first.value, False)
    assert resolve_token("", tmp_path / "other" / "mcp_token").value != first.value


def test_token_repr_hides_the_value():
    assert TOKEN not in repr(Token(TOKEN, "MCP_TOKEN"))


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o620, 0o700 | 0o004])
def test_read_token_file_refuses_a_file_others_can_open(tmp_path, mode):
    path = tmp_path / "mcp_token"
    path.write_text("t\n", encoding="utf-8")
    path.chmod(mode)
    with pytest.raises(TokenFileError) as info:
        resolve_token("", path)
    assert str(info.value) == (
        f"the MCP token file {path} is open to other users (mode {mode:04o}): run "
        f"`chmod 600 {path}` (or delete it, and a new token is made at the next start)"
    )
    assert isinstance(info.value, RagError)


@pytest.mark.parametrize(
    "content, error",
    [
        ("", "is empty: delete it to make a new token, or set MCP_TOKEN"),
        (" \n", "is empty: delete it to make a new token, or set MCP_TOKEN"),
    ],
)
def test_read_token_file_refuses_an_empty_file(tmp_path, content, error):
    path = tmp_path / "mcp_token"
    path.write_text(content, encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(TokenFileError, match=error):
        read_token_file(path)


def test_read_token_file_of_a_missing_file_is_none(tmp_path):
    assert read_token_file(tmp_path / "nothing") is None


def test_resolve_token_never_writes_through_a_dangling_link(tmp_path):
    path = tmp_path / "mcp_token"
    path.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(TokenFileError, match="something else is in the way"):
        resolve_token("", path)
    assert not (tmp_path / "elsewhere").exists()


def test_resolve_token_says_when_the_file_cannot_be_reached(tmp_path):
    (tmp_path / "plain").write_text("", encoding="utf-8")
    path = tmp_path / "plain" / "mcp_token"
    with pytest.raises(TokenFileError) as info:
        resolve_token("", path)
    assert str(info.value) == f"cannot read the MCP token file {path} (Not a directory)"


@pytest.mark.parametrize(
    "header, expected",
    [
        (None, None),
        ("", None),
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER  abc ", "abc"),
        ("Basic abc", None),
        ("Bearer", None),
        ("Bearer   ", None),
        ("Bearerabc", None),
        ("abc", None),
    ],
)
def test_bearer_token_reads_the_authorization_header(header, expected):
    assert bearer_token(header) == expected


@pytest.mark.parametrize(
    "given, expected, ok",
    [
        ("abc", "abc", True),
        ("abd", "abc", False),
        ("ab", "abc", False),
        ("abcd", "abc", False),
        (None, "abc", False),
        ("", "", False),
        ("ü", "abc", False),
        ("ü", "ü", True),
    ],
)
def test_token_matches_exactly(given, expected, ok):
    assert token_matches(given, expected) is ok


# --- addresses, hosts, origins ----------------------------------------------------------------


@pytest.mark.parametrize(
    "host, expected",
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("127.255.255.254", True),
        ("localhost", True),
        ("LocalHost", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("128.0.0.1", False),
        ("192.168.1.5", False),
        ("10.0.0.1", False),
        ("::2", False),
        ("example.com", False),
        ("localhost.example.com", False),
        ("127.0.0.1.nip.io", False),
    ],
)
def test_is_loopback(host, expected):
    assert is_loopback(host) is expected


@pytest.mark.parametrize(
    "host, port, extra, expected",
    [
        ("127.0.0.1", 8765, (), ("127.0.0.1:8765", "localhost:8765", "[::1]:8765")),
        ("localhost", 8765, (), ("localhost:8765", "127.0.0.1:8765", "[::1]:8765")),
        ("::1", 9000, (), ("[::1]:9000", "127.0.0.1:9000", "localhost:9000")),
        ("127.0.0.2", 9000, (), ("127.0.0.2:9000", "127.0.0.1:9000", "localhost:9000", "[::1]:9000")),
        ("0.0.0.0", 8765, (), ("127.0.0.1:8765", "localhost:8765", "[::1]:8765", "192.0.2.10:8765", "ragbox:8765")),
        (
            "::",
            8765,
            (),
            ("127.0.0.1:8765", "localhost:8765", "[::1]:8765", "192.0.2.10:8765", "[2001:db8::10]:8765", "ragbox:8765"),
        ),
        ("192.168.1.5", 8765, (), ("192.168.1.5:8765", "ragbox:8765")),
        ("127.0.0.1", 80, (), ("127.0.0.1:80", "localhost:80", "[::1]:80", "127.0.0.1", "localhost", "[::1]")),
        (
            "192.168.1.5",
            8765,
            (
                "rag.example",
                "Rag.Example.COM:8443",
                "[fe80::1]",
                "[fe80::2]:8765",
                "fe80::3",
                "10.0.0.7:*",
                "192.168.1.5:8765",
            ),
            (
                "192.168.1.5:8765",
                "ragbox:8765",
                "rag.example:*",
                "rag.example.com:8443",
                "[fe80::1]:*",
                "[fe80::2]:8765",
                "[fe80::3]:*",
                "10.0.0.7:*",
            ),
        ),
    ],
)
def test_allowed_hosts(host, port, extra, expected):
    assert allowed_hosts(host, port, extra) == expected


@pytest.mark.parametrize(
    "entry", ["*", "*.example.com", "a b", "http://x", "rag.example:https", "[::1]x", ":8765", "[]", "rag.example/path"]
)
def test_host_pattern_refuses_what_is_not_a_host(entry):
    with pytest.raises(ValueError) as info:
        host_pattern(entry)
    assert str(info.value) == f"ALLOWED_HOSTS: {entry!r} is not a host name or host:port"


@pytest.mark.parametrize(
    "host, expected",
    [
        ("127.0.0.1:8765", True),
        ("LOCALHOST:8765", True),
        ("[::1]:8765", True),
        ("localhost:8766", False),
        ("127.0.0.1", False),
        ("127.0.0.1:87650", False),
        ("evil.example", False),
        ("evil.example:8765", False),
        ("rag.example", True),
        ("rag.example:443", True),
        ("rag.example:x", False),
        ("rag.example.evil:80", False),
        ("sub.rag.example:80", False),
        ("127.0.0.1:8765.evil", False),
        (None, False),
        ("", False),
    ],
)
def test_host_allowed(host, expected):
    patterns = allowed_hosts("127.0.0.1", 8765, ("rag.example",))
    assert host_allowed(host, patterns) is expected


@pytest.mark.parametrize(
    "host, port, extra, expected",
    [
        ("127.0.0.1", 8765, (), ("http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765")),
        (
            "0.0.0.0",
            8765,
            (),
            (
                "http://127.0.0.1:8765",
                "http://localhost:8765",
                "http://[::1]:8765",
                "http://192.0.2.10:8765",
                "http://ragbox:8765",
            ),
        ),
        ("192.168.1.5", 8765, (), ("http://192.168.1.5:8765", "http://ragbox:8765")),
        (
            "192.168.1.5",
            8765,
            ("https://Rag.Example.com/", "http://localhost:3000"),
            ("http://192.168.1.5:8765", "http://ragbox:8765", "https://rag.example.com", "http://localhost:3000"),
        ),
    ],
)
def test_allowed_origins(host, port, extra, expected):
    assert allowed_origins(host, port, extra) == expected


@pytest.mark.parametrize(
    "entry", ["rag.example.com", "ftp://rag.example.com", "https://rag.example.com/app", "*", "https://"]
)
def test_origin_value_refuses_what_is_not_an_origin(entry):
    with pytest.raises(ValueError) as info:
        origin_value(entry)
    assert str(info.value) == f"ALLOWED_ORIGINS: {entry!r} is not an origin such as https://rag.example.com"


@pytest.mark.parametrize(
    "origin, expected",
    [
        (None, True),
        ("http://127.0.0.1:8765", True),
        ("http://localhost:8765", True),
        ("HTTP://LOCALHOST:8765/", True),
        ("http://localhost:3000", False),
        ("http://127.0.0.1:8766", False),
        ("https://127.0.0.1:8765", False),
        ("http://localhost", False),
        ("null", False),
        ("", False),
        ("http://evil.example", False),
        ("https://rag.example.com", True),
        ("https://rag.example.com:444", False),
    ],
)
def test_origin_allowed(origin, expected):
    origins = allowed_origins("127.0.0.1", 8765, ("https://rag.example.com",))
    assert origin_allowed(origin, origins) is expected


# --- the middleware on a tiny Starlette app ----------------------------------------------------


def _tiny_app(calls: list[str]) -> Starlette:
    """/mcp answers with what its lifespan loaded, and records each call that reached it."""

    @asynccontextmanager
    async def lifespan(app):
        app.state.loaded = "service"
        yield

    async def endpoint(request):
        calls.append(request.url.path)
        return JSONResponse({"ok": request.app.state.loaded})

    return Starlette(routes=[Route("/mcp", endpoint, methods=["GET", "POST"])], lifespan=lifespan)


RIGHT = {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.parametrize(
    "headers, status, error",
    [
        ({}, 401, "unauthorized"),
        ({"Authorization": "Bearer wrong"}, 401, "unauthorized"),
        ({"Authorization": f"Bearer {TOKEN}x"}, 401, "unauthorized"),
        ({"Authorization": f"Basic {TOKEN}"}, 401, "unauthorized"),
        ({"Authorization": TOKEN}, 401, "unauthorized"),
        (RIGHT, 200, None),
        ({"Authorization": f"bearer {TOKEN}"}, 200, None),
        ({**RIGHT, "Host": "evil.example"}, 421, "misdirected_request"),
        ({**RIGHT, "Host": "evil.example:8765"}, 421, "misdirected_request"),
        ({**RIGHT, "Host": "localhost:9999"}, 421, "misdirected_request"),
        ({"Host": "evil.example", "Origin": "http://evil.example"}, 421, "misdirected_request"),
        ({**RIGHT, "Origin": "http://evil.example"}, 403, "forbidden_origin"),
        ({**RIGHT, "Origin": "http://localhost:3000"}, 403, "forbidden_origin"),
        ({**RIGHT, "Origin": "http://127.0.0.1:8766"}, 403, "forbidden_origin"),
        ({**RIGHT, "Origin": "null"}, 403, "forbidden_origin"),
        ({**RIGHT, "Origin": "http://127.0.0.1:8765"}, 200, None),
        ({**RIGHT, "Origin": "http://localhost:8765", "Host": "localhost:8765"}, 200, None),
        ({**RIGHT, "Origin": "https://rag.example.com"}, 200, None),
        ({**RIGHT, "Host": "rag.example"}, 200, None),
        ({**RIGHT, "Host": "rag.example:443"}, 200, None),
        ({"Origin": "http://127.0.0.1:8765"}, 401, "unauthorized"),
    ],
)
def test_access_guard_on_loopback(headers, status, error):
    calls: list[str] = []
    app = guard(_tiny_app(calls), TOKEN, "127.0.0.1", 8765, ("rag.example",), ("https://rag.example.com",))
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        response = client.post("/mcp", headers=headers, json={})
    assert response.status_code == status
    if status == 200:
        assert response.json() == {"ok": "service"} and calls == ["/mcp"]  # the lifespan ran, then the app
        return
    assert calls == [] and response.json()["error"] == error  # refused before the app saw anything
    assert response.headers.get("WWW-Authenticate", "").startswith("Bearer ") is (status == 401)


@pytest.mark.parametrize(
    "headers, challenge",
    [
        ({}, 'Bearer realm="rag-ja"'),
        ({"Authorization": f"Basic {TOKEN}"}, 'Bearer realm="rag-ja"'),
        ({"Authorization": "Bearer wrong"}, 'Bearer realm="rag-ja", error="invalid_token"'),
    ],
)
def test_access_guard_401_says_how_to_authenticate(headers, challenge):
    app = guard(_tiny_app([]), TOKEN, "127.0.0.1", 8765)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        response = client.get("/mcp", headers=headers)
    assert (response.status_code, response.headers["WWW-Authenticate"]) == (401, challenge)
    assert response.json() == {"error": "unauthorized", "detail": "send the header Authorization: Bearer <token>"}


@pytest.mark.parametrize(
    "headers, status",
    [
        ({}, 401),
        (RIGHT, 200),
        ({**RIGHT, "Host": "evil.example", "Origin": "http://evil.example"}, 421),
        ({**RIGHT, "Host": "0.0.0.0:8765"}, 421),
        ({**RIGHT, "Origin": "http://evil.example"}, 403),
        ({**RIGHT, "Host": "localhost:8765"}, 200),
    ],
)
def test_access_guard_on_all_addresses(headers, status):
    calls: list[str] = []
    app = guard(_tiny_app(calls), TOKEN, "0.0.0.0", 8765)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert client.get("/mcp", headers=headers).status_code == status
    assert calls == (["/mcp"] if status == 200 else [])


def test_access_guard_refuses_every_path():
    calls: list[str] = []
    app = guard(_tiny_app(calls), TOKEN, "127.0.0.1", 8765)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert client.get("/anything").status_code == 401
        assert client.get("/anything", headers=RIGHT).status_code == 404
    assert calls == []


# --- the real MCP server's app -----------------------------------------------------------------


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_http_app_guards_the_sdk_app_and_keeps_its_lifespan():
    loaded: list[str] = []

    def factory():
        loaded.append("service")
        return SimpleNamespace(list_documents=lambda: [])

    server = build_server(factory)
    app = http_app(
        server,
        Settings().changed(servers={"allowed_origins": ("https://rag.example.com",)}),
        "127.0.0.1",
        8765,
        Token(TOKEN, "MCP_TOKEN"),
    )
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert loaded == ["service"]  # the lifespan loaded the service once, at start
        assert client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS).status_code == 401
        assert (
            client.post(
                "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **RIGHT, "Origin": "http://localhost:3000"}
            ).status_code
            == 403
        )
        ok = client.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **RIGHT, "Origin": "https://rag.example.com"})
        assert ok.status_code == 200 and "rag-ja" in ok.text
    assert loaded == ["service"]


@pytest.mark.parametrize(
    "settings, error",
    [
        (Settings().changed(servers={"allowed_hosts": ("*",)}), "ALLOWED_HOSTS: '*' is not a host name or host:port"),
        (
            Settings().changed(servers={"allowed_origins": ("rag.example.com",)}),
            "ALLOWED_ORIGINS: 'rag.example.com' is not an origin such as https://rag.example.com",
        ),
    ],
)
def test_http_app_refuses_bad_allow_lists(settings, error):
    server = build_server(lambda: None)
    with pytest.raises(ValueError) as info:
        http_app(server, settings, "127.0.0.1", 8765, Token(TOKEN, "MCP_TOKEN"))
    assert str(info.value) == error


@pytest.mark.parametrize(
    "host, token, expected",
    [
        (
            "127.0.0.1",
            Token(TOKEN, "MCP_TOKEN"),
            [
                "MCP server on http://127.0.0.1:8765/mcp (Ctrl-C to stop)",
                "token: from MCP_TOKEN; clients send the header Authorization: Bearer <token>",
            ],
        ),
        (
            "::1",
            Token(TOKEN, ".secrets/mcp_token", created=True),
            [
                "MCP server on http://[::1]:8765/mcp (Ctrl-C to stop)",
                "token: in .secrets/mcp_token (created now, mode 0600); clients send the header "
                "Authorization: Bearer <token>",
            ],
        ),
        (
            "0.0.0.0",
            Token(TOKEN, ".secrets/mcp_token"),
            [
                "MCP server on http://192.0.2.10:8765/mcp (on this machine also http://127.0.0.1:8765/mcp; Ctrl-C to "
                "stop)",
                "token: in .secrets/mcp_token; clients send the header Authorization: Bearer <token>",
                "warning: listening on 0.0.0.0: every request needs the token; the traffic is not encrypted (use an SSH "
                "tunnel or a TLS proxy); Host names accepted: 127.0.0.1:8765, localhost:8765, [::1]:8765, "
                "192.0.2.10:8765, ragbox:8765 (add more with ALLOWED_HOSTS)",
            ],
        ),
        (
            "192.168.1.5",
            Token(TOKEN, "MCP_TOKEN"),
            [
                "MCP server on http://192.168.1.5:8765/mcp (Ctrl-C to stop)",
                "token: from MCP_TOKEN; clients send the header Authorization: Bearer <token>",
                "warning: listening on 192.168.1.5: every request needs the token; the traffic is not encrypted (use an SSH "
                "tunnel or a TLS proxy); Host names accepted: 192.168.1.5:8765, ragbox:8765 (add more with "
                "ALLOWED_HOSTS)",
            ],
        ),
    ],
)
def test_start_lines_say_where_the_token_is_but_never_the_token(host, token, expected):
    lines = start_lines(host, 8765, token)
    assert lines == expected and not any(TOKEN in line for line in lines)


def test_the_access_log_names_paths_without_their_query_strings():
    """Issue 40, case 7: uvicorn's access line of ``GET /mcp?token=…`` keeps the path, not the query."""
    import io
    import logging
    import logging.config

    from app.mcp.server import PathOnly, access_log_config

    config = access_log_config()
    out = io.StringIO()
    config["handlers"]["access"]["stream"] = out
    config["formatters"]["access"]["use_colors"] = False
    logging.config.dictConfig(config)
    logger = logging.getLogger("uvicorn.access")
    try:
        logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/mcp?token=SECRET&x=1", "1.1", 200)
        logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "POST", "/mcp", "1.1", 202)
    finally:
        for handler in logger.handlers:
            handler.filters = [f for f in handler.filters if not isinstance(f, PathOnly)]
    assert out.getvalue().splitlines() == [
        'INFO:     127.0.0.1:5000 - "GET /mcp?… HTTP/1.1" 200 OK',
        'INFO:     127.0.0.1:5000 - "POST /mcp HTTP/1.1" 202 Accepted',
    ]
