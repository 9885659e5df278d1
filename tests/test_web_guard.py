"""app.web.guard and the command's checks: Host, Origin, the shared secret beyond loopback."""

import pytest
from starlette.testclient import TestClient

from app.cli import web as web_cli
from app.config import Settings
from app.serving import hosts
from app.serving.gate import AccessGate
from app.serving.hosts import MachineNames
from app.users.identity import SESSION_PREFIX, SHARED, new_session_id
from app.web.guard import COOKIE
from app.web.server import guarded_app
from tests.test_web_app import FakeService

SECRET = "s3cret-web-token"
MACHINE = MachineNames(("127.0.0.1", "::1", "192.0.2.10"), ("ragbox",))  # this machine, fixed for these tests


@pytest.fixture(autouse=True)
def fixed_machine(monkeypatch):
    """Servers bound beyond loopback see :data:`MACHINE` instead of this machine's own names."""
    monkeypatch.setattr(hosts, "this_machine", lambda: MACHINE)


def open_gate() -> AccessGate:
    """The real gate of a server with no access file and no restricted document stored (single-team)."""
    return AccessGate(lambda: False, lambda: False, "data/access.toml")


class MemorySessions:
    """app.users.identity.Sessions kept in a dict (tests/integration run the real ones in PostgreSQL):
    ``holders`` maps each token that may sign in to its identity."""

    def __init__(self, holders: dict):
        self.holders, self.open_ids = holders, {}

    def open(self, token):
        if token not in self.holders:
            return None
        session = new_session_id()
        self.open_ids[session] = self.holders[token]
        return session

    def identity(self, session):
        return self.open_ids.get(session)

    def close(self, session):
        self.open_ids.pop(session, None)


def client(host: str, port: int, token: str = "", **servers) -> TestClient:
    settings = Settings().changed(servers={"web_token": token, **servers})
    app = guarded_app(
        FakeService(), settings, host, port, gate=open_gate(), sessions=MemorySessions({token: SHARED} if token else {})
    )
    return TestClient(app, base_url=f"http://127.0.0.1:{port}")


def test_on_loopback_the_page_needs_no_secret_but_its_own_host_and_origin():
    c = client("127.0.0.1", 8780)
    assert c.get("/").status_code == 200
    assert c.get("/", headers={"Host": "localhost:8780"}).status_code == 200
    assert c.get("/", headers={"Host": "attacker.example:8780"}).status_code == 421  # DNS rebinding
    own = {"Origin": "http://127.0.0.1:8780"}
    assert c.post("/api/ask", json={"question": "受付時間"}, headers=own).status_code == 200
    other = c.post("/api/ask", json={"question": "受付時間"}, headers={"Origin": "http://localhost:9999"})
    assert other.status_code == 403 and "ALLOWED_ORIGINS" in other.json()["error"]


def test_beyond_loopback_the_secret_is_needed_and_the_url_sets_a_strict_cookie():
    c = client("0.0.0.0", 8780, token=SECRET)
    assert c.get("/").status_code == 401
    assert c.get("/?token=wrong", follow_redirects=False).status_code == 401
    opened = c.get(f"/?token={SECRET}", follow_redirects=False)
    assert opened.status_code == 303 and opened.headers["location"] == "/"
    cookie = opened.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}={SESSION_PREFIX}") and SECRET not in cookie  # a session ID, not the secret
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert c.get("/").status_code == 200  # the client now sends the cookie
    assert client("0.0.0.0", 8780, token=SECRET).get("/", cookies={COOKIE: SECRET}).status_code == 401
    fresh = client("0.0.0.0", 8780, token=SECRET)
    assert fresh.get(f"/api/documents?token={SECRET}").status_code == 401  # only / takes the secret in the URL


