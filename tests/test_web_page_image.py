"""app.web.page_image over a fake store of two readers: /api/page-image answers the reader with the
PNG of a real PDF's page and anyone else exactly as an unknown source; /api/source adds the image,
``stale`` and the quote's boxes; the PNG cache never answers for a changed file."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image
from starlette.testclient import TestClient

from app.formats.limits import file_hash
from app.formats.page_image import quote_boxes
from app.formats.page_words import PageWords
from app.users.identity import Identity
from app.web.app import create_app
from app.web.page_image import Lru, page_number
from app.web.sources import document_file, source_view
from tests.web_fakes import PageService

GUIDE = Path(__file__).resolve().parents[1] / "data" / "pdf" / "technical_guide.pdf"
QUOTE = "推奨ブラウザはGoogle Chromeの最新版とMicrosoft Edgeの最新版です。"
ALICE, BOB = Identity("alice", ("経理",)), Identity("bob", ("営業",))


class Store(PageService):
    """Two documents, ``pdf/guide.pdf`` (alice's only) and ``csv/faq.csv`` (both), with the hashes
    the sync stored; chunks and documents as the real service returns them to each reader."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.docs = {
            "pdf/guide.pdf": {"doc_id": "pdf/guide.pdf", "content_hash": file_hash(data / "pdf" / "guide.pdf")},
            "csv/faq.csv": {"doc_id": "csv/faq.csv", "content_hash": file_hash(data / "csv" / "faq.csv")},
        }

    def list_documents(self, who):
        return [d for d in self.docs.values() if d["doc_id"] != "pdf/guide.pdf" or who.name == "alice"]

    def source_chunks(self, source, who):
        doc_id = source.split(":")[0]
        if doc_id not in {d["doc_id"] for d in self.list_documents(who)}:
            return []
        text = QUOTE if doc_id.endswith(".pdf") else "質問:受付時間は？\n回答:平日9時から18時まで"  # a row as stored
        return [{"text": text, "doc_id": doc_id, "context": "", "title": ""}]


@pytest.fixture
def data(tmp_path) -> Path:
    (tmp_path / "pdf").mkdir()
    (tmp_path / "csv").mkdir()
    shutil.copy(GUIDE, tmp_path / "pdf" / "guide.pdf")
    (tmp_path / "csv" / "faq.csv").write_text("質問,回答\n受付時間は？,9時から\n", encoding="utf-8")
    return tmp_path


def client(store: Store, who: Identity) -> TestClient:
    """The page's app over ``store`` asked by ``who`` (as app.web.server wires it)."""
    app = create_app(
        store,
        view_source=lambda source, asker: source_view(store.source_chunks(source, asker), source),
        document_path=lambda doc_id, asker: document_file(store.list_documents(asker), store.data, doc_id),
    )

    async def as_who(scope, receive, send):
        if scope["type"] == "http":
            scope.setdefault("state", {})["identity"] = who
        await app(scope, receive, send)

    return TestClient(as_who)


def test_the_reader_gets_the_page_as_png_and_another_reads_it_as_unknown(data):
    store = Store(data)
    got = client(store, ALICE).get("/api/page-image", params={"id": "pdf/guide.pdf:p1"})
    assert got.status_code == 200
    assert got.headers["content-type"] == "image/png"
    assert got.headers["cache-control"] == "private, no-store"
    assert Image.open(io.BytesIO(got.content)).size[0] == 1200
    bob = client(store, BOB)
    refused = bob.get("/api/page-image", params={"id": "pdf/guide.pdf:p1"})
    unknown = bob.get("/api/page-image", params={"id": "pdf/nothing.pdf:p1"})
    assert refused.status_code == unknown.status_code == 404
    assert refused.content == unknown.content == bob.get("/api/source", params={"id": "pdf/nothing.pdf:p1"}).content
    assert bob.get("/api/source", params={"id": "pdf/guide.pdf:p1"}).content == unknown.content


def test_a_source_that_is_no_page_is_refused_in_one_line(data):
    alice = client(Store(data), ALICE)
    got = alice.get("/api/page-image", params={"id": "csv/faq.csv:r1"})
    assert got.status_code == 400
    assert got.json() == {"error": "この出典はページ画像で表示できません（PDF と画像のページだけです）"}
    assert alice.get("/api/page-image", params={"id": "pdf/guide.pdf:p9"}).json() == {
        "error": "guide.pdf: no page 9 (the file has 4 pages)"
    }
    assert alice.get("/api/page-image").status_code == 404
    assert alice.get("/api/page-image", params={"id": "a\x00b"}).status_code == 400
    assert "image" not in alice.get("/api/source", params={"id": "csv/faq.csv:r1"}).json()


