"""app.formats (text, CSV, PDF readers) on real bytes: encodings by BOM, NULs, damaged PDFs, image-only PDFs (issue 15, case 3)."""

import codecs

import pytest

from app.errors import DataSourceError
from app.formats import csv_rows, pdf, text

FAQ = "質問,回答\n受付時間は？,平日9時から18時です。\n"


@pytest.mark.parametrize(
    "bom,encoding",
    [
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF8, "utf-8"),
    ],
)
def test_csv_with_a_byte_order_mark_is_decoded_by_it(tmp_path, bom, encoding):
    path = tmp_path / "faq.csv"
    path.write_bytes(bom + FAQ.encode(encoding))
    assert csv_rows.csv_table(path)[1] == [("質問:受付時間は？\n回答:平日9時から18時です。", "faq.csv:r1")]


def test_utf16_without_bom_is_one_clear_failure_not_nul_text(tmp_path):
    path = tmp_path / "u16.csv"
    path.write_bytes(FAQ.encode("utf-16-le"))
    with pytest.raises(DataSourceError, match="u16.csv: looks like UTF-16/32 without a byte-order mark"):
        csv_rows.csv_table(path)[1]


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("質問,回答\n休日は？,土日です。\n".encode("utf-16-le"), True),
        ("a,b\n1,2\n".encode("utf-32-be"), True),
        (bytes(range(256)) * 4, True),
        ("名前,値\nA\x00B,1\n".encode(), False),
        ("質問,回答\n".encode("cp932"), False),
    ],
)
def test_looks_like_wide_text(raw, expected):
    assert text.looks_like_wide_text(raw) is expected


def test_nul_bytes_are_stripped_from_csv_text(tmp_path):
    path = tmp_path / "nul.csv"
    path.write_bytes("名前,値\nA\x00B,1\x002\n".encode())
    assert csv_rows.csv_table(path)[1] == [("名前:AB\n値:12", "nul.csv:r1")]


def test_nul_is_stripped_from_pdf_text():
    assert pdf.clean_pdf_text("受付\x00時間") == "受付時間"


@pytest.mark.parametrize(
    "error",
    [NotImplementedError("unsupported filter"), RecursionError("deep"), AssertionError(), ZeroDivisionError("x")],
)
def test_any_pdf_parser_error_is_this_files_failure(tmp_path, mocker, error):
    # pypdf raises these (and LimitReachedError) on damaged files; tests/integration fuzzes real ones.
    mocker.patch("pypdf.PdfReader", side_effect=error)
    with pytest.raises(DataSourceError, match=rf"bad.pdf: unreadable PDF \({type(error).__name__}"):
        pdf.read_pdf_pages(tmp_path / "bad.pdf")


def test_image_only_pdf_is_a_failure_with_a_reason(tmp_path):
    from reportlab.pdfgen import canvas

    path = tmp_path / "scan.pdf"
    c = canvas.Canvas(str(path))
    c.rect(50, 50, 200, 300, fill=1)  # a drawing, no text: what a scanned page gives pypdf
    c.showPage()
    c.save()
    with pytest.raises(DataSourceError, match="scan.pdf: no extractable text"):
        pdf.pdf_document(path)


def test_unreadable_csv_names_the_file(tmp_path):
    with pytest.raises(DataSourceError, match="gone.csv: cannot read"):
        csv_rows.read_csv_rows(tmp_path / "gone.csv")


@pytest.mark.parametrize(
    "text,heading",
    [
        ("第3章 Debian ディストリビューションの選択\n本文", "第3章 Debian ディストリビューションの選択"),
        ("3.1.9. 新しいリリースができたら何が起きますか?\n本文", "3.1.9. 新しいリリースができたら何が起きますか?"),
        ("勤務時間と休憩\n始業は9時です。", "勤務時間と休憩"),
        ("Installed-Size: 145\nDepends: libc6", ""),
        ("apt purge foo\n次の行", ""),
        ("1 (シングルユーザモード)、\n2から5", ""),
        ("これは文です。\n次", ""),
        ("見出しだけ", ""),  # one line: nothing to head
    ],
)
def test_page_heading(text, heading):
    assert pdf.page_heading(text) == heading


def test_markdown_sections_with_heading_paths_and_stable_slugs(tmp_path):
    from app.formats.text import text_document

    path = tmp_path / "guide.md"
    path.write_text(
        "前書き。\n\n# 導入 Guide\n\n一段落目。\n二行目。\n\n二段落目。\n\n## Step 1: Setup!\n\n"
        "```\n# not a heading\n```\n\n### 空\n\n# 運用\n\n## Step 1: Setup!\n\n二度目。\n\n"
        "# Ｆｕｌｌ Ｗｉｄｔｈ\n\n全角。\n",
        encoding="utf-8",
    )
    assert text_document(path) == [
        ("前書き。", "guide.md", ""),
        ("一段落目。\n二行目。\n\n二段落目。", "guide.md#導入-guide", "導入 Guide"),
        ("```\n# not a heading\n```", "guide.md#step-1-setup", "導入 Guide > Step 1: Setup!"),
        ("二度目。", "guide.md#step-1-setup-1", "運用 > Step 1: Setup!"),  # same slug, another section
        ("全角。", "guide.md#full-width", "Ｆｕｌｌ Ｗｉｄｔｈ"),
    ]


def test_text_file_is_one_unit_and_cp932_is_read(tmp_path):
    from app.formats.text import text_document

    path = tmp_path / "memo.txt"
    path.write_bytes("# 見出しではない\n\n本文です。".encode("cp932"))
    assert text_document(path) == [("# 見出しではない\n\n本文です。", "memo.txt", "")]


