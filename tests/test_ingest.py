"""ingest.py: loaders on real files (PDF, CSV in UTF-8/BOM/CP932), chunking, ids, the CLI's messages.

No database or model here: the store is a recording double; tests/integration runs it for real."""

import logging

import pytest

from app import ingest
from app.cli import ingest as ingest_cli
from app.config import Settings
from app.formats import pdf
from app.ingestion import reading, staging, sync

FAQ = "質問,回答\nパスワードを忘れた,再設定してください。\n受付時間は？,平日9時から18時です。\n"


def make_pdf(path, pages):
    """A real PDF with Japanese text, one string per page (reportlab CID font)."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("HeiseiKakuGo-W5"))
    c = canvas.Canvas(str(path))
    for text in pages:
        c.setFont("HeiseiKakuGo-W5", 12)
        for i, line in enumerate(text.split("\n")):
            c.drawString(50, 800 - 20 * i, line)
        c.showPage()
    c.save()
    return path


@pytest.fixture
def data_dir(tmp_path):
    (tmp_path / "pdf").mkdir()
    (tmp_path / "csv").mkdir()
    make_pdf(
        tmp_path / "pdf" / "guide.pdf", ["会社概要\n当社は東京にあります。", "", "エラーコードE1001は認証失敗です。"]
    )
    (tmp_path / "csv" / "faq.csv").write_text(FAQ, encoding="utf-8")
    return tmp_path


def test_load_pdfs_reads_pages_with_1_based_source_ids(data_dir):
    pages = ingest.load_pdfs(data_dir / "pdf")
    assert pages == [
        ("会社概要\n当社は東京にあります。", "guide.pdf:p1"),
        ("エラーコードE1001は認証失敗です。", "guide.pdf:p3"),
    ]


def test_load_pdfs_missing_folder_raises_filenotfound(tmp_path):
    with pytest.raises(FileNotFoundError, match="directory not found"):
        ingest.load_pdfs(tmp_path / "nope")


def test_load_pdfs_empty_folder(tmp_path):
    assert ingest.load_pdfs(tmp_path) == []


def test_load_pdfs_skips_corrupt_file_with_warning_and_keeps_others(data_dir, caplog):
    (data_dir / "pdf" / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    with caplog.at_level(logging.WARNING):
        pages = ingest.load_pdfs(data_dir / "pdf")
    assert [s for _, s in pages] == ["guide.pdf:p1", "guide.pdf:p3"]
    assert "broken.pdf" in caplog.text and "unreadable PDF" in caplog.text


def test_load_pdfs_skips_encrypted_file(data_dir, caplog):
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(data_dir / "pdf" / "guide.pdf"))
    writer.encrypt("secret")
    with open(data_dir / "pdf" / "locked.pdf", "wb") as fh:
        writer.write(fh)
    with caplog.at_level(logging.WARNING):
        pages = ingest.load_pdfs(data_dir / "pdf")
    assert all(not s.startswith("locked") for _, s in pages)
    assert "locked.pdf: encrypted PDF" in caplog.text


def test_load_pdfs_matches_uppercase_extension(tmp_path):
    make_pdf(tmp_path / "UPPER.PDF", ["テスト"])
    assert ingest.load_pdfs(tmp_path) == [("テスト", "UPPER.PDF:p1")]


def test_load_pdfs_skips_a_file_over_max_pdf_mb_as_the_sync_does(data_dir, clean_env, caplog):
    clean_env.setenv("MAX_PDF_MB", "1")
    (data_dir / "pdf" / "huge.pdf").write_bytes(b"%PDF-1.4\n" + b"0" * (1024 * 1024 + 1))
    with caplog.at_level(logging.WARNING):
        pages = ingest.load_pdfs(data_dir / "pdf")
    assert [s for _, s in pages] == ["guide.pdf:p1", "guide.pdf:p3"]
    assert "huge.pdf: 1 MB, larger than MAX_PDF_MB=1; skipped" in caplog.text


def test_load_pdfs_and_load_csvs_read_what_the_sync_chunks(data_dir):
    """One route: the spec's loaders and the sync read a file with the same reader (app.ingestion.reading.read_units)."""
    settings = Settings()
    for folder, name, load in (("pdf", "guide.pdf", ingest.load_pdfs), ("csv", "faq.csv", ingest.load_csvs)):
        path = data_dir / folder / name
        chunks = reading.chunk_file(sync.SourceFile(f"{folder}/{name}", path, name, "h"), settings)
        assert [(c.page_content, c.metadata["source"]) for c in chunks] == load(data_dir / folder)


def test_load_csvs_rows_as_column_value_lines(data_dir):
    assert ingest.load_csvs(data_dir / "csv") == [
        ("質問:パスワードを忘れた\n回答:再設定してください。", "faq.csv:r1"),
        ("質問:受付時間は？\n回答:平日9時から18時です。", "faq.csv:r2"),
    ]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "cp932", "shift_jis"])
def test_load_csvs_decodes_japanese_encodings(tmp_path, encoding):
    (tmp_path / "faq.csv").write_bytes(FAQ.encode(encoding))
    rows = ingest.load_csvs(tmp_path)
    assert rows[0] == ("質問:パスワードを忘れた\n回答:再設定してください。", "faq.csv:r1")


