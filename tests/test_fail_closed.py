"""Issue 49, identity paths that fail closed: the server's mode (app.serving.gate), the lock while the
access file is gone, repeated identity headers, a database that cannot be reached while checking who
asks (page: app.web.guard, MCP over HTTP: app.serving.access). The real database, access file and
sessions run in tests/integration/test_fail_closed.py."""

from __future__ import annotations

import logging

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.serving.access import guard
from app.serving.gate import LOCKED, PERMISSIONS, SINGLE_TEAM, AccessGate, access_mode, locked_line
from app.serving.identify import Identifier
from app.users.identity import SHARED, Identity, user_identity
from app.web.guard import COOKIE, DATABASE_GONE, LOCAL, web_guard
from tests.test_web_app import stopped_database_error
from tests.test_web_guard import MemorySessions

ACCESS_FILE = "/srv/rag/data/access.toml"
ADMIN_TOKEN, BOB_TOKEN, SHARED_TOKEN = "rag_" + "a" * 43, "rag_" + "b" * 43, "shared-secret-value-1234"
PROXY_SECRET = "proxy-secret-value-1234"
LOCKED_WEB = (
    "アクセス設定ファイル（access.toml）が見つからず、閲覧者を限った文書が保存されています: "
    "ファイルが戻るまで管理者（admin グループ）だけが使えます"
)
LOCKED_MCP = (
    "the access file access.toml is missing but documents with restricted readers are stored: "
    "only group admin is served until it is back"
)
PEOPLE = {ADMIN_TOKEN: user_identity("root", ["admin"]), BOB_TOKEN: user_identity("bob", ["営業"])}


def whoami(request: Request) -> JSONResponse:
    who = request.state.identity
    return JSONResponse({"name": who.name, "kind": who.kind})


def tiny_app() -> Starlette:
    return Starlette(
        routes=[Route("/", whoami), Route("/api/documents", whoami), Route("/mcp", whoami, methods=["POST"])]
    )


class Switch:
    """A mode the test changes: the access file there or not, restricted documents stored or not, and
    how often the database was asked."""

    def __init__(self, file: bool = False, restricted: bool = False):
        self.file, self.restricted, self.asked = file, restricted, 0

    def stored(self) -> bool:
        self.asked += 1
        return self.restricted

    def gate(self) -> AccessGate:
        return AccessGate(lambda: self.file, self.stored, ACCESS_FILE)


class People:
    """Personal tokens looked up in a database that the test stops and starts again."""

    def __init__(self):
        self.down = False

    def __call__(self, token: str) -> Identity | None:
        if self.down:
            raise stopped_database_error()
        return PEOPLE.get(token)


def page(gate: AccessGate | None, lookup=PEOPLE.get, token: str | None = SHARED_TOKEN, **proxy) -> TestClient:
    identifier = Identifier(
        lookup, token, sessions=MemorySessions({**{t: PEOPLE[t] for t in PEOPLE}, SHARED_TOKEN: SHARED}), **proxy
    )
    app = web_guard(tiny_app(), token, "127.0.0.1", 8780, identifier=identifier, gate=gate)
    return TestClient(app, base_url="http://127.0.0.1:8780", follow_redirects=False)


def mcp(gate: AccessGate | None, lookup=PEOPLE.get, **proxy) -> TestClient:
    identifier = Identifier(lookup, SHARED_TOKEN, **proxy)
    app = guard(tiny_app(), SHARED_TOKEN, "127.0.0.1", 8765, identify=identifier.identify, gate=gate)
    return TestClient(app, base_url="http://127.0.0.1:8765")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# --- the mode -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "restricted", "were", "expected"),
    [
        (True, True, False, PERMISSIONS),
        (True, False, True, PERMISSIONS),
        (False, False, False, SINGLE_TEAM),
        (False, True, False, LOCKED),
        (False, False, True, LOCKED),  # a sync gave everything to everyone after the file went: still locked
    ],
)
def test_access_mode(file, restricted, were, expected):
    assert access_mode(file, lambda: restricted, were) == expected