@pytest.mark.parametrize("content", [b"", b"\n\n   \n", "# 見出しだけ\n".encode()])
def test_empty_markdown_is_a_clear_error(tmp_path, content):
    from app.formats.text import text_document

    path = tmp_path / "empty.md"
    path.write_bytes(content)
    with pytest.raises(DataSourceError, match=r"^empty.md: no text \(an empty file\)$"):
        text_document(path)


def test_heading_levels_by_font_size_without_running_headers():
    body = "本文の行です。" * 3
    pages = [
        (f"手引き\n第1章 導入\n{body}\n1.1 目的\n{body}", [13.0, 18.0, 10.0, 13.0, 10.0]),
        (f"手引き\n{body}\n1.2 範囲\n\n{body}", [13.0, 10.0, 13.0, 0.0, 10.0]),
        (f"手引き\n{body}", [13.0, 10.0]),
        (f"手引き\n{body}\n{'長い' * 41}", [13.0, 10.0, 13.0]),
    ]  # 82 characters: no heading
    assert pdf.heading_levels(pages) == [
        [None, 0, None, 1, None],
        [None, None, 1, None, None],
        [None, None],
        [None, None, None],
    ]  # 手引き: large on 4 pages


def test_heading_levels_of_a_one_size_document_are_none():
    assert pdf.heading_levels([("一行目\n二行目", [10.0, 10.0])]) == [[None, None]]
    assert pdf.heading_levels([]) == []
    assert pdf.heading_levels([("本文\n見出し", [0.0, 12.0]), ("本文の続き", [0.0])]) == [[None, None], [None]]


def test_split_at_headings_cuts_before_each_and_joins_a_heading_over_two_lines():
    text = "前ページの続き。\n4.2. copyright\n本文。\n4.3. とても長い\n見出し\n本文二。\n4.4. rules"
    assert pdf.split_at_headings(text, [None, 1, None, 1, 1, None, 1]) == [
        (None, "", "前ページの続き。"),
        (1, "4.2. copyright", "4.2. copyright\n本文。"),
        (1, "4.3. とても長い 見出し", "4.3. とても長い\n見出し\n本文二。"),
        (1, "4.4. rules", "4.4. rules"),
    ]
    assert pdf.split_at_headings("\n見出し\n本文", [None, 0, None]) == [(0, "見出し", "見出し\n本文")]


def make_sized_pdf(path, pages, title=""):
    """A PDF of ``pages``, each a list of ``(font size, line)`` drawn top down."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont("HeiseiKakuGo-W5"))
    c = canvas.Canvas(str(path))
    if title:
        c.setTitle(title)
    for lines in pages:
        y = 800
        for size, line in lines:
            c.setFont("HeiseiKakuGo-W5", size)
            c.drawString(50, y, line)
            y -= size + 8
        c.showPage()
    c.save()
    return path


def test_pdf_sections_by_font_size_carry_heading_paths_across_pages(tmp_path):
    path = make_sized_pdf(
        tmp_path / "manual.pdf",
        [
            [
                (16, "第1章 導入"),
                (10, "目次"),
                (10, "1.1 目的"),
                (10, "この章は導入です。"),
                (13, "1.1 目的"),
                (10, "目的を述べます。"),
                (13, "1.2 範囲"),
            ],
            [(10, "範囲は社内です。"), (10, "対象は全社員です。"), (13, "1.3 用語"), (10, "用語を定義します。")],
            [(16, "第2章 運用"), (10, "運用は毎日です。")],
        ],
        title="運用マニュアル",
    )
    title, units = pdf.pdf_document(path)
    assert title == "運用マニュアル"
    assert units == [
        (
            "第1章 導入\n目次\n1.1 目的\nこの章は導入です。",
            "manual.pdf:p1",
            "第1章 導入",
        ),  # the contents line is body size
        ("1.1 目的\n目的を述べます。", "manual.pdf:p1", "第1章 導入 > 1.1 目的"),
        ("範囲は社内です。\n対象は全社員です。", "manual.pdf:p2", "第1章 導入 > 1.2 範囲"),  # 1.2 had no text on p1
        ("1.3 用語\n用語を定義します。", "manual.pdf:p2", "第1章 導入 > 1.3 用語"),
        ("第2章 運用\n運用は毎日です。", "manual.pdf:p3", "第2章 運用"),
    ]
    from app.ingest import load_pdfs

    assert load_pdfs(path.parent)[1] == (  # the spec's pages: a page's sections joined again
        "範囲は社内です。\n対象は全社員です。\n\n1.3 用語\n用語を定義します。",
        "manual.pdf:p2",
    )


class FakePage:
    """A pypdf page double: its visitor gets ``pieces`` ``(text, font size, vertical scale)``."""

    def __init__(self, pieces, text=None):
        self.pieces, self.text = pieces, text

    def extract_text(self, visitor_text, visitor_operand_before=None):
        for piece, size, scale in self.pieces:
            visitor_text(piece, [1, 0, 0, 1, 0, 0], [scale, 0, 0, scale, 0, 0], {}, size)
        return self.text if self.text is not None else "".join(p for p, _, _ in self.pieces)


def test_page_layout_sizes_each_line_by_most_of_its_characters():
    page = FakePage(
        [
            ("1.2 範囲", 1.0, 13.0),
            ("\n", 0.0, 1.0),
            ("本文は", 10.0, 1.0),
            ("x", 20.0, 1.0),
            ("\n\n", 0.0, 1.0),
            ("次", 10.0, 1.0),
        ]
    )
    assert pdf._page_layout(page) == ("1.2 範囲\n本文はx\n\n次", [13.0, 10.0, 0.0, 10.0])


def test_page_layout_without_matching_pieces_has_no_sizes():
    assert pdf._page_layout(FakePage([("見出し", 13.0, 1.0)], text="見出し\n本文")) == ("見出し\n本文", [0.0, 0.0])
