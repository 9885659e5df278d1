"""Sharing the page with colleagues: this server's own names (every address and name of the machine
when bound to 0.0.0.0), PUBLIC_URL as Host and Origin, the page's own Origin under whichever name it
was opened, the start lines (the URL colleagues open, never the secret), and the security headers on
every response. Exact values; this machine's names are fixed with :class:`MachineNames` except where
the real ones are asked. The same behaviour over a real network interface is in
tests/integration/test_sharing_netns.py."""

from __future__ import annotations

import socket
from contextlib import asynccontextmanager

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.cli import web as web_cli
from app.config import Settings
from app.mcp.server import start_lines as mcp_start_lines
from app.serving import hosts
from app.serving.access import Token, guard
from app.serving.hosts import (
    MachineNames,
    access_lists,
    allowed_hosts,
    colleague_url,
    own_names,
    public_host,
    public_origin,
    same_origins,
    server_hosts,
    this_machine,
)
from app.web.guard import web_guard
from app.web.headers import SecurityHeaders, with_security_headers
from app.web.server import guarded_app
from tests.test_web_app import FakeService
from tests.test_web_guard import open_gate

SECRET = "s3cret-web-token-for-sharing"
BEARER = {"Authorization": f"Bearer {SECRET}"}
ADDRESSES = ("127.0.0.1", "::1", "192.0.2.10", "2001:db8::10", "fe80::1%eth0", "10.8.0.1")
HOSTNAMES = ("ragbox", "RagBox.Example.JP", "localhost")
MACHINE = MachineNames(ADDRESSES, HOSTNAMES)


@pytest.fixture(autouse=True)
def fixed_machine(monkeypatch):
    """Servers built without an explicit ``machine`` see :data:`MACHINE`."""
    monkeypatch.setattr(hosts, "this_machine", lambda: MACHINE)


# --- own names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bind, expected",
    [
        (
            "0.0.0.0",
            (
                "127.0.0.1:8780",
                "localhost:8780",
                "[::1]:8780",
                "192.0.2.10:8780",
                "10.8.0.1:8780",
                "ragbox:8780",
                "ragbox.example.jp:8780",
            ),
        ),
        (
            "::",
            (
                "127.0.0.1:8780",
                "localhost:8780",
                "[::1]:8780",
                "192.0.2.10:8780",
                "[2001:db8::10]:8780",
                "10.8.0.1:8780",
                "ragbox:8780",
                "ragbox.example.jp:8780",
            ),
        ),
        ("[::]", None),  # the same as ::
        ("192.0.2.10", ("192.0.2.10:8780", "ragbox:8780", "ragbox.example.jp:8780")),
        ("127.0.0.1", ("127.0.0.1:8780", "localhost:8780", "[::1]:8780")),
        ("::1", ("[::1]:8780", "127.0.0.1:8780", "localhost:8780")),
    ],
)
def test_own_names(bind, expected):
    if expected is None:
        expected = own_names("::", 8780, ADDRESSES, HOSTNAMES)
    assert own_names(bind, 8780, ADDRESSES, HOSTNAMES) == expected


def test_own_names_skip_what_no_client_can_send():
    assert own_names("0.0.0.0", 80, ("0.0.0.0", "not-an-address", "127.0.1.1"), ("bad name", "vm.", "[x]")) == (
        "127.0.0.1:80",
        "localhost:80",
        "[::1]:80",
        "vm:80",
    )


def test_this_machine_is_asked_from_its_interfaces():
    """The real discovery (``this_machine`` as imported, not the fixture's stand-in): the loopback
    address is among the interfaces' addresses, the host name is the one the system reports, and
    every IPv4 address of an interface becomes a Host name of a server on 0.0.0.0."""
    import psutil

    real = this_machine()
    assert "127.0.0.1" in real.addresses
    assert real.hostnames[0] == socket.gethostname().lower()
    ipv4 = [
        entry.address
        for entries in psutil.net_if_addrs().values()
        for entry in entries
        if entry.family == socket.AF_INET and not entry.address.startswith("127.")
    ]
    names = own_names("0.0.0.0", 8780, real.addresses, real.hostnames)
    assert [f"{address}:8780" for address in ipv4] == [n for n in names if n.split(":")[0] in ipv4]


def test_a_loopback_server_never_looks_at_the_machine(monkeypatch):
    def fail():
        raise AssertionError("looked up")

    monkeypatch.setattr(hosts, "this_machine", fail)
    assert server_hosts("127.0.0.1", 8780) == ("127.0.0.1:8780", "localhost:8780", "[::1]:8780")


