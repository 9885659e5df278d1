"""Bad Office files fail with one line each, before any library inflates them (app.formats.zipguard)."""

from __future__ import annotations

import io
import zipfile

import pytest
from docx import Document
from openpyxl import Workbook
from pptx import Presentation

from app.errors import DataSourceError
from app.formats import excel, slides, word
from app.formats.limits import Limits
from app.formats.zipguard import check_office_zip

READERS = {".docx": word.docx_document, ".xlsx": excel.xlsx_document, ".pptx": slides.pptx_document}


def good_file(path):
    """A small valid file of ``path``'s format."""
    if path.suffix == ".docx":
        doc = Document()
        doc.add_paragraph("本文")
        doc.save(path)
    elif path.suffix == ".xlsx":
        wb = Workbook()
        wb.active.append(["項目", "値"])
        wb.active.append(["a", 1])
        wb.save(path)
    else:
        prs = Presentation()
        prs.slides.add_slide(prs.slide_layouts[1]).shapes.title.text = "題"
        prs.save(path)
    return path


@pytest.mark.parametrize("suffix", [".docx", ".xlsx", ".pptx"])
def test_truncated_file_is_one_line(tmp_path, suffix):
    path = good_file(tmp_path / f"a{suffix}")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(DataSourceError, match=rf"^a\{suffix}: corrupt or truncated file \(not a readable zip: .*\)$"):
        READERS[suffix](path)


@pytest.mark.parametrize("suffix", [".docx", ".xlsx", ".pptx"])
def test_not_a_zip_is_one_line(tmp_path, suffix):
    path = tmp_path / f"a{suffix}"
    path.write_bytes(b"this is text, not an Office file\n" * 10)
    with pytest.raises(DataSourceError, match=rf"^a\{suffix}: corrupt or truncated file"):
        READERS[suffix](path)


@pytest.mark.parametrize("suffix", [".docx", ".xlsx", ".pptx"])
def test_zip_with_a_damaged_part_is_one_line(tmp_path, suffix):
    """A valid zip whose main part is not XML: the reader's own error, as one line."""
    path = good_file(tmp_path / f"a{suffix}")
    with zipfile.ZipFile(path) as archive:
        parts = {info.filename: archive.read(info) for info in archive.infolist()}
    main = {".docx": "word/document.xml", ".xlsx": "xl/worksheets/sheet1.xml", ".pptx": "ppt/slides/slide1.xml"}[suffix]
    parts[main] = b"<not xml"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    kind = {".docx": "Word file", ".xlsx": "Excel workbook", ".pptx": "PowerPoint file"}[suffix]
    with pytest.raises(DataSourceError, match=rf"^a\{suffix}: unreadable {kind} \(.*\)$"):
        READERS[suffix](path)


def test_zip_bomb_is_refused_by_uncompressed_size(tmp_path):
    path = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * (3 * 1024 * 1024))
    assert path.stat().st_size < 20_000  # 3 MB of zeros inflate from a few kilobytes
    with pytest.raises(
        DataSourceError,
        match=r"^bomb.xlsx: 3 MB of text parts uncompressed, more than MAX_ZIP_MB=2; skipped "
        r"\(a zip bomb\? raise MAX_ZIP_MB to read it\)$",
    ):
        excel.xlsx_document(path, Limits(max_zip_mb=2))


def test_zip_bomb_is_refused_by_entry_count(tmp_path):
    path = tmp_path / "many.docx"
    with zipfile.ZipFile(path, "w") as archive:
        for number in range(11):
            archive.writestr(f"part{number}.xml", b"")
    with pytest.raises(DataSourceError, match=r"^many.docx: 11 entries in its zip, more than MAX_ZIP_ENTRIES=10; "):
        word.docx_document(path, Limits(max_zip_entries=10))


def test_password_protected_workbook_is_one_line(tmp_path):
    from msoffcrypto.format.ooxml import OOXMLFile

    plain = good_file(tmp_path / "plain.xlsx")
    encrypted = io.BytesIO()
    with open(plain, "rb") as fh:
        OOXMLFile(fh).encrypt("secret", encrypted)
    path = tmp_path / "locked.xlsx"
    path.write_bytes(encrypted.getvalue())
    with pytest.raises(
        DataSourceError,
        match=r"^locked.xlsx: password-protected \(encrypted\) Office file, or an old "
        r"binary format saved under a new name; skipped \(remove the password, "
        r"or save it again as \.xlsx\)$",
    ):
        excel.xlsx_document(path)


