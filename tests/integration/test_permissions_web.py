"""Who may read what, on the web page: the real guarded app (app.web.server.guarded_app) over a real
RagService on the ``acl`` collection (embedded PostgreSQL, real embedder, SmolLM2, tiny re-ranker),
asked with Starlette's TestClient from loopback. Bob (営業) tries every route, every search mode and
every path trick to reach the accounting document; none of ACL_SECRETS may reach him, while alice
(経理) gets the same document on the same route."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from app.storage import users as user_rows
from app.users.identity import new_token, token_hash
from app.web.server import guarded_app
from tests.integration.conftest import ACL_FILES, ACL_QUESTION, assert_no_secret, sse_events

pytestmark = pytest.mark.integration

BASE_URL = "http://127.0.0.1:8780"
ACCOUNTING = next(name for name in ACL_FILES if "賞与規程" in name)  # 経理 only
SALES = next(name for name in ACL_FILES if "営業手当" in name)  # everyone
MISC = next(name for name in ACL_FILES if "未分類" in name)  # no key covers it: admin only
ACCOUNTING_DIR, SALES_DIR = ACCOUNTING.rsplit("/", 1)[0], SALES.rsplit("/", 1)[0]
QUESTION = ACL_QUESTION


def bearer(token: str) -> dict[str, str]:
    """The Authorization header of a personal (or shared) token."""
    return {"Authorization": f"Bearer {token}"}


def client_for(app) -> TestClient:
    """A TestClient asking ``app`` from loopback, redirects not followed."""
    return TestClient(app, base_url=BASE_URL, client=("127.0.0.1", 50000), follow_redirects=False)


def doc_ids(response) -> set[str]:
    """The doc_ids of a /api/documents answer (asserting 200)."""
    assert response.status_code == 200, response.text
    return {d["doc_id"] for d in response.json()["documents"]}


def ask(client: TestClient, headers: dict, question: str, mode: str, history: list[str] | None = None) -> list:
    """POST /api/ask and return its events (asserting 200 and that it ended with ``done``)."""
    body = {"question": question, "mode": mode, **({"history": history} if history else {})}
    response = client.post("/api/ask", json=body, headers=headers)
    assert response.status_code == 200, response.text
    got = sse_events(response.text)
    assert got[-1][0] == "done", got[-1]
    return got


@pytest.fixture(scope="module")
def web(acl_service, acl) -> TestClient:
    """The guarded page, as run by ``python -m app.web`` on 127.0.0.1:8780."""
    return client_for(guarded_app(acl_service, acl.settings, "127.0.0.1", 8780, acl.data))


@pytest.fixture(scope="module")
def secret_source(acl) -> str:
    """The exact source id of the accounting section (as alice's search names it)."""
    hits = acl.store.search(QUESTION, search_mode="keyword", top_k=10, principals=acl.principals["alice"])
    sources = [
        h.metadata["source"] for h in hits if "支給率" in h.metadata["source"] and "賞与規程" in h.metadata["source"]
    ]
    assert sources, [h.metadata["source"] for h in hits]
    return sources[0]


# --- 1. the documents list --------------------------------------------------------------------


def test_documents_need_an_identity_once_an_access_file_exists(web):
    refused = web.get("/api/documents")
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == 'Bearer realm="rag-ja"'
    assert_no_secret(refused.text)


def test_documents_list_what_each_user_may_read(web, acl):
    bob = web.get("/api/documents", headers=bearer(acl.tokens["bob"]))
    assert ACCOUNTING not in doc_ids(bob) and MISC not in doc_ids(bob)
    assert {"csv/faq.csv", SALES} <= doc_ids(bob)
    assert_no_secret(bob.json(), "in bob's documents")
    assert bob.json()["user"] == acl.names["bob"] and bob.json()["admin"] is False
    alice = web.get("/api/documents", headers=bearer(acl.tokens["alice"]))
    assert ACCOUNTING in doc_ids(alice) and MISC not in doc_ids(alice)
    for listed in (bob.json()["documents"], alice.json()["documents"]):
        assert all("readers" not in d for d in listed), listed


# --- 2. a source by id ------------------------------------------------------------------------


def test_alice_sees_the_accounting_source(web, acl, secret_source):
    got = web.get("/api/source", params={"id": secret_source}, headers=bearer(acl.tokens["alice"]))
    assert got.status_code == 200, got.text
    assert "3.7" in got.json()["text"] and got.json()["doc_id"] == ACCOUNTING


@pytest.mark.parametrize(
    "variant", ["exact", "percent-encoded", "dot-dot", "folder prefix", "folder prefix and dot-dot", "file only"]
)
def test_bob_never_gets_the_accounting_source(web, acl, secret_source, variant):
    wanted = {
        "exact": secret_source,
        "percent-encoded": quote(secret_source, safe=""),
        "dot-dot": f"{SALES_DIR}/../../{ACCOUNTING_DIR}/{secret_source}",
        "folder prefix": f"{ACCOUNTING_DIR}/{secret_source}",
        "folder prefix and dot-dot": f"../{ACCOUNTING_DIR}/{secret_source}",
        "file only": secret_source.split("#")[0],
    }[variant]
    got = web.get("/api/source", params={"id": wanted}, headers=bearer(acl.tokens["bob"]))
    assert got.status_code == 404, got.text
    assert_no_secret(got.text, f"in /api/source ({variant})")


def test_bob_never_gets_the_accounting_source_in_a_raw_query(web, acl, secret_source):
    for raw in (quote(secret_source), quote(quote(secret_source, safe=""), safe=""), quote(secret_source) + "&id=x"):
        got = web.get(f"/api/source?id={raw}", headers=bearer(acl.tokens["bob"]))
        assert got.status_code == 404, (raw, got.text)
        assert_no_secret(got.text, f"in /api/source?id={raw}")


# --- 3. a stored file ---------------------------------------------------------------------------


def test_alice_downloads_the_accounting_file(web, acl):
    got = web.get(f"/files/{ACCOUNTING}", headers=bearer(acl.tokens["alice"]))
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/octet-stream"
    assert "attachment" in got.headers["content-disposition"] and "KX-4471" in got.content.decode("utf-8")


@pytest.mark.parametrize(
    "path",
    [
        f"/files/{ACCOUNTING}",
        "/files/" + quote(ACCOUNTING),
        "/files/" + quote(ACCOUNTING, safe=""),
        f"/files/{SALES_DIR}/..%2F..%2F{quote(ACCOUNTING)}",
        f"/files/{SALES_DIR}/%2E%2E/%2E%2E/{ACCOUNTING}",
        "/files/csv/..%2F" + quote(ACCOUNTING, safe=""),
        "/files/" + ACCOUNTING.replace("/", "//"),
        f"//files/{ACCOUNTING}",
        f"/files/./{ACCOUNTING}",
        f"/files/{MISC}",
    ],
)
def test_bob_never_downloads_the_accounting_file(web, acl, path):
    got = web.get(path, headers=bearer(acl.tokens["bob"]))
    assert got.status_code != 200 and got.status_code in (404, 421), (path, got.status_code)
    assert_no_secret(got.text, f"in {path}")


def test_bob_gets_no_page_image_or_boxes_of_the_accounting_source(web, acl, secret_source):
    """/api/page-image and /api/source with a quote (app.web.page_image) look the source up as who asks:
    bob's answer for the accounting section is the unknown source's, word for word; alice, who may read
    it, is told it is no page (a Markdown section has no image)."""
    bob = bearer(acl.tokens["bob"])
    refused = web.get("/api/page-image", params={"id": secret_source}, headers=bob)
    unknown = web.get("/api/page-image", params={"id": "賞与規程.pdf:p1"}, headers=bob)
    assert refused.status_code == unknown.status_code == 404 and refused.content == unknown.content
    boxes = web.get("/api/source", params={"id": secret_source, "quote": "支給率"}, headers=bob)
    assert boxes.status_code == 404
    assert_no_secret(refused.text + boxes.text, "in bob's page image and boxes")
    alice = web.get("/api/page-image", params={"id": secret_source}, headers=bearer(acl.tokens["alice"]))
    assert alice.status_code == 400, alice.text


# --- 4, 5. questions --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "vector", "local", "global"])
def test_bob_asks_about_the_bonus_in_every_mode(web, acl, mode):
    for kind, data in ask(web, bearer(acl.tokens["bob"]), QUESTION, mode):
        assert_no_secret(data, f"in bob's {mode} event {kind}")


def test_alice_asks_and_the_accounting_source_is_among_the_sources(web, acl, secret_source):
    done = ask(web, bearer(acl.tokens["alice"]), QUESTION, "hybrid")[-1][1]
    assert secret_source in done["sources"], done["sources"]


def test_bob_follow_up_with_alices_question_in_history(web, acl):
    got = ask(web, bearer(acl.tokens["bob"]), "それは何か月分？", "hybrid", history=[QUESTION])
    assert got[0][0] in ("queued", "searched")
    for kind, data in got:
        assert_no_secret(data, f"in bob's follow-up event {kind}")


# --- 6. the session cookie ----------------------------------------------------------------------


def test_token_link_sets_a_strict_httponly_cookie_that_works_and_signout_clears(web, acl):
    with client_for(web.app) as browser:
        opened = browser.get("/", params={"token": acl.tokens["bob"]})
        assert opened.status_code == 303 and opened.headers["location"] == "/"
        cookie = opened.headers["set-cookie"]
        assert cookie.startswith("rag_session=rs_") and acl.tokens["bob"] not in cookie  # a session ID (issue 49)
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        listed = browser.get("/api/documents")
        assert ACCOUNTING not in doc_ids(listed) and listed.json()["user"] == acl.names["bob"]
        out = browser.get("/signout")
        assert out.status_code == 303 and out.headers["set-cookie"].startswith('rag_session="";')
        assert browser.get("/api/documents").status_code == 401


def test_a_wrong_token_link_sets_no_cookie(web):
    opened = web.get("/", params={"token": "rag_" + "x" * 43})
    assert opened.status_code == 401 and "set-cookie" not in opened.headers


# --- 7. revoked tokens and changed groups hold at once ------------------------------------------


def test_a_revoked_token_is_refused_at_once(web, acl):
    engine = acl.store.engine
    name = f"carol_{acl.names['bob']}"
    user_rows.upsert_user(engine, name, ["経理"])
    try:
        token = new_token()
        user_rows.add_token(engine, name, token_hash(token))
        assert ACCOUNTING in doc_ids(web.get("/api/documents", headers=bearer(token)))
        assert user_rows.revoke_tokens(engine, name) == 1
        for path in ("/api/documents", f"/files/{ACCOUNTING}", "/api/source?id=x"):
            assert web.get(path, headers=bearer(token)).status_code == 401, path
        assert web.post("/api/ask", json={"question": QUESTION}, headers=bearer(token)).status_code == 401
    finally:
        user_rows.delete_user(engine, name)


def test_a_removed_group_membership_holds_at_once(web, acl):
    engine, alice = acl.store.engine, acl.names["alice"]
    try:
        user_rows.upsert_user(engine, alice, [])
        listed = web.get("/api/documents", headers=bearer(acl.tokens["alice"]))
        assert ACCOUNTING not in doc_ids(listed)
        assert web.get(f"/files/{ACCOUNTING}", headers=bearer(acl.tokens["alice"])).status_code == 404
    finally:
        user_rows.upsert_user(engine, alice, ["経理"])
    assert ACCOUNTING in doc_ids(web.get("/api/documents", headers=bearer(acl.tokens["alice"])))


# --- 8. a signing-in proxy ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def proxied(acl_service, acl) -> TestClient:
    """The page behind a signing-in proxy: X-Forwarded-User (and groups) count with the proxy's secret only."""
    settings = acl.settings.changed(
        access={
            "user_header": "X-Forwarded-User",
            "groups_header": "X-Forwarded-Groups",
            "proxy_secret": "s3cret-proxy-value",
        }
    )
    return client_for(guarded_app(acl_service, settings, "127.0.0.1", 8780, acl.data))


@pytest.mark.parametrize("secret", [None, "", "wrong", "s3cret-proxy-valu", "S3CRET-PROXY-VALUE"])
def test_a_forged_proxy_header_is_refused(proxied, acl, secret):
    headers = {"X-Forwarded-User": acl.names["alice"], "X-Forwarded-Groups": "経理,admin".encode()}
    if secret is not None:
        headers["X-Auth-Proxy-Secret"] = secret
    got = proxied.get("/api/documents", headers=headers)
    assert got.status_code == 401, got.text
    assert_no_secret(got.text)


def test_bob_with_his_token_and_a_forged_proxy_header_stays_bob(proxied, acl):
    headers = {**bearer(acl.tokens["bob"]), "X-Forwarded-User": acl.names["alice"], "X-Forwarded-Groups": "admin"}
    got = proxied.get("/api/documents", headers={**headers, "X-Auth-Proxy-Secret": "wrong"})
    assert got.json()["user"] == acl.names["bob"] and ACCOUNTING not in doc_ids(got) and MISC not in doc_ids(got)
    assert_no_secret(got.json())


def test_the_proxy_with_its_secret_names_the_user_and_groups(proxied, acl):
    secret = {"X-Auth-Proxy-Secret": "s3cret-proxy-value"}
    admin = proxied.get(
        "/api/documents", headers={**secret, "X-Forwarded-User": acl.names["alice"], "X-Forwarded-Groups": "admin"}
    )
    assert {ACCOUNTING, MISC} <= doc_ids(admin) and admin.json()["user"] == acl.names["alice"]
    assert admin.json()["admin"] is True
    nobody = proxied.get("/api/documents", headers={**secret, "X-Forwarded-User": acl.names["alice"]})
    assert ACCOUNTING not in doc_ids(nobody)  # the proxy names the groups: none given, none held
    assert bob_token_still_works(proxied, acl)


def test_the_proxy_names_a_japanese_group_in_utf8(proxied, acl):
    """A proxy sends the group 経理 as UTF-8 bytes (HTTP has no other way to carry it)."""
    headers = {
        "X-Auth-Proxy-Secret": "s3cret-proxy-value",
        "X-Forwarded-User": acl.names["alice"],
        "X-Forwarded-Groups": "経理".encode(),
    }
    alice = proxied.get("/api/documents", headers=headers)
    assert ACCOUNTING in doc_ids(alice) and MISC not in doc_ids(alice)


def bob_token_still_works(client: TestClient, acl) -> bool:
    """Whether bob's personal token still names him behind the proxy (and he still lacks the accounting doc)."""
    got = client.get("/api/documents", headers=bearer(acl.tokens["bob"]))
    return got.json()["user"] == acl.names["bob"] and ACCOUNTING not in doc_ids(got)


# --- 9, 10. the shared secret and the admin's sync ------------------------------------------------


def test_the_shared_web_token_reads_as_everyone_only(acl_service, acl):
    settings = acl.settings.changed(servers={"web_token": "shared-web-token-value-123"})
    shared = client_for(guarded_app(acl_service, settings, "127.0.0.1", 8780, acl.data))
    assert shared.get("/api/documents").status_code == 401
    listed = shared.get("/api/documents", headers=bearer("shared-web-token-value-123"))
    assert ACCOUNTING not in doc_ids(listed) and MISC not in doc_ids(listed) and "csv/faq.csv" in doc_ids(listed)
    assert_no_secret(listed.json())
    assert shared.get(f"/files/{ACCOUNTING}", headers=bearer("shared-web-token-value-123")).status_code == 404


def test_bob_may_not_sync_and_sees_no_last_sync(web, acl, acl_service):
    got = web.post("/api/sync", headers=bearer(acl.tokens["bob"]))
    assert got.status_code == 403 and "admin" in got.json()["error"]
    assert acl_service.last_sync is None  # nothing ran
    acl_service.last_sync = acl.store.sync(acl.data)[1]  # an administrator's sync, with its summary
    try:
        assert web.get("/api/documents", headers=bearer(acl.tokens["bob"])).json()["last_sync"] is None
    finally:
        acl_service.last_sync = None
