"""Limits with one-line errors (issue 24, case 5 and 6): rows, cells, a parse time budget."""

from __future__ import annotations

import pytest

from app.errors import DataSourceError
from app.formats.csv_rows import csv_table
from app.formats.limits import Deadline, Limits
from app.formats.pdf import pdf_document
from app.formats.text import text_document


def test_csv_with_more_rows_than_max_rows_fails_in_one_line(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("a,b\n" + "".join(f"{i},x\n" for i in range(11)), encoding="utf-8")
    with pytest.raises(DataSourceError) as err:
        csv_table(path, Limits(max_rows=10))
    assert str(err.value) == "big.csv: more than MAX_ROWS=10 data rows; skipped (raise MAX_ROWS, or split the file)"
    assert len(csv_table(path, Limits(max_rows=11))[1]) == 11


def test_csv_cell_longer_than_max_cell_chars_fails_in_one_line(tmp_path):
    path = tmp_path / "cell.csv"
    path.write_text("a,b\n1,短い\n2," + "長" * 101 + "\n", encoding="utf-8")
    with pytest.raises(DataSourceError) as err:
        csv_table(path, Limits(max_cell_chars=100))
    assert str(err.value) == (
        "cell.csv: row 2 has a cell of 101 characters, more than MAX_CELL_CHARS=100; "
        "skipped (raise MAX_CELL_CHARS to read it)"
    )


def test_deadline_raises_once_spent_naming_where():
    now = [0.0]
    deadline = Deadline("slow.pdf", 5, clock=lambda: now[0])
    deadline.check("page 1")
    now[0] = 5.5
    with pytest.raises(DataSourceError) as err:
        deadline.check("page 3")
    assert str(err.value) == (
        "slow.pdf: reading took longer than PARSE_TIMEOUT_S=5 s (stopped at page 3); "
        "skipped (raise PARSE_TIMEOUT_S to read it)"
    )


def slow_pdf(path, pages: int, ops: int) -> None:
    """A small PDF whose pages share one content stream of ``ops`` operations (the fault run's case)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    stream = DecodedStreamObject()
    stream.set_data(b"BT /F1 12 Tf 10 10 Td (a) Tj ET\n" + b"BT (a) Tj ET\n" * ops)
    ref = writer._add_object(stream)
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    resources = DictionaryObject({NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
    for _ in range(pages):
        page = writer.add_blank_page(200, 200)
        page[NameObject("/Contents")] = ref
        page[NameObject("/Resources")] = resources
    with open(path, "wb") as fh:
        writer.write(fh)


def test_pdf_past_its_time_budget_fails_in_one_line(tmp_path):
    path = tmp_path / "slow.pdf"
    slow_pdf(path, pages=10, ops=20000)
    with pytest.raises(DataSourceError) as err:
        pdf_document(path, Limits(parse_timeout_s=0.2))
    assert str(err.value).startswith("slow.pdf: reading took longer than PARSE_TIMEOUT_S=0.2 s (stopped at page ")


def test_markdown_past_its_time_budget_fails(tmp_path):
    path = tmp_path / "many.md"
    path.write_text("".join(f"# h{i}\n\nbody\n" for i in range(2000)), encoding="utf-8")
    with pytest.raises(DataSourceError, match="PARSE_TIMEOUT_S"):
        text_document(path, Limits(parse_timeout_s=0.0))
    assert len(text_document(path)) == 2000


def test_a_parser_error_is_this_files_one_line_failure():
    from app.errors import DataSourceError
    from app.formats.limits import this_file_only

    def failure(exc):
        with pytest.raises(DataSourceError) as err, this_file_only("規程.docx", "Word file"):
            raise exc
        return str(err.value)

    assert failure(KeyError("word/document.xml")) == "規程.docx: unreadable Word file (KeyError: 'word/document.xml')"
    assert failure(PermissionError("denied")) == "規程.docx: cannot read (PermissionError: denied)"
    assert failure(DataSourceError("規程.docx: encrypted")) == "規程.docx: encrypted"  # passes as it is
    with this_file_only("規程.docx", "Word file"):
        value = 1  # nothing raised: nothing changes
    assert value == 1
