"""The page image in a real browser: the page's app (app.web.app over the fake two-reader store of
tests/test_web_page_image.py, a real PDF from data/pdf/) served by uvicorn on a free port, opened in
Debian's headless Chromium: a PDF page source shows its rendered image, and the quote's highlight lies
over the quote's characters (PDFium's own char boxes). No model, no question asked. The screenshot is
kept in .cache/web-screenshots/ (docs/img/page-image.png, in docs/web.md, is a copy of one)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.formats.limits import file_hash
from tests.integration.conftest import ROOT, SCREENSHOTS, chromium, free_port, served
from tests.test_formats_ocr import needs_ocr, page_image
from tests.test_formats_page_image import expected_box
from tests.test_formats_quote_marks import SENTENCE, two_pages
from tests.test_web_page_image import ALICE, QUOTE, Store

pytestmark = pytest.mark.integration

SCAN_QUOTE = "社員の勤務時間は午前9時から午後6時までとする。"  # the second of the scan's three lines
SHOT = SCREENSHOTS / "page-image.png"  # docs/img/page-image.png is a copy


class WithScan(Store):
    """The two-reader store and a scanned page, ``scan/scan.png`` (everyone's), whose OCR text is stored."""

    def __init__(self, data: Path) -> None:
        super().__init__(data)
        self.docs["scan/scan.png"] = {"doc_id": "scan/scan.png", "content_hash": file_hash(data / "scan" / "scan.png")}
        self.docs["pdf/rules.pdf"] = {"doc_id": "pdf/rules.pdf", "content_hash": file_hash(data / "pdf" / "rules.pdf")}

    def source_chunks(self, source, who):
        if source == "scan/scan.png":
            return [{"text": SCAN_QUOTE, "doc_id": source, "context": "", "title": ""}]
        return super().source_chunks(source, who)


@pytest.fixture(scope="module")
def page_url(tmp_path_factory):
    """The page's app over a store holding data/pdf/technical_guide.pdf, asked as alice, on a free port."""
    from app.web.app import create_app
    from app.web.sources import document_file, source_view

    data = tmp_path_factory.mktemp("data")
    (data / "pdf").mkdir()
    (data / "csv").mkdir()
    shutil.copy(ROOT / "data" / "pdf" / "technical_guide.pdf", data / "pdf" / "guide.pdf")
    (data / "csv" / "faq.csv").write_text("質問,回答\n", encoding="utf-8")
    (data / "scan").mkdir()
    page_image().save(data / "scan" / "scan.png")  # three lines of Japanese at y = 60, 140, 220 px of 360
    two_pages(data / "pdf" / "rules.pdf")  # a sentence runs from the foot of page 1 onto page 2
    store = WithScan(data)
    app = create_app(
        store,
        view_source=lambda source, who: source_view(store.source_chunks(source, who), source),
        document_path=lambda doc_id, who: document_file(store.list_documents(who), data, doc_id),
    )

    async def as_alice(scope, receive, send):
        if scope["type"] == "http":
            scope.setdefault("state", {})["identity"] = ALICE
        await app(scope, receive, send)

    port = free_port()
    with served(as_alice, port) as url:
        yield url, data


def test_a_pdf_source_shows_its_page_with_the_quote_marked(page_url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, data = page_url
    browser = chromium()
    try:
        browser.get(url)
        # what showDone does with an answer's quote, then a click on the source (no model here)
        browser.execute_script("lastQuote = arguments[0]; openSource(arguments[1]);", QUOTE, "pdf/guide.pdf:p1")
        WebDriverWait(browser, 30).until(
            lambda d: d.execute_script(
                "const i = document.getElementById('viewer-image'); return i.complete && i.naturalWidth > 0;"
            )
        )
        image = browser.find_element(By.ID, "viewer-image")
        assert image.get_attribute("alt") == "pdf/guide.pdf の 1 ページ"
        assert browser.execute_script("return document.getElementById('viewer-image').naturalWidth") == 1200
        [mark] = browser.find_elements(By.CSS_SELECTOR, "#viewer-page .quote-box")
        assert mark.get_attribute("role") == "mark" and QUOTE in mark.get_attribute("aria-label")
        picture = browser.execute_script(
            "return document.getElementById('viewer-image').getBoundingClientRect().toJSON()"
        )
        marked = browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", mark)
        want = expected_box(data / "pdf" / "guide.pdf", 1, "推奨ブラウザ", "最新版です。")
        for side, size, key in (("left", "width", "x"), ("top", "height", "y")):
            assert abs(marked[side] - (picture[side] + want[key] * picture[size])) <= 1.5, (side, marked, picture)
        assert abs(marked["width"] - want["w"] * picture["width"]) <= 1.5
        assert abs(marked["height"] - want["h"] * picture["height"]) <= 1.5
        assert (
            browser.find_element(By.ID, "viewer-file-link")
            .get_attribute("href")
            .endswith("/files/pdf/guide.pdf#page=1")
        )
        assert not browser.find_element(By.ID, "viewer-stale").is_displayed()
        assert QUOTE in browser.find_element(By.ID, "viewer-text").text  # the text view stays below
        SHOT.parent.mkdir(parents=True, exist_ok=True)
        browser.execute_script("arguments[0].scrollIntoView()", mark)
        browser.save_screenshot(str(SHOT))
        # a row source: the cited cell is marked (and in view), the other is not
        browser.execute_script(
            "lastQuote = arguments[0]; openSource(arguments[1]);", "回答:平日9時から18時まで", "csv/faq.csv:r1"
        )
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#viewer-table mark"))
        assert [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#viewer-table mark")] == ["平日9時から18時まで"]
        assert not browser.find_element(By.ID, "viewer-page").is_displayed()  # a row has no page image
        errors = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE" and "favicon" not in e["message"]]
        assert not errors, errors  # no CSP refusal, no failed request
    finally:
        browser.quit()


@needs_ocr
def test_a_scanned_page_shows_its_image_with_the_quote_marked_on_its_line(page_url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, _ = page_url
    browser = chromium()
    try:
        browser.get(url)
        browser.execute_script("lastQuote = arguments[0]; openSource(arguments[1]);", SCAN_QUOTE, "scan/scan.png")
        WebDriverWait(browser, 120).until(  # Tesseract reads the page's words on this first request
            lambda d: (
                d.find_elements(By.CSS_SELECTOR, "#viewer-page .quote-box")
                and d.execute_script(
                    "const i = document.getElementById('viewer-image'); return i.complete && i.naturalWidth > 0;"
                )
            )
        )
        assert browser.find_element(By.ID, "viewer-image").get_attribute("alt") == "scan/scan.png の 1 ページ"
        picture = browser.execute_script(
            "return document.getElementById('viewer-image').getBoundingClientRect().toJSON()"
        )
        marks = [
            browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", m)
            for m in browser.find_elements(By.CSS_SELECTOR, "#viewer-page .quote-box")
        ]
        scale = picture["height"] / 360  # the scan is 360 px high
        top = (min(m["top"] for m in marks) - picture["top"]) / scale
        bottom = (max(m["bottom"] for m in marks) - picture["top"]) / scale
        assert 120 <= top <= 160 and 150 <= bottom <= 200, (top, bottom)  # the second line, not the first or third
        assert not browser.find_element(By.ID, "viewer-file").is_displayed()  # no PDF to open
        browser.save_screenshot(str(SHOT.parent / "scan-image.png"))
    finally:
        browser.quit()


def test_a_quote_across_a_page_break_shows_both_pages_each_marked(page_url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, data = page_url
    browser = chromium()
    try:
        browser.get(url)
        browser.execute_script("lastQuote = arguments[0]; openSource(arguments[1]);", SENTENCE, "pdf/rules.pdf:p1")
        loaded = "return [...document.querySelectorAll('#viewer img')].every(i => i.complete && i.naturalWidth > 0);"
        WebDriverWait(browser, 30).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ".other-page .quote-box") and d.execute_script(loaded)
        )
        frames = browser.find_elements(By.CSS_SELECTOR, "#viewer-page, .other-page")
        assert [f.get_attribute("id") or "other" for f in frames] == ["viewer-page", "other"]  # page 1, then 2
        assert frames[1].find_element(By.TAG_NAME, "img").get_attribute("alt") == "pdf/rules.pdf の 2 ページ"
        for frame, number, first, last in (
            (frames[0], 1, "The approval", "to the"),
            (frames[1], 2, "manager", "Friday."),
        ):
            [mark] = frame.find_elements(By.CSS_SELECTOR, ".quote-box")
            picture = browser.execute_script(
                "return arguments[0].querySelector('img').getBoundingClientRect().toJSON()", frame
            )
            marked = browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", mark)
            want = expected_box(data / "pdf" / "rules.pdf", number, first, last)
            assert abs(marked["left"] - (picture["left"] + want["x"] * picture["width"])) <= 1.5
            assert abs(marked["top"] - (picture["top"] + want["y"] * picture["height"])) <= 1.5
            assert abs(marked["width"] - want["w"] * picture["width"]) <= 1.5
        browser.execute_script("lastQuote = arguments[0]; openSource(arguments[1]);", QUOTE, "pdf/guide.pdf:p1")
        WebDriverWait(browser, 30).until(lambda d: not d.find_elements(By.CSS_SELECTOR, ".other-page"))
        assert len(browser.find_elements(By.CSS_SELECTOR, "#viewer-page .quote-box")) == 1  # one page again
    finally:
        browser.quit()
