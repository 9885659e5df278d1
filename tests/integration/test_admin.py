"""The administrator's usage view on the real guarded page (app.web.server.guarded_app) over a real
RagService on the ``acl`` collection (embedded PostgreSQL, real embedder, the stand-in LLM), with
AUDIT_LOG=1 and answers kept: three questions and one 👎 through the page, then ``/admin`` as an
administrator, as bob and anonymously, and ``python -m app.users audit --summary`` on the same rows."""

from __future__ import annotations

import re
import uuid
from datetime import date

import pytest
from starlette.testclient import TestClient

from app.storage import users as user_rows
from app.users.identity import new_token, token_hash
from app.web.admin import ADMIN_ONLY
from app.web.server import guarded_app
from tests.integration.conftest import SCREENSHOTS, chromium, free_port, run_in_process, served, sse_events

pytestmark = pytest.mark.integration

QUESTIONS = ("営業手当は一日いくらですか？", "賞与の支給率は基本給の何か月分ですか？", "管理番号 EG-2210 の文書は？")


@pytest.fixture(scope="module")
def admin_token(engine):
    """A personal token of an administrator (group admin), removed afterwards."""
    name = f"root_{uuid.uuid4().hex[:6]}"
    user_rows.upsert_user(engine, name, ["admin"])
    token = new_token()
    user_rows.add_token(engine, name, token_hash(token))
    yield token
    user_rows.delete_user(engine, name)


@pytest.fixture(scope="module")
def service(acl):
    """A service that audits (without question texts) and keeps its answers."""
    from app.graph import default_context
    from app.serving.answers import AnswerMemory
    from app.serving.service import RagService, no_search

    settings = acl.settings.changed(access={"audit": True})
    service = RagService(
        settings=settings,
        store=acl.store,
        context_factory=lambda: default_context(settings, search=no_search, principals=()),
        memory=AnswerMemory(acl.store.engine, settings.retrieval.collection_name, settings),
        surface="web",
    )
    service.context()
    return service


@pytest.fixture(scope="module")
def web(service, acl):
    """The guarded page over that service, as ``python -m app.web`` runs it on 127.0.0.1:8780."""
    app = guarded_app(service, service.settings, "127.0.0.1", 8780, acl.data)
    return TestClient(app, base_url="http://127.0.0.1:8780", client=("127.0.0.1", 50000), follow_redirects=False)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def today_row(html: str) -> tuple[int, int]:
    """(questions, 👎) of today's row in the per-day table; (0, 0) when today has none (the audit table
    is shared with the other tests of the session)."""
    found = re.search(rf"<tr><td>{date.today().isoformat()}</td><td>(\d+)</td><td>\d+</td><td>(\d+)</td>", html)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def test_admin_sees_todays_questions_the_thumbs_down_share_and_the_chart(web, acl, admin_token):
    before = web.get("/admin", headers=bearer(admin_token))
    assert before.status_code == 200, before.text
    asked_before, flagged_before = today_row(before.text)

    answers = []
    for question in QUESTIONS:
        response = web.post("/api/ask", json={"question": question}, headers=bearer(acl.tokens["alice"]))
        assert response.status_code == 200, response.text
        kind, done = sse_events(response.text)[-1]
        assert kind == "done", done
        answers.append(done)
    flag = {"answer_id": answers[0]["answer_id"], "helpful": False, "none_right": True}
    flagged = web.post("/api/feedback", json=flag, headers=bearer(acl.tokens["alice"]))
    assert flagged.status_code == 200, flagged.text

    page = web.get("/admin", headers=bearer(admin_token))
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src" not in page.headers["content-security-policy"]  # no script at all: default-src 'none'
    assert "<script" not in page.text
    asked, thumbs_down = today_row(page.text)
    assert (asked, thumbs_down) == (asked_before + 3, flagged_before + 1)
    share = f"{round(thumbs_down / asked * 100)}%"
    assert re.search(rf"<tr><td>{date.today().isoformat()}</td>(<td>[^<]*</td>){{3}}<td>{share}</td>", page.text)
    assert page.text.count('<svg xmlns="http://www.w3.org/2000/svg" id="chart"') == 1
    assert f"<title>{date.today().isoformat()}: 質問 {asked}、" in page.text
    # AUDIT_LOG_QUESTIONS is off: no question text anywhere on the page
    assert not any(question in page.text for question in QUESTIONS)
    assert "営業手当.md" in page.text  # a document cited (or never cited): the stored documents, read as admin


def test_bob_gets_403_and_anonymous_is_refused_by_the_guard(web, acl):
    bob = web.get("/admin", headers=bearer(acl.tokens["bob"]))
    assert bob.status_code == 403 and bob.text == ADMIN_ONLY
    alice = web.get("/admin", headers=bearer(acl.tokens["alice"]))
    assert alice.status_code == 403 and "<svg" not in alice.text
    anonymous = web.get("/admin")
    assert anonymous.status_code in (401, 403) and "<svg" not in anonymous.text


def test_the_command_line_prints_the_same_table(web, admin_token):
    page = web.get("/admin", headers=bearer(admin_token))
    asked, _ = today_row(page.text)
    printed = run_in_process("app.cli.users", ["audit", "--summary", "--days", "1"], {})
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[0] == "日付\t質問\t回答なし\t👎\t👎の割合\t出典まで（中央値）\t最初の文字まで（中央値）"
    today = next(line for line in lines if line.startswith(date.today().isoformat()))
    assert today.split("\t")[1] == str(asked)  # 👎 are the collection's: the command line reads "documents"
    assert "slowest answers:" in lines and "most flagged questions:" in lines


def test_the_admin_page_in_chromium_shows_today_and_its_chart_and_bob_reads_403(service, acl, admin_token):
    """After the first test's three questions and 👎 (this module runs in order): /admin in a real browser."""
    from selenium.webdriver.common.by import By

    port = free_port()
    with served(guarded_app(service, service.settings, "127.0.0.1", port, acl.data), port) as url:
        browser = chromium("1100,1400")
        try:
            browser.get(f"{url}?token={admin_token}")  # a session cookie, as the administrator's link gives it
            browser.get(url + "admin")
            cells = browser.execute_script(
                "const row = [...document.querySelectorAll('tr')].find(r => r.cells[0] && "
                "r.cells[0].textContent === arguments[0]); return row ? [...row.cells].map(c => c.textContent) : null",
                date.today().isoformat(),
            )
            assert cells is not None and int(cells[1]) >= 3 and int(cells[3]) >= 1, cells  # questions, 👎
            chart = browser.find_element(By.ID, "chart")
            assert chart.is_displayed() and chart.size["width"] > 100 and chart.size["height"] > 50
            assert browser.find_elements(By.CSS_SELECTOR, "#chart rect, #chart path, #chart line")  # drawn, not blank
            browser.save_screenshot(str(SCREENSHOTS / "admin.png"))
            errors = [
                e for e in browser.get_log("browser") if e.get("level") == "SEVERE" and "favicon" not in e["message"]
            ]
            assert not errors, errors  # the page's CSP (default-src 'none') refused nothing it needs
            browser.delete_all_cookies()
            browser.get(f"{url}?token={acl.tokens['bob']}")
            browser.get(url + "admin")
            assert ADMIN_ONLY in browser.find_element(By.TAG_NAME, "body").text
            assert not browser.find_elements(By.ID, "chart")
        finally:
            browser.quit()
