"""Issue 49, identity paths that fail closed, for real: the embedded PostgreSQL + pgvector, the ``acl``
collection and its real service, the real guarded page (app.web.server.guarded_app) and MCP server.

* the access file moved away while restricted readers are stored: only admins are served (page, MCP
  over HTTP and stdio), never single-team mode;
* the session cookie is a session ID stored hashed, ended by revoking, removing, signing out, expiry;
* a stopped database while checking who asks: 503 with one line, no socket path, and the next request
  after the restart goes through."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import uuid

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from app import storage
from app.mcp.server import build_server, http_app
from app.serving.access import Token, guard
from app.serving.gate import access_gate
from app.serving.identify import Identifier
from app.storage import embedded as embedded_pg
from app.storage import users as user_rows
from app.storage.restricted import restricted_documents_stored
from app.users.identity import Sessions, identity_for_token, new_token, token_hash
from app.web.guard import COOKIE, DATABASE_GONE, web_guard
from app.web.server import guarded_app
from tests.integration.conftest import ACL_FILES, HashEmbeddings, private_base
from tests.integration.test_mcp_auth import INITIALIZE, MCP_HEADERS
from tests.test_fail_closed import LOCKED_MCP, LOCKED_WEB, tiny_app

pytestmark = pytest.mark.integration

BASE_URL = "http://127.0.0.1:8780"
ACCOUNTING = next(name for name in ACL_FILES if "賞与規程" in name)  # 経理 only


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def client_for(app) -> TestClient:
    return TestClient(app, base_url=BASE_URL, client=("127.0.0.1", 50000), follow_redirects=False)


@pytest.fixture
def person(engine):
    """A user made for one test: ``person(groups)`` -> (name, token); removed afterwards."""
    made = []

    def make(groups: list[str]) -> tuple[str, str]:
        name, token = f"p_{uuid.uuid4().hex[:8]}", new_token()
        user_rows.upsert_user(engine, name, groups)
        user_rows.add_token(engine, name, token_hash(token))
        made.append(name)
        return name, token

    yield make
    for name in made:
        user_rows.delete_user(engine, name)


@pytest.fixture
def data(acl, tmp_path):
    """A copy of the acl data folder (its access file included) that a test may move the file out of."""
    folder = tmp_path / "data"
    shutil.copytree(acl.data, folder)
    return folder


def move_away(folder) -> None:
    (folder / "access.toml").rename(folder.parent / "access.toml.moved")


def move_back(folder) -> None:
    (folder.parent / "access.toml.moved").rename(folder / "access.toml")


# --- 1. the access file gone, restricted readers stored ------------------------------------------


def test_restricted_documents_are_found_in_the_collection_only(acl, engine, hash_store, tmp_path):
    assert restricted_documents_stored(engine, acl.settings.retrieval.collection_name, "everyone") is True
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "a.csv").write_text("質問,回答\n駐車場は？,ありません。\n", encoding="utf-8")
    hash_store.sync(tmp_path)  # no access file: everyone's
    assert restricted_documents_stored(engine, hash_store.settings.retrieval.collection_name, "everyone") is False
    assert restricted_documents_stored(engine, f"none_{uuid.uuid4().hex[:6]}", "everyone") is False


def test_the_page_serves_only_admins_while_the_access_file_is_away(acl_service, acl, data, person):
    """Issue 49, row 5: before, an anonymous loopback request was single-team's admin and read the flagged
    questions; now the page refuses everyone but group admin, and serves again once the file is back."""
    _, root = person(["admin"])
    web = client_for(guarded_app(acl_service, acl.settings, "127.0.0.1", 8780, data))
    assert web.get("/api/documents").status_code == 401
    move_away(data)
    for headers in ({}, bearer(acl.tokens["bob"]), bearer(acl.tokens["alice"])):
        for path in ("/api/documents", "/api/feedback", f"/files/{ACCOUNTING}"):
            refused = web.get(path, headers=headers)
            assert refused.status_code == 403 and refused.json() == {"error": LOCKED_WEB}, (path, refused.text)
    admin = web.get("/api/documents", headers=bearer(root))
    assert admin.status_code == 200 and ACCOUNTING in {d["doc_id"] for d in admin.json()["documents"]}
    move_back(data)
    assert web.get("/api/documents", headers=bearer(acl.tokens["bob"])).json()["user"] == acl.names["bob"]


def test_a_page_started_without_the_access_file_is_locked_from_the_first_request(acl_service, acl, data):
    move_away(data)
    web = client_for(guarded_app(acl_service, acl.settings, "127.0.0.1", 8780, data))
    link = web.get("/", params={"token": acl.tokens["alice"]})
    assert link.status_code == 403 and "set-cookie" not in link.headers
    assert web.get("/", headers={"Accept": "text/html"}).status_code == 403


def test_mcp_over_http_and_stdio_serves_only_admins_while_the_access_file_is_away(
    acl_service, acl, data, engine, person
):
    root_name, root = person(["admin"])
    move_away(data)
    gate = access_gate(acl.settings, data, lambda: engine)
    server = build_server(lambda: acl_service, gate=gate)
    app = http_app(server, acl.settings, "127.0.0.1", 8765, Token("shared-mcp-token-value-123", "MCP_TOKEN"), gate)
    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        for token in (acl.tokens["bob"], "shared-mcp-token-value-123"):
            refused = c.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **bearer(token)})
            assert refused.status_code == 403 and refused.json() == {"error": "locked", "detail": LOCKED_MCP}
        assert c.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **bearer(root)}).status_code == 200

    from mcp import Client

    async def listed(as_user: str):
        async with Client(build_server(lambda: acl_service, as_user=as_user, gate=gate)) as client:
            return await client.call_tool("list_documents", {})

    bob = asyncio.run(listed(acl.names["bob"]))
    assert bob.is_error and bob.content[0].text.endswith(LOCKED_MCP)
    admin = asyncio.run(listed(root_name))
    assert not admin.is_error and ACCOUNTING in {d["doc_id"] for d in admin.structured_content["result"]}


# --- 2. the session cookie ------------------------------------------------------------------------


def session_rows(engine, name: str) -> list[tuple]:
    with engine.connect() as conn:
        return conn.execute(text("SELECT hash, token_hash FROM rag_session WHERE user_name = :n"), {"n": name}).all()


def signed_in(web: TestClient, token: str) -> str:
    """Open the token link; the session ID the cookie holds (asserting the redirect)."""
    opened = web.get("/", params={"token": token})
    assert opened.status_code == 303, opened.text
    return web.cookies[COOKIE]


@pytest.fixture
def page(acl_service, acl):
    return client_for(guarded_app(acl_service, acl.settings, "127.0.0.1", 8780, acl.data))


def test_the_cookie_is_a_session_id_stored_hashed_and_the_raw_token_is_no_cookie(page, engine, person):
    name, token = person(["経理"])
    session = signed_in(page, token)
    assert session.startswith("rs_") and token not in session
    assert session_rows(engine, name) == [(hashlib.sha256(session.encode()).hexdigest(), token_hash(token))]
    assert page.get("/api/documents").json()["user"] == name
    page.cookies.clear()
    assert page.get("/api/documents", cookies={COOKIE: token}).status_code == 401  # issue 49, row 12


@pytest.mark.parametrize("end", ["revoke", "remove", "sign out", "expire"])
def test_a_session_ends_with_its_token_its_user_signing_out_or_its_expiry(page, engine, person, end):
    name, token = person(["経理"])
    session = signed_in(page, token)
    if end == "revoke":
        user_rows.revoke_tokens(engine, name)
    elif end == "remove":
        user_rows.delete_user(engine, name)
    elif end == "sign out":
        assert page.get("/signout").status_code == 303
    else:
        with engine.begin() as conn:
            conn.execute(
                text("UPDATE rag_session SET expires_at = now() - interval '1 second' WHERE user_name = :n"),
                {"n": name},
            )
    assert page.get("/api/documents", cookies={COOKIE: session}).status_code == 401
    if end != "expire":
        assert session_rows(engine, name) == []


def test_a_shared_secret_session_ends_when_the_secret_changes(acl_service, acl):
    def shared_page(secret: str) -> TestClient:
        settings = acl.settings.changed(servers={"web_token": secret})
        return client_for(guarded_app(acl_service, settings, "127.0.0.1", 8780, acl.data))

    first = shared_page("shared-web-token-value-123")
    session = signed_in(first, "shared-web-token-value-123")
    assert first.get("/api/documents").status_code == 200
    later = shared_page("another-web-token-value-456")
    assert later.get("/api/documents", cookies={COOKIE: session}).status_code == 401


# --- 3. the database stopped while checking who asks ---------------------------------------------


@pytest.fixture
def own_database(settings):
    """An embedded PostgreSQL of its own (this test stops it), with the schema and one user."""
    base = private_base("rag-down-")
    pgdata = base / "pgdata"
    s = settings.changed(db={"pgdata_dir": pgdata, "name": "rag_down"})
    engine = storage.get_engine(s)
    from app.store import RagStore

    with RagStore(s, embeddings=HashEmbeddings(), engine=engine).writing():  # the schema, as the first ingest
        pass
    token = new_token()
    user_rows.upsert_user(engine, "dora", ["経理"])
    user_rows.add_token(engine, "dora", token_hash(token))
    yield s, engine, pgdata, token
    embedded_pg.stop(pgdata)
    shutil.rmtree(base, ignore_errors=True)


def test_a_stopped_database_is_503_on_every_identity_path_and_the_next_request_recovers(own_database, tmp_path):
    """Issue 49, row 6: a token, a session cookie (permissions on) and a proxy identity (single-team:
    the mode needs the database) each get 503 with one line naming no socket, page and MCP alike."""
    s, engine, pgdata, token = own_database
    with_file = tmp_path / "with"
    with_file.mkdir()
    (with_file / "access.toml").write_text('[folders]\n"csv" = ["everyone"]\n', encoding="utf-8")
    proxy = s.changed(access={"user_header": "X-Forwarded-User", "proxy_secret": "proxy-secret-value-1234"})
    identifier = Identifier.from_settings(
        proxy, lambda t: identity_for_token(engine, t), None, Sessions(lambda: engine)
    )
    web = client_for(
        web_guard(
            tiny_app(), None, "127.0.0.1", 8780, identifier=identifier, gate=access_gate(s, with_file, lambda: engine)
        )
    )
    single = client_for(
        web_guard(
            tiny_app(), None, "127.0.0.1", 8780, identifier=identifier, gate=access_gate(s, tmp_path, lambda: engine)
        )
    )
    mcp = TestClient(
        guard(tiny_app(), "shared-mcp-token-value-123", "127.0.0.1", 8765, identify=identifier.identify),
        base_url="http://127.0.0.1:8765",
    )
    session = signed_in(web, token)
    web.cookies.clear()
    proxied = {"X-Forwarded-User": "dora", "X-Auth-Proxy-Secret": "proxy-secret-value-1234"}
    calls = {
        "token": lambda: web.get("/api/documents", headers=bearer(token)),
        "cookie": lambda: web.get("/api/documents", cookies={COOKIE: session}),
        "proxy": lambda: single.get("/api/documents", headers=proxied),
        "mcp": lambda: mcp.post("/mcp", headers=bearer(token)),
    }
    assert {name: call().json()["name"] for name, call in calls.items()} == dict.fromkeys(calls, "dora")
    embedded_pg.stop(pgdata)
    for name, call in calls.items():
        down = call()
        assert down.status_code == 503, (name, down.text)
        assert str(pgdata) not in down.text and "PGSQL" not in down.text and "\n" not in down.text
    assert calls["token"]().json() == {"error": DATABASE_GONE}
    embedded_pg.ensure_running(pgdata)
    assert {name: call().json()["name"] for name, call in calls.items()} == dict.fromkeys(calls, "dora")
