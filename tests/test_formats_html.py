"""HTML pages read by app.formats.html: main content only, cut at headings."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.errors import DataSourceError
from app.formats.html import html_document
from app.ingestion.datadir import SourceFile
from app.ingestion.reading import chunk_file

PAGE = """<!DOCTYPE html><html lang="ja"><head><meta charset="{charset}"><title>経費精算の手引き | 社内ポータル</title></head>
<body><nav><ul><li><a href="/">ホーム</a></li><li><a href="/hr">人事</a></li><li><a href="/it">情報システム</a></li></ul></nav>
<main><article><h1>経費精算の手引き</h1>
<p>この手引きは、出張や備品購入で立て替えた経費を精算する手順を説明します。申請は月末までに行ってください。</p>
<h2>申請の方法</h2><p>経費精算システムにログインし、領収書の画像を添付して申請します。上長の承認後、経理部が確認します。</p>
<ul><li>領収書の原本は30日間保管すること</li><li>1万円を超える場合は事前申請が必要</li></ul>
<h2>振込日</h2><p>承認された経費は翌月25日に給与口座へ振り込まれます。25日が休日の場合は前営業日です。</p>
</article></main>
<footer><a href="/privacy">プライバシーポリシー</a></footer></body></html>"""


@pytest.mark.parametrize("charset", ["utf-8", "shift_jis"])
def test_html_main_content_cut_at_headings(tmp_path, charset):
    path = tmp_path / "keihi.html"
    path.write_bytes(PAGE.format(charset=charset).encode(charset))
    title, units = html_document(path)
    assert title == "経費精算の手引き"
    assert [(source, heading) for _, source, heading in units] == [
        ("keihi.html#経費精算の手引き", "経費精算の手引き"),
        ("keihi.html#申請の方法", "経費精算の手引き > 申請の方法"),
        ("keihi.html#振込日", "経費精算の手引き > 振込日"),
    ]
    assert units[1][0] == (
        "経費精算システムにログインし、領収書の画像を添付して申請します。上長の承認後、経理部が確認します。"
        "\n\n- 領収書の原本は30日間保管すること\n- 1万円を超える場合は事前申請が必要"
    )
    text = "\n".join(t for t, _, _ in units)
    assert "ホーム" not in text and "情報システム" not in text and "プライバシーポリシー" not in text


def test_html_chunks_have_stem_and_heading_context(tmp_path):
    path = tmp_path / "keihi.htm"
    path.write_text(PAGE.format(charset="utf-8"), encoding="utf-8")
    chunks = chunk_file(SourceFile("docs/keihi.htm", path, "keihi.htm", "h"), Settings())
    assert chunks[2].metadata["source"] == "keihi.htm#振込日"
    assert chunks[2].metadata["context"] == "keihi — 経費精算の手引き > 振込日"


def test_short_page_is_read_whole(tmp_path):
    (tmp_path / "memo.html").write_text("<html><body><p>内線番号は1234です。</p></body></html>", encoding="utf-8")
    assert html_document(tmp_path / "memo.html") == ("", [("内線番号は1234です。", "memo.html", "")])


def test_empty_page_is_one_line(tmp_path):
    (tmp_path / "blank.html").write_text("<html><body></body></html>", encoding="utf-8")
    with pytest.raises(DataSourceError, match=r"^blank.html: no text \(an empty page\)$"):
        html_document(tmp_path / "blank.html")


def huge_page(path):
    """A 49 MiB HTML page of tables (issue 40, case 2)."""
    rows = "".join(f"<tr><td>項目{i}</td><td>値{i}の説明です。</td></tr>" for i in range(8000))
    block = f"<section><h2>表</h2><table>{rows}</table></section>"
    with path.open("w", encoding="utf-8") as out:
        out.write("<html><head><title>大きな頁</title></head><body><main>")
        while out.tell() < 49 * 2**20:
            out.write(block)
        out.write("</main></body></html>")
    return path


def test_a_49_mib_page_is_ended_at_parse_timeout_s_and_at_max_reader_mb(tmp_path):
    """Issue 40, cases 1 and 2: PARSE_TIMEOUT_S was checked only after trafilatura returned (a 49 MiB
    page was still being read after 420 s). A file over 1 MiB is read in a child process, ended from
    outside at the time limit, and under an address-space cap: one line each, nothing left running."""
    import multiprocessing

    from app.config import Settings
    from app.errors import DataSourceError
    from app.formats import read_document

    huge = huge_page(tmp_path / "huge.html")
    with pytest.raises(DataSourceError) as raised:  # stopped at its budget (before: minutes)
        read_document(huge, Settings.from_env({"PARSE_TIMEOUT_S": "3", "MAX_READER_MB": "8192"}))
    assert (
        str(raised.value) == "huge.html: reading took longer than PARSE_TIMEOUT_S=3 s (stopped from outside); "
        "skipped (raise PARSE_TIMEOUT_S to read it)"
    )
    with pytest.raises(DataSourceError) as raised:  # PARSE_TIMEOUT_S's default, 300 s, and 1 GB (24 GB's share)
        read_document(huge, Settings.from_env({"MAX_READER_MB": "1024"}))
    assert str(raised.value) == (
        "huge.html: needed more than MAX_READER_MB=1024 of memory; skipped (raise MAX_READER_MB to read it)"
    )
    assert not [p for p in multiprocessing.active_children() if p.name == "file-reader"]


def test_a_reader_past_max_reader_mb_fails_in_one_line_and_the_limit_is_its_own(tmp_path):
    """A 2 MiB CSV read under a 100 MB address space: its reader runs out (pandas alone needs more), and
    the file fails saying which limit; this process's own memory is untouched by the cap."""
    import resource

    from app.config import Settings
    from app.errors import DataSourceError
    from app.formats import read_document

    big = tmp_path / "big.csv"
    big.write_text("項目,値\n" + "".join(f"項目{i},{i}\n" for i in range(120_000)), encoding="utf-8")
    assert big.stat().st_size > 2**20
    with pytest.raises(DataSourceError) as raised:
        read_document(big, Settings.from_env({"MAX_READER_MB": "100"}))
    assert str(raised.value) in (
        "big.csv: needed more than MAX_READER_MB=100 of memory; skipped (raise MAX_READER_MB to read it)",
        "big.csv: its reader stopped without an answer (more than MAX_READER_MB=100 of memory?); "
        "skipped (raise MAX_READER_MB to read it)",  # it died allocating (OpenBLAS aborts) before it could say
    )
    assert resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY
    units = read_document(big, Settings.from_env({"MAX_READER_MB": "4096"})).units
    assert len(units) == 120_000 and units[0][1] == "big.csv:r1"


