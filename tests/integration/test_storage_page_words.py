"""The words of OCR'd pages on real PostgreSQL (app.storage.page_words, issue 52): kept by the sync in the
document's switch, read only by who may read the document (both walls), used by the page's boxes with
no Tesseract at request time, replaced when the file changes, gone with the document, and never mixed
with another version's by a switch that fails halfway."""

from __future__ import annotations

import shutil
import time
import uuid

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from app.formats.page_image import scan_quote_boxes
from app.permissions.principals import FULL_ACCESS, user_principals
from app.storage.page_words import page_words
from tests.integration.conftest import ROOT, HashEmbeddings
from tests.test_formats_ocr import needs_ocr, page_image

pytestmark = [pytest.mark.integration, needs_ocr]

ACCESS = '[folders]\n"csv" = ["everyone"]\n"pdf" = ["経理"]\n'
QUOTE = "社員の勤務時間は午前9時から午後6時までとする。"  # the scan's second line
DOC = "pdf/規則.png"


@pytest.fixture
def scans(settings, engine, tmp_path):
    """A collection synced from csv/products.csv (everyone) and the scan pdf/規則.png (経理 only), and
    two users with a personal token each: alice in 経理, bob in 営業."""
    from app.storage import users as user_rows
    from app.store import RagStore
    from app.users.identity import new_token, token_hash

    suffix = uuid.uuid4().hex[:8]
    data = tmp_path / "data"
    (data / "csv").mkdir(parents=True)
    (data / "pdf").mkdir()
    shutil.copy(ROOT / "data" / "csv" / "products.csv", data / "csv" / "products.csv")
    page_image().save(data / "pdf" / "規則.png")  # three lines at y = 60, 140, 220 px of 1300 × 360
    (data / "access.toml").write_text(ACCESS, encoding="utf-8")
    s = settings.changed(
        retrieval={"collection_name": f"pw_{suffix}"}, graph={"extractor": "off"}, ingest={"data_dir": data}
    )
    rs = RagStore(s, embeddings=HashEmbeddings(), engine=engine, principals=FULL_ACCESS)
    rs.sync(data)
    people = {"alice": (f"alice_{suffix}", ["経理"]), "bob": (f"bob_{suffix}", ["営業"])}
    tokens = {}
    for who, (name, groups) in people.items():
        user_rows.upsert_user(engine, name, groups)
        tokens[who] = new_token()
        user_rows.add_token(engine, name, token_hash(tokens[who]))
    principals = {who: user_principals(name, groups) for who, (name, groups) in people.items()}
    yield rs, data, principals, tokens
    for name, _ in people.values():
        user_rows.delete_user(engine, name)
    with rs.writing():
        rs.vectorstore.delete_collection()


def test_the_sync_keeps_a_scans_words_for_who_may_read_it_only(scans, engine):
    rs, _, principals, _ = scans
    collection = rs.settings.retrieval.collection_name
    kept = page_words(engine, collection, DOC, 1, principals["alice"])
    assert kept is not None and (kept.width, kept.height) == (1300, 360)
    assert QUOTE in "".join(w[0] for w in kept.words)
    assert page_words(engine, collection, DOC, 1, principals["bob"]) is None
    assert page_words(engine, collection, DOC, 2, principals["alice"]) is None  # no such page
    assert page_words(engine, collection, "csv/products.csv", 1, principals["alice"]) is None  # no OCR there
    # the second wall: a plain SELECT without the application's predicate, as the query role
    from app import storage

    for who, count in (("bob", 0), ("alice", 1)):
        with storage.reading(engine, principals[who]) as conn:
            assert conn.execute(text("SELECT current_user")).scalar() == "rag_query"
            assert conn.execute(text("SELECT count(*) FROM rag_page_words")).scalar() >= count
            mine = "SELECT count(*) FROM rag_page_words WHERE doc_id = :doc"
            assert conn.execute(text(mine), {"doc": DOC}).scalar() == count