def test_the_gate_asks_the_database_only_without_an_access_file_and_stays_locked_once_restricted(caplog):
    switch = Switch(file=True)
    gate = switch.gate()
    with caplog.at_level(logging.INFO, logger="app.serving.gate"):
        assert gate.mode() == PERMISSIONS and switch.asked == 0
        switch.file = False  # moved away while serving; a watch sync then gives everything to everyone
        assert gate.mode() == LOCKED and gate.mode() == LOCKED
        switch.file = True
        assert gate.mode() == PERMISSIONS
        switch.file = False
        assert gate.mode() == LOCKED and switch.asked == 0
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            f"locked: {ACCESS_FILE} is missing but documents with restricted readers are stored; "
            "only group admin is served until it is back",
        ),
        ("INFO", f"permissions: {ACCESS_FILE} is in force; every request names who asks"),
        (
            "WARNING",
            f"locked: {ACCESS_FILE} is missing but documents with restricted readers are stored; "
            "only group admin is served until it is back",
        ),
    ]


def test_single_team_needs_no_restricted_document_and_says_nothing_at_first(caplog):
    switch = Switch()
    with caplog.at_level(logging.INFO, logger="app.serving.gate"):
        assert switch.gate().mode() == SINGLE_TEAM and switch.asked == 1
    assert caplog.records == []  # the start lines say single-team mode
    assert locked_line(ACCESS_FILE) == LOCKED_MCP  # the file's name, never its folder


# --- the page, locked ---------------------------------------------------------------------------


def test_a_locked_page_serves_admins_only_with_one_line():
    c = page(Switch(restricted=True).gate(), token=None)
    for headers in ({}, bearer(BOB_TOKEN)):
        refused = c.get("/api/documents", headers=headers)
        assert refused.status_code == 403 and refused.json() == {"error": LOCKED_WEB}
    browser = c.get("/", headers={"Accept": "text/html"})
    assert browser.status_code == 403 and LOCKED_WEB in browser.text and "<script" not in browser.text
    assert c.get("/api/documents", headers=bearer(ADMIN_TOKEN)).json() == {"name": "root", "kind": "user"}


def test_a_locked_page_refuses_the_shared_secret_and_opens_no_session_for_others():
    c = page(Switch(restricted=True).gate())
    assert c.get("/api/documents", headers=bearer(SHARED_TOKEN)).status_code == 403
    for token in (SHARED_TOKEN, BOB_TOKEN):
        link = c.get("/", params={"token": token})
        assert link.status_code == 403 and "set-cookie" not in link.headers
    admin = c.get("/", params={"token": ADMIN_TOKEN})
    assert admin.status_code == 303 and admin.headers["set-cookie"].startswith(f"{COOKIE}=rs_")
    assert c.get("/api/documents").json()["name"] == "root"  # the client sends the cookie


def test_single_team_lets_this_machine_in_and_permissions_do_not():
    single = page(Switch().gate(), token=None).get("/api/documents")
    assert single.json() == {"name": LOCAL.name, "kind": "local"}
    on = page(Switch(file=True).gate(), token=None).get("/api/documents")
    assert on.status_code == 401
    without_gate = page(None, token=None).get("/api/documents")  # no store known: as if permissions were on
    assert without_gate.status_code == 401


def test_the_page_locks_when_the_access_file_goes_while_serving():
    switch = Switch(file=True, restricted=True)
    c = page(switch.gate())
    assert c.get("/api/documents", headers=bearer(BOB_TOKEN)).json()["name"] == "bob"
    switch.file = False
    assert c.get("/api/documents", headers=bearer(BOB_TOKEN)).json() == {"error": LOCKED_WEB}
    switch.restricted = False  # a watch sync meanwhile: the lock holds until the file is back
    assert c.get("/api/documents", headers=bearer(BOB_TOKEN)).status_code == 403
    switch.file = True
    assert c.get("/api/documents", headers=bearer(BOB_TOKEN)).json()["name"] == "bob"


# --- MCP over HTTP, locked ----------------------------------------------------------------------


def test_a_locked_mcp_server_serves_admins_only_with_one_line():
    c = mcp(Switch(restricted=True).gate())
    for token in (BOB_TOKEN, SHARED_TOKEN):
        refused = c.post("/mcp", headers=bearer(token))
        assert refused.status_code == 403 and refused.json() == {"error": "locked", "detail": LOCKED_MCP}
    assert c.post("/mcp", headers=bearer(ADMIN_TOKEN)).json()["name"] == "root"
    assert c.post("/mcp").status_code == 401  # nobody named: asked for a token first