def test_a_file_over_1_mib_reads_the_same_in_its_child_process(tmp_path):
    """The bounded child gives what the reader gives in this process, page progress relayed."""
    from app.config import Settings
    from app.formats import read_document, read_html

    medium = tmp_path / "medium.html"
    medium.write_text(
        "<html><head><title>中</title></head><body><main><h1>見出し</h1>"
        + ("<p>" + "本文の段落です。" * 12 + "</p>") * 3_700  # 1.04 MiB in long paragraphs: the size, not the parse
        + "</main></body></html>",
        encoding="utf-8",
    )
    assert medium.stat().st_size > 2**20
    settings = Settings.from_env({"PARSE_TIMEOUT_S": "120"})
    assert read_document(medium, settings) == read_html(medium, settings)


def test_an_office_file_of_any_size_is_read_in_its_bounded_child(tmp_path, monkeypatch):
    """A compressed Office file may inflate far past its size: even a small one goes to the child (the
    same units as in this process), a small CSV stays here."""
    from docx import Document

    from app import formats
    from app.config import Settings

    calls = []
    real = formats.read_bounded
    monkeypatch.setattr(formats, "read_bounded", lambda *a, **k: calls.append(a[1].name) or real(*a, **k))
    doc = Document()
    doc.add_heading("規程", 1)
    doc.add_paragraph("在宅勤務手当は月額5,000円とする。")
    doc.save(tmp_path / "rule.docx")
    (tmp_path / "faq.csv").write_text("質問,回答\n休日は？,土日です。\n", encoding="utf-8")
    settings = Settings.from_env({})
    assert formats.read_document(tmp_path / "rule.docx", settings) == formats.read_word(
        tmp_path / "rule.docx", settings
    )
    assert formats.read_document(tmp_path / "faq.csv", settings).units == [
        ("質問:休日は？\n回答:土日です。", "faq.csv:r1", "faq — 質問, 回答")
    ]
    assert calls == ["rule.docx"]