@pytest.mark.parametrize(
    "bind, public_url, machine, expected",
    [
        ("0.0.0.0", "", MACHINE, "http://192.0.2.10:8780"),
        ("::", "", MachineNames(("::1", "fe80::1%eth0", "2001:db8::10", "10.8.0.1"), ()), "http://10.8.0.1:8780"),
        ("::", "", MachineNames(("::1", "2001:db8::10"), ()), "http://[2001:db8::10]:8780"),
        ("0.0.0.0", "", MachineNames(("127.0.0.1",), ("ragbox",)), "http://ragbox:8780"),
        ("0.0.0.0", "", MachineNames(), "http://<this-machine>:8780"),
        ("192.0.2.10", "", MACHINE, "http://192.0.2.10:8780"),
        ("127.0.0.1", "", MACHINE, "http://127.0.0.1:8780"),
        ("0.0.0.0", "https://rag.example.co.jp/", MACHINE, "https://rag.example.co.jp"),
    ],
)
def test_colleague_url(bind, public_url, machine, expected):
    assert colleague_url(bind, 8780, public_url, machine) == expected


# --- PUBLIC_URL --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, host, origin",
    [
        ("https://rag.example.co.jp", "rag.example.co.jp", "https://rag.example.co.jp"),
        ("https://Rag.Example.co.jp:443/rag/", "rag.example.co.jp", "https://rag.example.co.jp"),
        ("http://rag.example.co.jp:80", "rag.example.co.jp", "http://rag.example.co.jp"),
        ("https://rag.example.co.jp:8443", "rag.example.co.jp:8443", "https://rag.example.co.jp:8443"),
        ("http://[2001:db8::1]:8780", "[2001:db8::1]:8780", "http://[2001:db8::1]:8780"),
        ("", None, None),
    ],
)
def test_public_url_host_and_origin(url, host, origin):
    assert (public_host(url), public_origin(url)) == (host, origin)


@pytest.mark.parametrize("url", ["rag.example.co.jp", "ftp://rag.example.co.jp", "https://", "https://u:p@rag.example"])
def test_a_bad_public_url_is_one_clear_error(url):
    with pytest.raises(ValueError) as info:
        public_host(url)
    assert str(info.value) == f"PUBLIC_URL: {url!r} is not an address such as https://rag.example.co.jp"


def test_access_lists_with_public_url_and_the_extras():
    hosts, origins = access_lists(
        "0.0.0.0",
        8780,
        ("rag.example",),
        ("https://intra.example",),
        public_url="https://rag.example.co.jp",
        machine=MachineNames(("192.0.2.10",), ("ragbox",)),
    )
    assert hosts == (
        "127.0.0.1:8780",
        "localhost:8780",
        "[::1]:8780",
        "192.0.2.10:8780",
        "ragbox:8780",
        "rag.example.co.jp",
        "rag.example:*",
    )
    assert origins == (
        "http://127.0.0.1:8780",
        "http://localhost:8780",
        "http://[::1]:8780",
        "http://192.0.2.10:8780",
        "http://ragbox:8780",
        "http://rag.example.co.jp",
        "http://rag.example:8780",
        "http://rag.example",
        "https://rag.example.co.jp",
        "https://intra.example",
    )


def test_same_origins_on_port_80_leave_the_port_out_as_browsers_do():
    hosts = allowed_hosts("127.0.0.1", 80)
    assert same_origins(hosts, 80) == (
        "http://127.0.0.1:80",
        "http://localhost:80",
        "http://[::1]:80",
        "http://127.0.0.1",
        "http://localhost",
        "http://[::1]",
    )


# --- the web page shared on 0.0.0.0 (the user's report) ---------------------------------------


class SharedService(FakeService):
    """tests.test_web_app's fake service, taking who asks (or not) as the app hands it in."""

    def ask(self, question, mode="hybrid", on_token=None, who=None, on_passages=None, stopped=None):
        return super().ask(question, mode, on_token)

    def list_documents(self, who=None):
        return super().list_documents()


def shared_page(**servers) -> TestClient:
    """The real page (fake service) as ``make web`` serves it: bound to 0.0.0.0 with WEB_TOKEN,
    behind the guard and the security headers."""
    settings = Settings().changed(servers={"web_token": SECRET, **servers})
    app = SecurityHeaders(guarded_app(SharedService(), settings, "0.0.0.0", 8780, gate=open_gate()))
    return TestClient(app, base_url="http://192.0.2.10:8780")


def test_a_colleague_reaches_the_page_by_the_machine_address_with_no_extra_setting():
    c = shared_page()
    documents = c.get("/api/documents", headers=BEARER)
    assert documents.status_code == 200 and "csv/faq.csv" in documents.text
    for host in ("192.0.2.10:8780", "ragbox:8780", "ragbox.example.jp:8780", "127.0.0.1:8780"):
        assert c.get("/api/documents", headers={**BEARER, "Host": host}).status_code == 200, host