# --- an identity header twice -------------------------------------------------------------------

PROXY = {"user_header": "X-Forwarded-User", "groups_header": "X-Forwarded-Groups", "proxy_secret": PROXY_SECRET}


@pytest.mark.parametrize(
    ("headers", "name"),
    [
        ([("X-Forwarded-User", "bob"), ("X-Forwarded-User", "alice")], "X-Forwarded-User"),
        (
            [("X-Forwarded-User", "bob"), ("X-Forwarded-Groups", "営業".encode()), ("X-Forwarded-Groups", "admin")],
            "X-Forwarded-Groups",
        ),
        ([("X-Forwarded-User", "bob"), ("X-Auth-Proxy-Secret", "wrong")], "X-Auth-Proxy-Secret"),
        ([("Authorization", f"Bearer {BOB_TOKEN}"), ("Authorization", f"Bearer {ADMIN_TOKEN}")], "Authorization"),
    ],
)
def test_an_identity_header_sent_twice_is_refused(headers, name):
    secret = [("X-Auth-Proxy-Secret", PROXY_SECRET)]
    web = page(Switch(file=True).gate(), **PROXY).get("/api/documents", headers=headers + secret)
    assert web.status_code == 400 and web.json() == {"error": f"ヘッダー {name} が複数あります: 一つだけ送ってください"}
    over_mcp = mcp(Switch(file=True).gate(), **PROXY).post("/mcp", headers=headers + secret)
    assert over_mcp.status_code == 400
    assert over_mcp.json() == {
        "error": "repeated_header",
        "detail": f"the header {name} appears more than once: send it once",
    }


def test_the_proxy_header_once_still_names_the_user_and_an_appended_value_names_nobody():
    c = page(Switch(file=True).gate(), **PROXY)
    secret = {"X-Auth-Proxy-Secret": PROXY_SECRET}
    assert c.get("/api/documents", headers={**secret, "X-Forwarded-User": "bob"}).json()["name"] == "bob"
    joined = c.get("/api/documents", headers={**secret, "X-Forwarded-User": "bob, alice"})  # a proxy joining values
    assert joined.status_code == 401


# --- a database that cannot be reached ----------------------------------------------------------


def test_a_token_lookup_without_the_database_is_503_with_one_line_and_recovers(caplog):
    people = People()
    web, over_mcp = page(Switch(file=True).gate(), lookup=people), mcp(Switch(file=True).gate(), lookup=people)
    people.down = True
    with caplog.at_level(logging.WARNING):
        refused = web.get("/api/documents", headers=bearer(BOB_TOKEN))
        refused_mcp = over_mcp.post("/mcp", headers=bearer(BOB_TOKEN))
    assert refused.status_code == 503 and refused.json() == {"error": DATABASE_GONE}
    assert refused_mcp.status_code == 503
    assert refused_mcp.json() == {
        "error": "database_unavailable",
        "detail": "the database is not available; try again shortly",
    }
    assert "127.0.0.1" not in refused.text + refused_mcp.text  # the driver's text (its address) stays in the log
    assert len(caplog.records) == 2 and all(r.exc_info is None for r in caplog.records)
    assert all("127.0.0.1" in r.getMessage() for r in caplog.records)
    people.down = False  # the database is back: the next request goes through
    assert web.get("/api/documents", headers=bearer(BOB_TOKEN)).json()["name"] == "bob"
    assert over_mcp.post("/mcp", headers=bearer(BOB_TOKEN)).json()["name"] == "bob"


def test_the_mode_without_the_database_is_503_even_for_a_proxy_identity():
    def gone() -> bool:
        raise stopped_database_error()

    c = page(AccessGate(lambda: False, gone, ACCESS_FILE), **PROXY)
    headers = {"X-Auth-Proxy-Secret": PROXY_SECRET, "X-Forwarded-User": "bob"}
    assert c.get("/api/documents", headers=headers).json() == {"error": DATABASE_GONE}
    assert c.get("/api/documents").status_code == 503


def test_any_other_error_is_not_hidden_as_503():
    def broken(token: str):
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        page(Switch(file=True).gate(), lookup=broken).get("/api/documents", headers=bearer(BOB_TOKEN))
