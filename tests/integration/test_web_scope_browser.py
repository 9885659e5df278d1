"""The page's 絞り込み in a real browser, on real PostgreSQL: the guarded page (as ``python -m app.web``
serves it) over the real service of the ``acl`` collection (alice in 経理, bob in 営業; the stand-in LLM),
served by uvicorn on a free port and opened in Debian's headless Chromium with each one's ``/?token=``.
Bob is offered no folder he may not read; a folder chosen on the page narrows the answer's sources and
passages, and the answer says what it was read within. Screenshots go to .cache/web-screenshots/."""

from __future__ import annotations

import pytest

from tests.integration.conftest import SCREENSHOTS, chromium, free_port, send_question, served

pytestmark = pytest.mark.integration

SALES_QUESTION = "営業手当は外回り一日につきいくらですか？"  # asked in this module only
ANSWER_TIMEOUT_S = 300
SALES_SOURCE = "営業手当.md#"  # the sources of docs/営業/営業手当.md, the one document of docs/営業/


@pytest.fixture(scope="module")
def page_url(acl_service, acl):
    """The guarded page over the acl service on a free loopback port."""
    from app.web.server import guarded_app

    port = free_port()
    with served(guarded_app(acl_service, acl.settings, "127.0.0.1", port, acl.data), port) as url:
        yield url


@pytest.fixture
def browser():
    """A fresh headless Chromium (no session cookie of another user)."""
    driver = chromium("1100,900")
    yield driver
    driver.quit()


def folders_offered(driver) -> list[str]:
    """The folder choices once the page has loaded them from /api/scopes (the first is 'every folder')."""
    from selenium.webdriver.support.ui import WebDriverWait

    script = "return [...document.querySelectorAll('#scope-folder option')].map(o => o.value)"
    WebDriverWait(driver, 30).until(lambda d: len(d.execute_script(script)) > 1)
    return driver.execute_script(script)


def ask(driver, question: str) -> dict:
    """Type ``question``, send it, wait until the page may send again; the sources, passages and scope shown."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    send_question(driver, question)
    WebDriverWait(driver, ANSWER_TIMEOUT_S).until(lambda d: d.find_element(By.ID, "send").is_enabled())
    return {
        "status": driver.find_element(By.ID, "status").text,
        "sources": [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#sources li a")],
        "passages": [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#passages li a.source")],
        "scope": driver.find_element(By.ID, "scope-shown").text,
    }


def test_bob_is_offered_only_his_folders_and_a_chosen_folder_narrows_the_answer(page_url, browser, acl):
    from selenium.webdriver.support.ui import Select

    browser.get(f"{page_url}?token={acl.tokens['bob']}")
    offered = folders_offered(browser)
    assert offered == ["", "csv/", "docs/", "docs/営業/"], offered  # never docs/経理/ nor docs/総務/
    assert "経理" not in browser.page_source and "総務" not in browser.page_source

    everywhere = ask(browser, SALES_QUESTION)
    assert everywhere["passages"] and everywhere["scope"] == "", everywhere
    assert any(not p.startswith(SALES_SOURCE) for p in everywhere["passages"]), everywhere  # the FAQ rows too

    Select(browser.find_element("id", "scope-folder")).select_by_value("docs/営業/")
    narrowed = ask(browser, "外回りの営業手当は一日何円ですか？")  # another question: no answer given again
    browser.save_screenshot(str(SCREENSHOTS / "scope-bob.png"))
    assert narrowed["passages"], narrowed
    assert all(s.startswith(SALES_SOURCE) for s in narrowed["sources"] + narrowed["passages"]), narrowed
    assert narrowed["scope"] == "絞り込み: docs/営業/", narrowed
    errors = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE" and "favicon" not in e["message"]]
    assert not errors, errors  # no CSP refusal, no failed request


def test_alice_is_offered_the_accounting_folder(page_url, browser, acl):
    browser.get(f"{page_url}?token={acl.tokens['alice']}")
    assert "docs/経理/" in folders_offered(browser)