@pytest.mark.parametrize("host", ["192.0.2.10:8780", "ragbox:8780", "ragbox.example.jp:8780"])
def test_the_page_s_own_post_is_accepted_under_whichever_name_it_was_opened(host):
    c = shared_page()
    own = {**BEARER, "Host": host, "Origin": f"http://{host}"}
    answer = c.post("/api/ask", json={"question": "受付時間"}, headers=own)
    assert answer.status_code == 200 and "受付時間は平日9時から18時です" in answer.text


def test_with_allowed_hosts_the_page_s_post_needs_no_allowed_origins():
    c = shared_page(allowed_hosts=("rag.example",))
    for host, origin in (("rag.example:8780", "http://rag.example:8780"), ("rag.example", "http://rag.example")):
        response = c.post("/api/ask", json={"question": "q"}, headers={**BEARER, "Host": host, "Origin": origin})
        assert response.status_code == 200, (host, origin)


@pytest.mark.parametrize(
    "headers, status",
    [
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://192.0.2.10:9999"}, 403),
        ({"Origin": "https://192.0.2.10:8780"}, 403),
        ({"Origin": "http://10.8.0.2:8780"}, 403),
        ({"Host": "evil.example"}, 421),
        ({"Host": "evil.example:8780"}, 421),
        ({"Host": "192.0.2.11:8780"}, 421),
        ({"Host": "0.0.0.0:8780"}, 421),
        ({"Host": "192.0.2.10:8781"}, 421),
    ],
)
def test_foreign_origins_and_hosts_are_still_refused(headers, status):
    response = shared_page().post("/api/ask", json={"question": "q"}, headers={**BEARER, **headers})
    assert response.status_code == status
    assert response.headers["X-Content-Type-Options"] == "nosniff"  # refusals carry the headers too


def tiny_app() -> Starlette:
    return Starlette(routes=[Route("/api/ask", lambda request: JSONResponse({"ok": True}), methods=["POST"])])


def test_web_guard_accepts_public_url_as_host_and_origin_exactly():
    app = web_guard(tiny_app(), SECRET, "127.0.0.1", 8780, public_url="https://rag.example.co.jp")
    c = TestClient(app, base_url="http://127.0.0.1:8780")
    via_proxy = {"Host": "rag.example.co.jp", "Origin": "https://rag.example.co.jp"}
    assert c.post("/api/ask", headers={**BEARER, **via_proxy}).status_code == 200
    assert c.post("/api/ask", headers={**BEARER, "Origin": "https://rag.example.co.jp"}).status_code == 200
    assert c.post("/api/ask", headers={**BEARER, "Origin": "https://rag.example.co.jp:8443"}).status_code == 403
    assert c.post("/api/ask", headers={**BEARER, "Origin": "https://evil.rag.example.co.jp"}).status_code == 403
    assert c.post("/api/ask", headers={**BEARER, "Host": "rag.example.co.jp:8443"}).status_code == 421
    # the old positional call keeps working
    old = web_guard(tiny_app(), SECRET, "127.0.0.1", 8780, ("rag.example",), ("https://rag.example",))
    assert (old.hosts[-1], old.origins[-1]) == ("rag.example:*", "https://rag.example")


def test_the_mcp_guard_knows_the_machine_too():
    app = guard(tiny_app(), SECRET, "0.0.0.0", 8765, public_url="https://rag.example.co.jp")
    c = TestClient(app, base_url="http://192.0.2.10:8765")
    assert c.post("/api/ask", headers={**BEARER, "Origin": "http://192.0.2.10:8765"}).status_code == 200
    assert c.post("/api/ask", headers={**BEARER, "Host": "rag.example.co.jp"}).status_code == 200
    assert c.post("/api/ask", headers={**BEARER, "Host": "evil.example"}).status_code == 421
    assert c.post("/api/ask", headers={**BEARER, "Origin": "http://evil.example"}).status_code == 403


# --- start lines -------------------------------------------------------------------------------


