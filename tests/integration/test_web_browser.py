"""The web page as a person uses it: `python -m app.web` (real PostgreSQL with the sample corpus, the
real Qwen2.5-Coder-0.5B) driven by Debian's headless Chromium through Selenium. Each state is kept as a
screenshot in .cache/web-screenshots/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.integration.conftest import (
    CHROMEDRIVER,
    CHROMIUM,
    ROOT,
    SCREENSHOTS,
    chromium,
    free_port,
    run_cli,
    send_question,
)

pytestmark = pytest.mark.integration

QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SHOTS = SCREENSHOTS
ANSWER_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def web_url(ingested):
    """The page served by the real command, on a free port; stopped after the module."""
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.fail("Chromium is missing: `make setup` installs chromium and chromium-driver (apt)")
    port = free_port()
    env = {
        **os.environ,
        "LLM_MODEL_PATH": str(QWEN),
        "LLM_MAX_TOKENS": "120",
        "RERANKER_MODEL": "acme/absent",
        "FOLLOWUP_REWRITE": "llm",  # the model's rewrite, with the rules as its fallback (both paths real)
        "CONTEXT_MAX_CHARS": "300",  # each passage cut to the sentences around the question: a third of the prompt
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "app.web", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as page:
                if page.status == 200:
                    break
        except OSError:
            if server.poll() is not None:
                pytest.fail(f"app.web exited: {server.stderr.read()}")
            time.sleep(0.5)
    yield url
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    driver = chromium("1100,900")
    yield driver
    driver.quit()


def ask(driver, question: str) -> dict:
    """Type ``question``, send it, wait for the answer to finish; what the page shows."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    send_question(driver, question)
    streamed = WebDriverWait(driver, ANSWER_TIMEOUT_S, poll_frequency=0.05).until(
        lambda d: d.find_element(By.ID, "answer").text or None
    )  # the first tokens, before the answer is done
    passages_early = driver.find_element(By.ID, "passages-box").is_displayed()
    WebDriverWait(driver, ANSWER_TIMEOUT_S).until(lambda d: d.find_element(By.ID, "send").is_enabled())
    return {
        "streamed": streamed,
        "answer": driver.find_element(By.ID, "answer").text,
        "status": driver.find_element(By.ID, "status").text,
        "searched": driver.find_element(By.ID, "searched").text,
        "sources": [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#sources li a")],
        "kinds": [k.text for k in driver.find_elements(By.CSS_SELECTOR, "#sources li .kind")],
        "cited": [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#sources li.cited a")],
        "passages_early": passages_early,  # the passages were there while the answer was being written
        "passages": [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#passages li a.source")],
        "marks": [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#passages mark")],
    }


def test_a_person_asks_opens_the_source_follows_up_and_sees_an_abstention(web_url, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(web_url)
    assert browser.title == "社内文書に質問する"
    browser.save_screenshot(str(SHOTS / "1-page.png"))

    first = ask(browser, "サポート窓口は何時から何時まで受け付けていますか？")
    browser.save_screenshot(str(SHOTS / "2-answer.png"))
    assert "9" in first["answer"] and "18" in first["answer"], first
    assert first["sources"][0] == "faq.csv:r2" and first["kinds"][0] == "表 2 行目", first
    assert first["streamed"] != first["answer"], first  # seen while it was still being written

    browser.find_element(By.CSS_SELECTOR, "#sources li a").click()  # the CSV row, as a table
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "viewer").is_displayed())
    cells = {
        row.find_element(By.TAG_NAME, "th").text: row.find_element(By.TAG_NAME, "td").text
        for row in browser.find_elements(By.CSS_SELECTOR, "#viewer-table tr")
    }
    browser.save_screenshot(str(SHOTS / "3-source-row.png"))
    assert any("9" in value and "18" in value for value in cells.values()), cells

    follow = ask(browser, "それは土日も？")
    browser.save_screenshot(str(SHOTS / "4-follow-up.png"))
    searched = follow["searched"].removeprefix("検索した質問: ")
    assert follow["searched"].startswith("検索した質問: ") and searched != "それは土日も？", follow
    assert "サポート" in searched or "受付" in searched, follow  # the previous question's topic is in it
    assert "faq.csv:r2" in follow["sources"], follow  # the row that says 土日祝日 is closed

    browser.find_element(By.ID, "reset").click()
    pdf = ask(browser, "エラーコードE3010が出たときの対処方法は？")
    pages = [s for s in pdf["sources"] if s.startswith("technical_guide.pdf:p")]
    assert pages, pdf
    link = next(a for a in browser.find_elements(By.CSS_SELECTOR, "#sources li a") if a.text == pages[0])
    link.click()  # the page's image in the viewer (app.web.page_image); the PDF itself from its link
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "viewer-file-link").is_displayed())
    assert (
        browser.find_element(By.ID, "viewer-image")
        .get_attribute("src")
        .endswith("/api/page-image?id=" + pages[0].replace(":", "%3A"))
    )
    before = set(browser.window_handles)
    browser.find_element(By.ID, "viewer-file-link").click()
    WebDriverWait(browser, 30).until(lambda d: len(d.window_handles) > len(before))
    browser.switch_to.window((set(browser.window_handles) - before).pop())
    WebDriverWait(browser, 30).until(lambda d: "/files/" in d.current_url)
    assert browser.current_url.endswith(f"/files/pdf/technical_guide.pdf#page={pages[0].rsplit('p', 1)[1]}")
    browser.save_screenshot(str(SHOTS / "5-source-pdf.png"))
    browser.close()
    browser.switch_to.window(before.pop())

    section = ask(browser, "パソコンをなくしてしまったら、いつまでに誰へ知らせればいいですか？")
    links = browser.find_elements(By.CSS_SELECTOR, "#sources li a")
    link = next((a for a in links if a.text == "it_helpdesk.md#紛失したとき"), None)
    assert link is not None, section
    link.click()  # a Markdown section, rendered: paragraphs as paragraphs, the quoted passage marked
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "viewer").is_displayed())
    paragraphs = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "#viewer-text p")]
    browser.save_screenshot(str(SHOTS / "6-source-section.png"))
    assert any("24時間" in text for text in paragraphs), (section, paragraphs)
    marks = [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#viewer-text mark")]
    assert not section["cited"] or section["cited"][0] != link.text or marks, (section, marks)

    none = ask(browser, "社員食堂のカレーの値段はいくらですか？")
    browser.save_screenshot(str(SHOTS / "7-not-in-documents.png"))
    assert none["answer"].startswith("資料に記載がありません"), none
    assert none["status"] == "資料に答えが見つかりませんでした。近い出典を示します。", none

    named = ask(browser, "ミナト勤怠のプログラミング言語は何ですか？")  # the 0.5B names one no document states
    browser.save_screenshot(str(SHOTS / "8-withdrawn.png"))
    assert named["answer"].startswith("資料に記載がありません"), named
    assert named["status"].startswith("回答に資料にない「") and named["status"].endswith(
        "が含まれていたため取り消しました。近い出典を示します。"
    ), named


def test_a_person_reads_the_passages_and_flags_an_answer_with_the_right_source(web_url, browser, tmp_path):
    """Issue 41 item 1 and issue 42 item 3: the 「該当箇所」 block (each top source's best sentences, the
    question's terms marked) is on the page while the answer is written; 👎 opens the form, the asker picks
    the source that was right and comments, and `python -m app.feedback export` gives that question with
    that expected_source."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(web_url)
    question = "無料トライアルは何日間使えますか？"
    shown = ask(browser, question)
    assert browser.find_element(By.CSS_SELECTOR, "#passages-box h2").text == "該当箇所"
    assert shown["passages"] and shown["marks"], shown
    assert shown["passages_early"] or shown["streamed"] == shown["answer"], shown
    assert browser.find_element(By.ID, "helpful").is_displayed(), shown
    assert not browser.find_element(By.ID, "feedback-form").is_displayed()
    browser.save_screenshot(str(SHOTS / "9-passages.png"))

    browser.find_element(By.ID, "unhelpful").click()
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "feedback-form").is_displayed())
    labels = [label.text for label in browser.find_elements(By.CSS_SELECTOR, "#feedback-choices label")]
    assert labels == [*shown["sources"], "どれも違う"], (labels, shown)
    chosen = "faq.csv:r3" if "faq.csv:r3" in shown["sources"] else shown["sources"][-1]  # the trial's row
    radio = browser.find_element(By.CSS_SELECTOR, f'#feedback-choices input[value="{chosen}"]')
    radio.click()
    browser.find_element(By.ID, "feedback-comment").send_keys("30日間と書いてある行はこちらです")
    browser.save_screenshot(str(SHOTS / "10-feedback-form.png"))
    browser.find_element(By.ID, "feedback-send").click()
    WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.ID, "feedback-status").text == "ご意見ありがとうございました。"
    )
    assert not browser.find_element(By.ID, "unhelpful").is_displayed()
    browser.save_screenshot(str(SHOTS / "11-feedback-sent.png"))

    out = tmp_path / "flagged.json"
    exported = run_cli("app.feedback", "export", str(out))
    assert exported.returncode == 0, exported.stderr
    assert {"query": question, "expected_source": chosen, "expected_keywords": []} in json.loads(out.read_text())


def test_a_person_sees_the_rows_and_the_sql_a_table_answer_was_computed_from(web_url, browser):
    """Issue 50 item 3: a question answered by computing over products.csv shows, under 「計算に使った行と式」,
    the table, the SQL run and the result rows; the row used is the cited source."""
    from selenium.webdriver.common.by import By

    browser.get(web_url)
    cheapest = ask(browser, "一番安い製品はどれですか？")
    assert "ミナト勤怠" in cheapest["answer"] and cheapest["sources"] == ["products.csv:r3"], cheapest
    box = browser.find_element(By.ID, "table-box")
    assert box.is_displayed() and box.find_element(By.TAG_NAME, "summary").text == "計算に使った行と式"
    box.find_element(By.TAG_NAME, "summary").click()
    assert browser.find_element(By.ID, "table-name").text == "表: products.csv"
    assert browser.find_element(By.ID, "table-sql").text.startswith("SELECT ")
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#table-rows tbody td")]
    assert "ミナト勤怠" in cells, cells
    browser.save_screenshot(str(SHOTS / "12-table-answer.png"))
    # the text path (a question asked nowhere else, so never an instant answer from the cache): the box goes away
    text_answer = ask(browser, "無料で試せる期間は何日ありますか？")
    assert not browser.find_element(By.ID, "table-box").is_displayed(), text_answer
