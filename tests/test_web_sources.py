"""app.web.sources: kinds of sources, row cells, stored files only; the routes that serve them."""

import pytest
from starlette.testclient import TestClient

from app.text.chunks import row_pairs as row_cells
from app.web.app import create_app
from app.web.markdown import markdown_blocks
from app.web.sources import document_file, source_kind
from tests.test_web_app import FakeService


@pytest.mark.parametrize(
    "source, expected",
    [
        ("guide.pdf:p3", ("page", 3)),
        ("scan.tif:p12", ("page", 12)),
        ("faq.csv:r2", ("row", 2)),
        ("ledger.xlsx:経費!r12", ("row", 12)),
        ("training.pptx:s3", ("slide", 3)),
        ("it_helpdesk.md#vpn-接続", ("section", None)),
        ("notes.txt", ("section", None)),
    ],
)
def test_source_kind(source, expected):
    assert source_kind(source) == expected


def test_row_cells_keep_columns_and_values_with_colons_and_continued_lines():
    text = "質問:受付時間は？\n回答:平日9:00から18:00\n土日は休み\nURL:https://example.jp/a"
    assert row_cells(text) == [
        ("質問", "受付時間は？"),
        ("回答", "平日9:00から18:00\n土日は休み"),
        ("URL", "https://example.jp/a"),
    ]


def test_only_stored_documents_inside_the_data_dir_are_files(tmp_path):
    data = tmp_path / "data"
    (data / "pdf").mkdir(parents=True)
    (data / "pdf" / "guide.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "secret.pdf").write_bytes(b"%PDF-1.4")
    (data / "pdf" / "link.pdf").symlink_to(tmp_path / "secret.pdf")
    stored = [{"doc_id": "pdf/guide.pdf"}, {"doc_id": "pdf/link.pdf"}, {"doc_id": "../secret.pdf"}]
    assert document_file(stored, data, "pdf/guide.pdf") == (data / "pdf" / "guide.pdf").resolve()
    assert document_file(stored, data, "pdf/other.pdf") is None  # not stored
    assert document_file(stored, data, "pdf/link.pdf") is None  # points outside the folder
    assert document_file(stored, data, "../secret.pdf") is None  # outside, even if a row said so


def test_the_routes_serve_what_the_lookups_find_and_404_otherwise(tmp_path):
    pdf = tmp_path / "guide.pdf"
    pdf.write_bytes(b"%PDF-1.4 test")
    views = {"faq.csv:r2": {"source": "faq.csv:r2", "kind": "row", "cells": [["質問", "受付時間は？"]]}}
    files = {"pdf/guide.pdf": pdf, "docs/a.md": tmp_path / "a.md"}
    client = TestClient(
        create_app(FakeService(), view_source=lambda s, who: views.get(s), document_path=lambda d, who: files.get(d))
    )
    assert client.get("/api/source", params={"id": "faq.csv:r2"}).json()["cells"] == [["質問", "受付時間は？"]]
    missing = client.get("/api/source", params={"id": "nope.csv:r1"})
    assert missing.status_code == 404 and missing.json() == {"error": "この出典は保存されていません"}
    assert client.get("/api/source").status_code == 404
    served = client.get("/files/pdf/guide.pdf")
    assert served.status_code == 200 and served.content == b"%PDF-1.4 test"
    assert served.headers["content-type"] == "application/pdf" and served.headers["content-disposition"].startswith(
        "inline"
    )
    (tmp_path / "a.md").write_text("# 見出し\n本文", encoding="utf-8")
    other = client.get("/files/docs/a.md")  # any other file downloads, never renders in the page's origin
    assert other.status_code == 200 and other.headers["content-type"] == "application/octet-stream"
    assert other.headers["content-disposition"].startswith("attachment")
    assert client.get("/files/../etc/passwd").status_code == 404


def test_a_markdown_section_is_blocks_of_plain_text():
    text = (
        "社外からは**ミナトVPN**に接続します。\n続きの行。\n\n- 手順1: アプリを開く\n- `6桁` を入力\n\n"
        "| 項目 | 値 |\n|---|---|\n| 内線 | 4100 |\n\n```\nvpn connect\n```\n\n### 小見出し\n"
    )
    assert markdown_blocks(text) == [
        {"tag": "p", "text": "社外からはミナトVPNに接続します。\n続きの行。"},
        {"tag": "li", "text": "手順1: アプリを開く"},
        {"tag": "li", "text": "6桁 を入力"},
        {"tag": "tr", "text": "項目 | 値", "cells": ["項目", "値"]},
        {"tag": "tr", "text": "内線 | 4100", "cells": ["内線", "4100"]},
        {"tag": "pre", "text": "vpn connect"},
        {"tag": "h3", "text": "小見出し"},
    ]


def test_markup_in_a_markdown_section_stays_text():
    blocks = markdown_blocks("<script>alert(1)</script>\n\n![図](http://example.com/x.png) [社内](javascript:alert(1))")
    assert blocks == [
        {"tag": "p", "text": "<script>alert(1)</script>"},
        {"tag": "p", "text": "図 [社内](javascript:alert(1))"},
    ]