def test_web_start_lines_with_public_url_name_it_and_never_the_secret():
    lines = web_cli.start_lines("0.0.0.0", 8780, SECRET, "https://rag.example.co.jp", MACHINE)
    assert lines == [
        "web page on https://rag.example.co.jp/ (on this machine also http://127.0.0.1:8780/; Ctrl-C to stop)",
        "colleagues open https://rag.example.co.jp/?token=<token> once: <token> is their personal token (python -m "
        "app.users token NAME) or the shared secret WEB_TOKEN, never shown here (the page keeps it in a cookie, off "
        "the address bar); scripts send the header Authorization: Bearer <token>",
        "warning: listening on 0.0.0.0: every request needs a token; the traffic is not encrypted (use an SSH "
        "tunnel, or a TLS proxy and PUBLIC_URL); Host names accepted: 127.0.0.1:8780, localhost:8780, [::1]:8780, "
        "192.0.2.10:8780, 10.8.0.1:8780, ragbox:8780, ragbox.example.jp:8780, rag.example.co.jp (add more with "
        "ALLOWED_HOSTS)",
    ]
    assert SECRET not in "\n".join(lines)


def test_web_start_lines_behind_a_proxy_on_loopback():
    assert web_cli.start_lines("127.0.0.1", 8780, "", "https://rag.example.co.jp") == [
        "web page on https://rag.example.co.jp/ (on this machine also http://127.0.0.1:8780/; Ctrl-C to stop)"
    ]


def test_web_start_lines_on_one_address():
    assert web_cli.start_lines("192.0.2.10", 8780, SECRET, "", MACHINE)[0] == (
        "web page on http://192.0.2.10:8780/ (Ctrl-C to stop)"
    )


def test_mcp_start_lines_name_the_address_clients_use():
    lines = mcp_start_lines("0.0.0.0", 8765, Token(SECRET, "MCP_TOKEN"), "", MACHINE)
    assert (
        lines[0]
        == "MCP server on http://192.0.2.10:8765/mcp (on this machine also http://127.0.0.1:8765/mcp; Ctrl-C to stop)"
    )
    public = mcp_start_lines("127.0.0.1", 8765, Token(SECRET, "MCP_TOKEN"), "https://rag.example.co.jp")
    assert public == [
        "MCP server on https://rag.example.co.jp/mcp (on this machine also http://127.0.0.1:8765/mcp; Ctrl-C to stop)",
        "token: from MCP_TOKEN; clients send the header Authorization: Bearer <token>",
    ]
    assert SECRET not in "\n".join(lines + public)


# --- security headers --------------------------------------------------------------------------

BASE = {"x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "x-frame-options": "DENY"}


def headers_app() -> Starlette:
    loaded: list[str] = []

    @asynccontextmanager
    async def lifespan(app):
        loaded.append("started")
        yield

    async def page(request):
        return HTMLResponse(
            "<p>hi</p>", headers={"Content-Security-Policy": "default-src 'none'", "X-Content-Type-Options": "nosniff"}
        )

    app = Starlette(
        routes=[
            Route("/api/json", lambda request: JSONResponse({"a": 1})),
            Route("/api/cached", lambda request: JSONResponse({"a": 1}, headers={"Cache-Control": "max-age=60"})),
            Route("/file", lambda request: PlainTextResponse("text")),
            Route("/", page),
        ],
        lifespan=lifespan,
    )
    app.state.loaded = loaded
    return app


def header_map(response) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, value in response.headers.multi_items():
        out.setdefault(name.lower(), []).append(value)
    return out


def test_security_headers_on_json_files_and_pages():
    inner = headers_app()
    with TestClient(SecurityHeaders(inner)) as c:
        assert inner.state.loaded == ["started"]  # the lifespan passes through
        json_headers = header_map(c.get("/api/json"))
        assert {k: json_headers[k] for k in (*BASE, "cache-control")} == {
            **{k: [v] for k, v in BASE.items()},
            "cache-control": ["no-store"],
        }
        assert header_map(c.get("/api/cached"))["cache-control"] == ["max-age=60"]  # kept, not added twice
        file_headers = header_map(c.get("/file"))
        assert {k: file_headers[k] for k in BASE} == {k: [v] for k, v in BASE.items()}
        assert "cache-control" not in file_headers
        page_headers = header_map(c.get("/"))
        assert page_headers["content-security-policy"] == ["default-src 'none'"]  # the page's own, untouched
        assert page_headers["x-content-type-options"] == ["nosniff"]  # not duplicated
        assert page_headers["x-frame-options"] == ["DENY"]
        missing = header_map(c.get("/nowhere"))
        assert missing["x-frame-options"] == ["DENY"]


def test_with_security_headers_is_exact():
    assert with_security_headers([(b"Content-Type", b"application/json; charset=utf-8")]) == [
        (b"Content-Type", b"application/json; charset=utf-8"),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-frame-options", b"DENY"),
        (b"cache-control", b"no-store"),
    ]
    assert with_security_headers([(b"X-Frame-Options", b"SAMEORIGIN"), (b"content-type", b"text/html")]) == [
        (b"X-Frame-Options", b"SAMEORIGIN"),
        (b"content-type", b"text/html"),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
    ]