# A DocBook-made page (as xsltproc writes them): no <main> or <article>, each heading deep in its
# "titlepage" divs, the chapter's heading with no text of its own; trafilatura drops every heading (issue 39).
DOCBOOK = """<html><head><meta http-equiv="Content-Type" content="text/html; charset={charset}"><title>メニューのコマンド</title></head>
<body><div class="section"><div class="titlepage"><div><div><h3 class="title">メニューのコマンド</h3></div></div></div>
<div class="section"><div class="titlepage"><div><div><h4 class="title">アクションメニュー</h4></div></div></div>
<p>アクションメニューではパッケージ一覧の更新やインストールの実行ができます。更新するには u を押します。</p></div>
<div class="section"><div class="titlepage"><div><div><h4 class="title">取り消しメニュー</h4></div></div></div>
<p>取り消しメニューでは最後の変更を取り消せます。取り消すには Control+u を押します。</p></div></div></body></html>"""


@pytest.mark.parametrize("charset", ["utf-8", "shift_jis"])
def test_html_headings_trafilatura_drops_are_read_from_the_page(tmp_path, charset):
    path = tmp_path / "ch02s01s02.html"
    path.write_bytes(DOCBOOK.format(charset=charset).encode(charset))
    _, units = html_document(path)
    assert [(source, heading) for _, source, heading in units] == [
        ("ch02s01s02.html#アクションメニュー", "メニューのコマンド > アクションメニュー"),
        ("ch02s01s02.html#取り消しメニュー", "メニューのコマンド > 取り消しメニュー"),
    ]
    assert units[1][0] == "取り消しメニューでは最後の変更を取り消せます。取り消すには Control+u を押します。"


def test_with_headings_exact_values():
    from app.formats.html import with_headings

    markdown = "目次の後の本文です。\n\n**図1 コマンド**\n\n| キー | 説明 |\n\n見出しだけの行\n\n最後の段落です。"
    headings = [
        (2, "章", "目次\n目次の後の本文です。"),  # the table of contents is passed over
        (3, "節", "図1 コマンド\nキー"),
        (3, "消えた節", "どこにもない文"),  # its text was dropped: left out
        (3, "見出しだけの行", "最後の段落です。"),  # a line that is the heading's text becomes the heading
    ]
    assert with_headings(markdown, headings) == (
        "## 章\n\n目次の後の本文です。\n\n### 節\n\n**図1 コマンド**\n\n| キー | 説明 |\n\n### 見出しだけの行\n\n最後の段落です。"
    )
    assert with_headings("# 既にある\n\n本文", [(2, "別", "本文")]) == "# 既にある\n\n本文"  # trafilatura kept them


def test_page_headings_reads_each_heading_with_the_text_after_it():
    from app.formats.html import page_headings

    raw = "<html><body><h1>題 <b>一</b></h1><p>本文A</p><script>x()</script><h2>題二</h2>後<i>B</i></body></html>"
    assert page_headings(raw.encode()) == [(1, "題 一", "本文A"), (2, "題二", "後\nB")]
