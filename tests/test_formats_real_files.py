"""Office files a real office suite wrote (tests/fixtures/office/, made by scripts/office_fixtures.py with
LibreOffice 7.4 headless from the Debian packages' Japanese text), read with exact expectations: these
run everywhere, LibreOffice or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import Settings
from app.formats import read_document
from app.ingestion.datadir import SourceFile
from app.ingestion.reading import chunk_file

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "office"
COUNTRIES_CONTEXT = (
    "countries — Sheet1 — ISO 3166-1 国名コード一覧 出典: Debian iso-codes 4.15.0-1(日本語名は同梱の翻訳カタログ) — "
    "コード/2文字, コード/3文字, コード/数字, 国名/英語名, 国名/正式名称, 国名/日本語名"
)


def read(name: str):
    return read_document(FIXTURES / name, Settings())


def test_fixtures_were_written_by_libreoffice():
    import zipfile

    for name in ("maint-guide.docx", "countries.xlsx", "debian-faq.pptx"):
        with zipfile.ZipFile(FIXTURES / name) as archive:
            assert "<Application>LibreOffice/7.4" in archive.read("docProps/app.xml").decode(), name
        assert (FIXTURES / name).stat().st_size < 40_000


def test_word_from_writer_sections_at_its_heading_styles_with_list_and_table():
    document = read("maint-guide.docx")
    assert document.split == "sections"
    assert [source for _, source, _ in document.units] == [
        "maint-guide.docx#26-パッケージ名とバージョン",
        "maint-guide.docx#27-dh_make-のセットアップ",
        "maint-guide.docx#67-コマンド階層",
        "maint-guide.docx#有用な文書パッケージのリスト",
    ]
    text, _, context = document.units[0]
    assert text.startswith(
        "gentoo-0.9.12.tar.gz としてアップストリームソースが提供される場合、パッケージ名は gentoo で"
    )
    assert context == "maint-guide — 第2章 はじめの一歩 > 2.6. パッケージ名とバージョン"
    assert "$DEBEMAIL と $DEBFULLNAME を設定して" in document.units[1][0]
    assert document.units[2][0] == (
        "・debuild = dpkg-buildpackage + lintian (サニタイズした環境変数下でのビルド)\n・cowbuilder = pbuilder 実行の加速"
    )
    assert document.units[3][0] == (
        "パッケージ:doc-debian\n説明:Debian プロジェクトの文書、(Debian FAQ) 他\n\n"
        "パッケージ:debmake-doc\n説明:Debian メンテナ向けガイド"
    )
    assert (
        document.titles["maint-guide.docx#27-dh_make-のセットアップ"]
        == "第2章 はじめの一歩 > 2.7. dh_make のセットアップ"
    )


def test_excel_from_calc_title_block_and_merged_two_row_header():
    document = read("countries.xlsx")
    assert document.split == "rows"
    assert document.units == [
        (
            "コード/2文字:AW\nコード/3文字:ABW\nコード/数字:533\n国名/英語名:Aruba\n国名/日本語名:アルーバ",
            "countries.xlsx:Sheet1!r1",
            COUNTRIES_CONTEXT,
        ),
        (
            "コード/2文字:AF\nコード/3文字:AFG\nコード/数字:4\n国名/英語名:Afghanistan\n"
            "国名/正式名称:Islamic Republic of Afghanistan\n国名/日本語名:アフガニスタン",
            "countries.xlsx:Sheet1!r2",
            COUNTRIES_CONTEXT,
        ),  # Calc typed "004" as the number 4: the leading zeros a spreadsheet loses are lost here too
        (
            "コード/2文字:JP\nコード/3文字:JPN\nコード/数字:392\n国名/英語名:Japan\n国名/日本語名:日本",
            "countries.xlsx:Sheet1!r3",
            COUNTRIES_CONTEXT,
        ),
    ]


def test_powerpoint_from_impress_titles_body_and_speaker_notes():
    document = read("debian-faq.pptx")
    assert [source for _, source, _ in document.units] == ["debian-faq.pptx:s1", "debian-faq.pptx:s2"]
    title = "10.4. 古いカーネルパッケージを安全に削除できますか? できるのならその方法は?"
    assert document.titles["debian-faq.pptx:s1"] == title
    text, _, context = document.units[0]
    assert context == f"debian-faq — {title}"
    assert text.startswith(title + "\n\nはい。linux-image-NNN.prerm スクリプトは現在実行中のカーネルが")
    assert text.endswith("\n\nノート:\ndpkg --purge linux-image-NNN")
    assert document.units[1][0].endswith("詳細な情報が Debian Linux Kernel Handbook で保守されています。")


@pytest.mark.parametrize(
    ("name", "folder", "first_source"),
    [
        ("maint-guide.docx", "docs", "maint-guide.docx#26-パッケージ名とバージョン"),
        ("countries.xlsx", "csv", "countries.xlsx:Sheet1!r1"),
        ("debian-faq.pptx", "docs", "debian-faq.pptx:s1"),
    ],
)
def test_the_sync_chunks_each_real_file_with_its_source_ids(name, folder, first_source):
    chunks = chunk_file(SourceFile(f"{folder}/{name}", FIXTURES / name, name, "h"), Settings())
    assert chunks and chunks[0].metadata["source"] == first_source
    assert all(c.metadata["file"] == name and c.page_content.strip() for c in chunks)
