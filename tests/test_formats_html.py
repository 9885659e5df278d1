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


def test_a_49_mib_page_is_stopped_at_parse_timeout_s_and_a_page_over_1_mib_still_reads(tmp_path):
    """Issue 40, case 2: PARSE_TIMEOUT_S was checked only after trafilatura returned (a 49 MiB page was
    still being read after 420 s). A page over 1 MiB is read in a child process that is ended at the
    limit: one line, and nothing left running. A 1.2 MiB page still reads, through the child."""
    import multiprocessing
    import time

    from app.errors import DataSourceError
    from app.formats.html import IN_PROCESS_BYTES, html_document
    from app.formats.limits import Limits

    rows = "".join(f"<tr><td>項目{i}</td><td>値{i}の説明です。</td></tr>" for i in range(8000))
    block = f"<section><h2>表</h2><table>{rows}</table></section>"
    huge = tmp_path / "huge.html"
    with huge.open("w", encoding="utf-8") as out:
        out.write("<html><head><title>大きな頁</title></head><body><main>")
        while out.tell() < 49 * 2**20:
            out.write(block)
        out.write("</main></body></html>")
    start = time.monotonic()
    with pytest.raises(DataSourceError) as raised:
        html_document(huge, Limits(parse_timeout_s=3))
    elapsed = time.monotonic() - start
    assert str(raised.value) == (
        "huge.html: reading took longer than PARSE_TIMEOUT_S=3 s (stopped at the main content); "
        "skipped (raise PARSE_TIMEOUT_S to read it)"
    )
    assert elapsed < 3 + 60  # the bound is PARSE_TIMEOUT_S + 30 s; before, minutes
    assert not [p for p in multiprocessing.active_children() if p.name == "html-reader"]
    medium = tmp_path / "medium.html"
    medium.write_text(
        "<html><head><title>中</title></head><body><main><h1>見出し</h1>"
        + "<p>本文の段落です。</p>" * ((IN_PROCESS_BYTES // 30) + 1000)
        + "</main></body></html>",
        encoding="utf-8",
    )
    assert medium.stat().st_size > IN_PROCESS_BYTES
    title, units = html_document(medium, Limits(parse_timeout_s=120))
    assert title == "見出し" and units[0][1] == "medium.html#見出し" and "本文の段落です。" in units[0][0]