def test_check_office_zip_passes_a_good_file(tmp_path):
    path = good_file(tmp_path / "ok.pptx")
    assert check_office_zip(path, "ok.pptx", 1, 100) is None
    with pytest.raises(DataSourceError, match=r"^ok\.pptx: "):  # the same file over a limit of one entry
        check_office_zip(path, "ok.pptx", 1, 1)


@pytest.mark.parametrize(
    "name,variable",
    [("a.xlsx", "MAX_OFFICE_MB"), ("a.pptx", "MAX_OFFICE_MB"), ("a.png", "MAX_IMAGE_MB"), ("a.html", "MAX_TEXT_MB")],
)
def test_size_limit_per_format(tmp_path, name, variable):

    from app.config import Settings
    from app.ingestion.scan import size_refusal

    path = tmp_path / name
    path.write_bytes(b"\0" * (2 * 1024 * 1024))
    settings = Settings().changed(ingest={"max_office_mb": 1, "max_image_mb": 1, "max_text_mb": 1})
    assert size_refusal(f"docs/{name}", path, settings) == (
        f"docs/{name}: 2 MB, larger than {variable}=1; skipped (raise {variable} to read it)"
    )


@pytest.mark.parametrize(
    "value,message",
    [
        ("jpn;rm", "OCR_LANGS must be Tesseract language names joined by '+' (e.g. jpn+eng), got 'jpn;rm'"),
        ("jpn+", "OCR_LANGS must be Tesseract language names joined by '+' (e.g. jpn+eng), got 'jpn+'"),
    ],
)
def test_ocr_langs_is_validated(value, message):
    from app.config import Settings

    with pytest.raises(ValueError) as caught:
        Settings.from_env({"OCR_LANGS": value})
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("real", "renamed", "message"),
    [
        (".docx", ".xlsx", "not a valid Excel file (a Word document renamed .xlsx?); skipped"),
        (".xlsx", ".docx", "not a valid Word file (an Excel workbook renamed .docx?); skipped"),
        (".pptx", ".xlsx", "not a valid Excel file (a PowerPoint presentation renamed .xlsx?); skipped"),
        (".docx", ".pptx", "not a valid PowerPoint file (a Word document renamed .pptx?); skipped"),
    ],
)
def test_an_office_file_renamed_to_another_kind_says_what_it_is(tmp_path, real, renamed, message):
    """Issue 40, case 7: a real .docx renamed .xlsx was `OSError: File contains no valid workbook part`."""
    path = good_file(tmp_path / f"doc{real}").rename(tmp_path / f"doc{renamed}")
    with pytest.raises(DataSourceError) as raised:
        READERS[renamed](path)
    assert str(raised.value) == f"doc{renamed}: {message}"


def test_the_zip_limit_counts_the_parts_a_reader_inflates_and_follows_max_office_mb(tmp_path):
    """Pictures are not inflated by any reader: 3 MB of them pass a 2 MB limit; MAX_ZIP_MB unset is
    4 × MAX_OFFICE_MB, set it is what it says."""
    from app.config import Settings

    path = good_file(tmp_path / "pictures.docx")
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/image1.png", b"\0" * (3 * 1024 * 1024))
    assert word.docx_document(path, Limits(max_zip_mb=2))[0][0] == "本文"
    assert Settings.from_env({"MAX_OFFICE_MB": "50"}).ingest.max_zip_mb == 200
    assert Settings.from_env({}).ingest.max_zip_mb == 800
    assert Settings.from_env({"MAX_OFFICE_MB": "50", "MAX_ZIP_MB": "70"}).ingest.max_zip_mb == 70


def test_text_longer_than_max_file_chars_is_skipped_before_embedding(tmp_path):
    """Issue 40, case 3: a 135 KB .docx expanded to 9.3 million characters (hours of embedding). A real
    .docx of 300,000 characters compresses to a few kilobytes; past MAX_FILE_CHARS it is one line."""
    from app.config import Settings
    from app.ingestion.reading import read_units

    path = tmp_path / "docs" / "expands.docx"
    path.parent.mkdir()
    doc = Document()
    for _ in range(300):
        doc.add_paragraph("あ" * 1000)
    doc.save(path)
    assert path.stat().st_size < 40_000
    units, _, _ = read_units(path, Settings())  # the default, 2,000,000, reads it
    total = sum(len(text) for text, _, _ in units)
    assert 300_000 <= total < 301_000  # the paragraphs and the breaks between them
    with pytest.raises(DataSourceError) as raised:
        read_units(path, Settings.from_env({"MAX_FILE_CHARS": "200000"}))
    assert str(raised.value) == (
        f"expands.docx: {total} characters of text, more than MAX_FILE_CHARS=200000; "
        "skipped (raise MAX_FILE_CHARS to read it)"
    )