def test_the_page_marks_the_quote_from_the_kept_words_and_bob_gets_the_unknown_sources_404(scans, monkeypatch):
    from app.serving.service import RagService
    from app.web.server import guarded_app

    rs, data, _, tokens = scans
    service = RagService(settings=rs.settings, store=rs, context_factory=lambda: None)
    web = TestClient(
        guarded_app(service, rs.settings, "127.0.0.1", 8780, data),
        base_url="http://127.0.0.1:8780",
        client=("127.0.0.1", 50000),
    )
    alice, bob = ({"Authorization": f"Bearer {tokens[who]}"} for who in ("alice", "bob"))

    def no_tesseract(*args, **kwargs):
        raise AssertionError("Tesseract ran at request time although the sync kept the words")

    monkeypatch.setattr("app.formats.quote_marks.tesseract_words", no_tesseract)
    started = time.perf_counter()
    view = web.get("/api/source", params={"id": "規則.png", "quote": QUOTE}, headers=alice)
    kept_ms = (time.perf_counter() - started) * 1000
    assert view.status_code == 200, view.text
    assert view.json()["image"] == "/api/page-image?id=%E8%A6%8F%E5%89%87.png" and view.json()["stale"] is False
    [box] = view.json()["boxes"]
    assert 120 <= box["y"] * 360 <= 160 and 150 <= (box["y"] + box["h"]) * 360 <= 200  # the second line
    assert web.get(view.json()["image"], headers=alice).headers["content-type"] == "image/png"
    refused = web.get("/api/source", params={"id": "規則.png", "quote": QUOTE}, headers=bob)
    unknown = web.get("/api/source", params={"id": "無い.png", "quote": QUOTE}, headers=bob)
    assert refused.status_code == unknown.status_code == 404 and refused.content == unknown.content
    image_refused = web.get("/api/page-image", params={"id": "規則.png"}, headers=bob)
    image_unknown = web.get("/api/page-image", params={"id": "無い.png"}, headers=bob)
    assert image_refused.status_code == 404 and image_refused.content == image_unknown.content

    monkeypatch.undo()  # what a scan stored before the words were kept costs: Tesseract on the page, now
    started = time.perf_counter()
    assert scan_quote_boxes(data / "pdf" / "規則.png", 1, QUOTE, "jpn+jpn_vert+eng") == [box]
    tesseract_ms = (time.perf_counter() - started) * 1000
    print(f"boxes from the kept words: {kept_ms:.0f} ms (the whole request); Tesseract now: {tesseract_ms:.0f} ms")


def test_a_changed_scan_replaces_its_words_and_a_removed_one_takes_them_along(scans, engine):
    rs, data, principals, _ = scans
    collection = rs.settings.retrieval.collection_name
    page_image(["有給休暇は年10日とする。"]).save(data / "pdf" / "規則.png")
    rs.sync(data)
    kept = page_words(engine, collection, DOC, 1, principals["alice"])
    assert kept is not None and "有給休暇" in "".join(w[0] for w in kept.words) and kept.height == 200
    (data / "pdf" / "規則.png").unlink()
    rs.sync(data)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM rag_page_words WHERE doc_id = :d"), {"d": DOC}).scalar() == 0


def test_a_switch_that_fails_after_writing_the_words_leaves_the_old_version_whole(scans, engine, monkeypatch):
    """A sync killed inside the switch: the new words were written in its transaction, which never
    commits; the old chunks and the old words stay together."""
    from app.storage import page_words as page_words_module

    rs, data, principals, _ = scans
    collection = rs.settings.retrieval.collection_name
    before = page_words(engine, collection, DOC, 1, principals["alice"])
    real = page_words_module.replace_page_words

    def killed(conn, *args):
        real(conn, *args)
        raise RuntimeError("killed in the switch")

    monkeypatch.setattr(page_words_module, "replace_page_words", killed)
    page_image(["有給休暇は年10日とする。"]).save(data / "pdf" / "規則.png")
    _, report = rs.sync(data)
    assert report.failed == 1 and "killed in the switch" in report.failures[0]
    assert page_words(engine, collection, DOC, 1, principals["alice"]) == before
    chunks = rs.source_chunks("規則.png", principals["alice"])
    assert chunks and QUOTE in "".join(c["text"] for c in chunks)  # the old text, with the old words