def test_load_csvs_cp932_only_characters(tmp_path):
    (tmp_path / "x.csv").write_bytes("項目,値\n①番,髙橋\n".encode("cp932"))
    assert ingest.load_csvs(tmp_path) == [("項目:①番\n値:髙橋", "x.csv:r1")]


@pytest.mark.parametrize("content", [b"", b"   \n", "質問,回答\n".encode()])
def test_load_csvs_skips_empty_csv_with_warning(tmp_path, caplog, content):
    (tmp_path / "empty.csv").write_bytes(content)
    with caplog.at_level(logging.WARNING):
        assert ingest.load_csvs(tmp_path) == []
    assert "empty.csv" in caplog.text


def test_load_csvs_skips_undecodable_file(tmp_path, caplog):
    (tmp_path / "bin.csv").write_bytes(bytes([0x82, 0xFF, 0xFE, 0x00, 0x81]) * 3)
    (tmp_path / "ok.csv").write_text(FAQ, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        rows = ingest.load_csvs(tmp_path)
    assert [s for _, s in rows] == ["ok.csv:r1", "ok.csv:r2"]
    assert "bin.csv: looks like UTF-16/32 without a byte-order mark, or binary data" in caplog.text


def test_load_csvs_drops_empty_cells(tmp_path):
    (tmp_path / "p.csv").write_text("名前,価格,備考\nA,100,\n", encoding="utf-8")
    assert ingest.load_csvs(tmp_path) == [("名前:A\n価格:100", "p.csv:r1")]


def test_load_csvs_keeps_leading_zeros_as_text(tmp_path):
    (tmp_path / "p.csv").write_text("コード\n007\n", encoding="utf-8")
    assert ingest.load_csvs(tmp_path) == [("コード:007", "p.csv:r1")]


@pytest.mark.parametrize(
    "raw,expected",
    [
        (
            "見出し\n本文が長く続いて行の終わりまで来たので次の行に\n続きます。\n短い行。",
            "見出し\n本文が長く続いて行の終わりまで来たので次の行に続きます。\n短い行。",
        ),
        (
            "English words wrap across a long line of text that\ncontinues here.",
            "English words wrap across a long line of text that continues here.",
        ),
        ("段落一。\n\n段落二。", "段落一。\n\n段落二。"),
        ("  \n\n  ", ""),
    ],
)
def test_clean_pdf_text(raw, expected):
    assert pdf.clean_pdf_text(raw) == expected


def test_count_truncated_uses_the_model_tokenizer():
    class Tok:
        def __call__(self, texts, add_special_tokens=True):
            return {"input_ids": [list(range(len(t) + 2)) for t in texts]}

    emb = type("E", (), {"_client": type("C", (), {"tokenizer": Tok(), "max_seq_length": 5})()})()
    assert staging.count_truncated(["abc", "abcd", "a"], emb) == (1, 5)
    assert staging.count_truncated(["abc"], object()) == (0, 0)


def test_main_missing_data_dir_is_one_line_error(tmp_path, capsys, no_db):
    mocker = no_db
    mocker.patch("app.storage.list_documents", return_value=[])
    assert ingest_cli.main(["--data-dir", str(tmp_path / "nope")]) == 1
    assert capsys.readouterr().err == f"Error: data directory not found: {tmp_path / 'nope'}\n"


def test_main_empty_data_dir_says_nothing_to_ingest(tmp_path, capsys, no_db):
    mocker = no_db
    mocker.patch("app.storage.list_documents", return_value=[])
    mocker.patch("app.storage.delete_legacy_chunks", return_value=0)
    assert ingest_cli.main(["--data-dir", str(tmp_path)]) == 0
    assert "Nothing to ingest" in capsys.readouterr().out


def test_main_dry_run_prints_the_plan_and_changes_nothing(data_dir, capsys, no_db):
    mocker = no_db
    mocker.patch("app.storage.list_documents", return_value=[])
    replace = mocker.patch("app.storage.replace_document")
    assert ingest_cli.main(["--data-dir", str(data_dir), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would add:    pdf/guide.pdf" in out and "would add:    csv/faq.csv" in out
    assert out.strip().endswith("Dry run: 2 to add, 0 to update, 0 unchanged, 0 to remove")
    replace.assert_not_called()


def test_main_refuses_to_empty_the_store_from_an_empty_dir(tmp_path, capsys, no_db):
    mocker = no_db
    mocker.patch(
        "app.storage.list_documents",
        return_value=[{"doc_id": "csv/faq.csv", "source_file": "faq.csv", "content_hash": "h", "settings_hash": "s"}],
    )
    delete = mocker.patch("app.storage.delete_document")
    assert ingest_cli.main(["--data-dir", str(tmp_path)]) == 1
    assert "refusing to remove them all" in capsys.readouterr().err
    delete.assert_not_called()
    mocker.patch("app.storage.delete_legacy_chunks", return_value=0)
    assert ingest_cli.main(["--data-dir", str(tmp_path), "--allow-empty"]) == 0
    delete.assert_called_once()