def test_source_view_names_the_image_the_boxes_and_whether_the_file_changed(data):
    store = Store(data)
    alice = client(store, ALICE)
    view = alice.get("/api/source", params={"id": "pdf/guide.pdf:p1", "quote": QUOTE}).json()
    assert view["image"] == "/api/page-image?id=pdf%2Fguide.pdf%3Ap1"
    assert view["stale"] is False
    assert view["boxes"] == quote_boxes(GUIDE, 1, QUOTE) and len(view["boxes"]) == 1
    assert "boxes" not in alice.get("/api/source", params={"id": "pdf/guide.pdf:p1"}).json()
    assert alice.get("/api/source", params={"id": "pdf/guide.pdf:p1", "quote": "x" * 2001}).status_code == 400

    with open(data / "pdf" / "guide.pdf", "ab") as fh:  # changed since the sync stored its hash
        fh.write(b"\n% an edit\n")
    assert alice.get("/api/source", params={"id": "pdf/guide.pdf:p1"}).json()["stale"] is True


def test_a_changed_file_is_never_answered_from_the_cache(data):
    alice = client(Store(data), ALICE)
    first = alice.get("/api/page-image", params={"id": "pdf/guide.pdf:p1"}).content
    assert alice.get("/api/page-image", params={"id": "pdf/guide.pdf:p1"}).content == first
    shutil.copy(data / "pdf" / "guide.pdf", data / "old.pdf")
    # page 2 copied over the file, same mtime forced back: the size differs, so the key does
    import pypdfium2 as pdfium

    stat = (data / "pdf" / "guide.pdf").stat()
    document = pdfium.PdfDocument(str(data / "old.pdf"))
    document.del_page(0)
    document.save(str(data / "pdf" / "guide.pdf"))
    document.close()
    os.utime(data / "pdf" / "guide.pdf", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert alice.get("/api/page-image", params={"id": "pdf/guide.pdf:p1"}).content != first


def test_the_lru_keeps_the_most_recent_within_its_bounds():
    lru = Lru(2, max_bytes=10)
    lru.put("a", b"12345")
    lru.put("b", b"12345")
    assert lru.get("a") == b"12345"  # now the most recent
    lru.put("c", b"1")
    assert lru.get("b") is None and lru.get("a") and lru.get("c")
    lru.put("d", b"1234567890")
    assert list(lru.items) == ["d"] and lru.items.currsize == 10
    lru.put("e", b"12345678901")  # larger than the whole cache: not kept, nothing else dropped
    assert lru.get("e") is None and lru.get("d")
    counted = Lru(2)
    for key in "xyz":
        counted.put(key, [key])
    assert list(counted.items) == ["y", "z"]


def test_which_sources_are_pages():
    assert page_number({"doc_id": "pdf/g.pdf", "kind": "page", "number": 3, "source": "pdf/g.pdf:p3"}) == 3
    assert page_number({"doc_id": "scan.tif", "kind": "page", "number": 2, "source": "scan.tif:p2"}) == 2
    assert page_number({"doc_id": "scan.png", "kind": "section", "number": None, "source": "scan.png"}) == 1
    # as the sync stores a single image: the document pdf/scan.png, its one source the file's name
    assert page_number({"doc_id": "pdf/scan.png", "kind": "section", "number": None, "source": "scan.png"}) == 1
    assert page_number({"doc_id": "pdf/scan.png", "kind": "section", "number": None, "source": "other.png"}) is None
    assert page_number({"doc_id": "faq.csv", "kind": "row", "number": 2, "source": "faq.csv:r2"}) is None
    assert page_number({"doc_id": "a.md", "kind": "section", "number": None, "source": "a.md"}) is None


class TwoPages(Store):
    """The two-reader store and ``pdf/rules.pdf`` (alice's only): two pages a sentence runs across."""

    def __init__(self, data: Path) -> None:
        super().__init__(data)
        self.docs["pdf/rules.pdf"] = {"doc_id": "pdf/rules.pdf", "content_hash": file_hash(data / "pdf" / "rules.pdf")}

    def list_documents(self, who):
        return [d for d in self.docs.values() if not d["doc_id"].startswith("pdf/") or who.name == "alice"]

    def source_chunks(self, source, who):
        doc_id = source.split(":")[0]
        if doc_id != "pdf/rules.pdf":
            return super().source_chunks(source, who)
        if doc_id not in {d["doc_id"] for d in self.list_documents(who)}:
            return []
        return [{"text": "…", "doc_id": doc_id, "context": "", "title": ""}]


def test_a_quote_across_a_page_break_gives_both_pages_with_their_boxes(data):
    from app.formats.quote_marks import page_marks
    from tests.test_formats_quote_marks import SENTENCE, two_pages

    two_pages(data / "pdf" / "rules.pdf")
    store = TwoPages(data)
    alice = client(store, ALICE)
    view = alice.get("/api/source", params={"id": "pdf/rules.pdf:p2", "quote": SENTENCE}).json()
    marks = page_marks(data / "pdf" / "rules.pdf", 2, SENTENCE)
    assert view["boxes"] == marks[2] and len(marks[1]) == len(marks[2]) == 1
    assert view["pages"] == [
        {
            "number": 1,
            "source": "pdf/rules.pdf:p1",
            "image": "/api/page-image?id=pdf%2Frules.pdf%3Ap1",
            "boxes": marks[1],
        },
        {
            "number": 2,
            "source": "pdf/rules.pdf:p2",
            "image": "/api/page-image?id=pdf%2Frules.pdf%3Ap2",
            "boxes": marks[2],
        },
    ]
    assert alice.get(view["pages"][0]["image"]).headers["content-type"] == "image/png"
    one = alice.get("/api/source", params={"id": "pdf/rules.pdf:p2", "quote": "Late requests wait a week."}).json()
    assert "pages" not in one and len(one["boxes"]) == 1
    bob = client(store, BOB)
    unknown = bob.get("/api/source", params={"id": "pdf/nothing.pdf:p2", "quote": SENTENCE})
    refused = bob.get("/api/source", params={"id": "pdf/rules.pdf:p2", "quote": SENTENCE})
    assert refused.status_code == unknown.status_code == 404 and refused.content == unknown.content
    assert bob.get(view["pages"][0]["image"]).content == bob.get("/api/page-image", params={"id": "pdf/x:p1"}).content


class Scans(Store):
    """The two-reader store and ``scan/scan.png`` (alice's only), whose words the sync kept (its
    ``store.page_words``, as the real store reads them: by the asker's principals)."""

    def __init__(self, data: Path, page_words) -> None:
        super().__init__(data)
        self.store = SimpleNamespace(page_words=page_words)
        self.docs["scan/scan.png"] = {"doc_id": "scan/scan.png", "content_hash": file_hash(data / "scan" / "scan.png")}

    def list_documents(self, who):
        return [d for d in self.docs.values() if d["doc_id"] == "csv/faq.csv" or who.name == "alice"]

    def source_chunks(self, source, who):
        if source != "scan/scan.png":
            return super().source_chunks(source, who)
        readable = who.name == "alice"
        return [{"text": "勤務時間は午前9時から", "doc_id": source, "context": "", "title": ""}] if readable else []


KEPT = PageWords(400, 200, (("勤務時間は", 40, 20, 200, 20, 0), ("午前9時から", 40, 160, 160, 20, 1)))


def test_a_scans_boxes_come_from_the_words_kept_as_who_asks_never_from_tesseract(data, monkeypatch):
    (data / "scan").mkdir()
    Image.new("L", (400, 200), 255).save(data / "scan" / "scan.png")
    asked: list[tuple[str, int, tuple]] = []

    def page_words(doc_id, page, principals):
        asked.append((doc_id, page, principals))
        return KEPT if principals == ALICE.principals else None

    store = Scans(data, page_words)

    def no_tesseract(*args, **kwargs):
        raise AssertionError("Tesseract ran although the words were kept")

    monkeypatch.setattr("app.formats.quote_marks.tesseract_words", no_tesseract)

    view = client(store, ALICE).get("/api/source", params={"id": "scan/scan.png", "quote": "午前9時から"}).json()
    assert view["boxes"] == [{"x": 0.1, "y": 0.8, "w": 0.4, "h": 0.1}] and asked == [
        ("scan/scan.png", 1, ALICE.principals)
    ]
    bob = client(store, BOB)
    refused = bob.get("/api/source", params={"id": "scan/scan.png", "quote": "午前9時から"})
    unknown = bob.get("/api/source", params={"id": "scan/nothing.png", "quote": "午前9時から"})
    assert refused.status_code == unknown.status_code == 404 and refused.content == unknown.content
    assert asked == [("scan/scan.png", 1, ALICE.principals)]  # bob's request never reached the words

    Image.new("L", (400, 200), 250).save(data / "scan" / "scan.png")  # changed since the sync kept the words
    read_now = PageWords(400, 200, (("午前9時から", 0, 0, 400, 100, 0),))
    monkeypatch.setattr("app.formats.quote_marks.tesseract_words", lambda image, langs, command: read_now)
    view = client(store, ALICE).get("/api/source", params={"id": "scan/scan.png", "quote": "午前9時から"}).json()
    assert view["stale"] is True and view["boxes"] == [{"x": 0.0, "y": 0.0, "w": 1.0, "h": 0.5}]
    assert len(asked) == 1  # the kept words are of the version the sync read: not used for this one