def test_beyond_loopback_a_bearer_header_works_for_scripts():
    c = client("0.0.0.0", 8780, token=SECRET)
    assert c.get("/api/documents", headers={"Authorization": f"Bearer {SECRET}"}).status_code == 200
    assert c.get("/api/documents", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_allowed_hosts_and_origins_extend_the_lists():
    c = client("127.0.0.1", 8780, allowed_hosts=("rag.example",), allowed_origins=("https://rag.example",))
    headers = {"Host": "rag.example", "Origin": "https://rag.example"}
    assert c.post("/api/ask", json={"question": "q"}, headers=headers).status_code == 200


@pytest.mark.parametrize(
    "host, expected",
    [
        ("127.0.0.1", ["web page on http://127.0.0.1:8780/ (Ctrl-C to stop)"]),
        ("::1", ["web page on http://[::1]:8780/ (Ctrl-C to stop)"]),
    ],
)
def test_start_lines_on_loopback(host, expected):
    assert web_cli.start_lines(host, 8780, "") == expected


def test_start_lines_beyond_loopback_warn_and_never_show_the_secret():
    lines = web_cli.start_lines("0.0.0.0", 8780, SECRET)
    assert lines == [
        "web page on http://192.0.2.10:8780/ (on this machine also http://127.0.0.1:8780/; Ctrl-C to stop)",
        "colleagues open http://192.0.2.10:8780/?token=<token> once: <token> is their personal token (python -m "
        "app.users token NAME) or the shared secret WEB_TOKEN, never shown here (the page keeps it in a cookie, off "
        "the address bar); scripts send the header Authorization: Bearer <token>",
        "warning: listening on 0.0.0.0: every request needs a token; the traffic is not encrypted (use an SSH "
        "tunnel, or a TLS proxy and PUBLIC_URL); Host names accepted: 127.0.0.1:8780, localhost:8780, [::1]:8780, "
        "192.0.2.10:8780, ragbox:8780 (add more with ALLOWED_HOSTS)",
    ]
    assert SECRET not in "\n".join(lines)


def test_listening_beyond_loopback_without_a_secret_is_one_line(clean_env, capsys):
    assert web_cli.main(["--host", "0.0.0.0"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("Error: listening on 0.0.0.0 lets other machines ask: write an access file")
        and err.count("\n") == 1
    )
    assert "or set WEB_TOKEN to a shared secret" in err


@pytest.mark.parametrize(("token", "warned"), [("a", True), ("x" * 15, True), ("x" * 16, False), ("", False)])
def test_a_token_shorter_than_16_characters_is_warned_about_at_start(token, warned):
    """WEB_TOKEN=a is accepted (the administrator chose it) but the start line says it is easy to guess."""
    from app.mcp.server import start_lines as mcp_start_lines
    from app.serving.access import Token

    for lines, name in (
        (web_cli.start_lines("0.0.0.0", 8780, token), "WEB_TOKEN"),
        (mcp_start_lines("127.0.0.1", 8765, Token(token, "MCP_TOKEN")), "MCP_TOKEN"),
    ):
        weak = [line for line in lines if "easy to guess" in line]
        assert weak == (
            [
                f"warning: {name} is {len(token)} characters long, easy to guess: use at least 16 "
                "(e.g. $(python -c 'import secrets; print(secrets.token_urlsafe(24))'))"
            ]
            if warned
            else []
        )


def test_a_browser_without_a_token_gets_a_page_saying_how_to_sign_in_and_a_script_gets_json():
    c = client("0.0.0.0", 8780, token=SECRET)
    page = c.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
    assert "ログインが必要です" in page.text and "?token=" in page.text
    assert page.headers["content-security-policy"] == "default-src 'none'"
    script = c.get("/api/documents", headers={"Accept": "text/html"})  # an API route: always JSON
    assert script.status_code == 401 and script.json()["error"].startswith("ログインが必要です")
    signed_out = c.get("/signout", follow_redirects=False)
    assert signed_out.status_code == 303 and f'{COOKIE}=""' in signed_out.headers["set-cookie"]


def test_behind_an_https_public_url_the_session_cookie_is_secure():
    settings = Settings().changed(servers={"web_token": SECRET}, access={"public_url": "https://rag.example.co.jp"})
    app = guarded_app(
        FakeService(), settings, "0.0.0.0", 8780, gate=open_gate(), sessions=MemorySessions({SECRET: SHARED})
    )
    c = TestClient(app, base_url="https://rag.example.co.jp")
    cookie = c.get(f"/?token={SECRET}", follow_redirects=False).headers["set-cookie"]
    assert "Secure" in cookie and "HttpOnly" in cookie
    plain = client("0.0.0.0", 8780, token=SECRET).get(f"/?token={SECRET}", follow_redirects=False)
    assert "Secure" not in plain.headers["set-cookie"]
