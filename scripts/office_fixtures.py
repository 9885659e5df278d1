"""Make the small real-converted fixtures of tests/test_formats_real_files.py (tests/fixtures/office/):
real Japanese text from the Debian packages `make real-corpus` fetched, converted by LibreOffice headless
as `make real-corpus` converts the whole documents. Committed, so the tests run without LibreOffice.

* ``maint-guide.docx`` — two sections of the New Maintainers' Guide, chapter 2 (Writer: HTML → Word),
  with a list (the command hierarchy of chapter 6) and a table (two rows of the Debian Reference's
  table 1.2);
* ``countries.xlsx`` — three rows of ISO 3166-1 with their Japanese names under the title block and
  merged two-row header of the corpus's workbook (Calc: HTML table → Excel);
* ``debian-faq.pptx`` — the Debian FAQ's kernel chapter, sections 10.4 and 10.5, a slide each, the
  command in the speaker notes (python-pptx's title-and-content deck, saved by Impress).

    python scripts/office_fixtures.py   # needs soffice and .cache/real-corpus-src (make real-corpus)
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "office"
TREE = ROOT / ".cache" / "real-corpus-src" / "tree"


def main() -> int:
    sys.path.insert(0, str(ROOT / "scripts"))
    from real_corpus import convert, countries_html, esc, html_blocks, iso_table, slides_of, soffice, write_deck

    program = soffice()
    if program is None or not TREE.is_dir():
        print("needs LibreOffice (soffice) and the real corpus's sources (make real-corpus)", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    first = dict(enumerate(html_blocks(TREE / "usr/share/doc/maint-guide-ja/html/first.ja.html")))
    build = html_blocks(TREE / "usr/share/doc/maint-guide-ja/html/build.ja.html")
    hierarchy = next(t for k, t in build if k == "p" and t.startswith("debuild = "))
    parts = ["<h1>第2章 はじめの一歩</h1>"]
    for kind, text in (first[106], first[107], first[123], first[124]):
        parts.append(f"<h2>{esc(text)}</h2>" if kind == "h" else f"<p>{esc(text)}</p>")
    parts.append(
        f"<h2>6.7. コマンド階層</h2><ul><li>{esc(hierarchy)}</li><li>cowbuilder = pbuilder 実行の加速</li></ul>"
    )
    parts.append(
        "<h2>有用な文書パッケージのリスト</h2><table border='1'><tr><th>パッケージ</th><th>説明</th></tr>"
        "<tr><td>doc-debian</td><td>Debian プロジェクトの文書、(Debian FAQ) 他</td></tr>"
        "<tr><td>debmake-doc</td><td>Debian メンテナ向けガイド</td></tr></table>"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "maint-guide.html").write_text(
            f'<html><head><meta charset="utf-8"><title>Debian 新メンテナーガイド</title></head><body>{"".join(parts)}'
            "</body></html>\n",
            encoding="utf-8",
        )
        convert(program, [work / "maint-guide.html"], "docx:MS Word 2007 XML", work / "out", "HTML (StarWriter)")
        rows = iso_table(TREE, "iso_3166-1", "3166-1", ["alpha_2", "alpha_3", "numeric", "name", "official_name"])
        picked = [r for r in rows if r["alpha_3"] in ("ABW", "AFG", "JPN")]
        (work / "countries.html").write_text(countries_html(picked, "4.15.0-1"), encoding="utf-8")
        convert(program, [work / "countries.html"], "xlsx:Calc MS Excel 2007 XML", work / "out", "HTML (StarCalc)")
        kernel = html_blocks(TREE / "usr/share/doc/debian/FAQ/ja/kernel.ja.html")
        start = next(i for i, (k, t) in enumerate(kernel) if k == "h" and t.startswith("10.4."))
        end = next(i for i, (k, t) in enumerate(kernel) if k == "h" and t.startswith("10.5."))
        write_deck(work / "debian-faq.pptx", slides_of(kernel[start : end + 2]))
        convert(program, [work / "debian-faq.pptx"], "pptx:Impress MS PowerPoint 2007 XML", work / "out")
        for name in ("maint-guide.docx", "countries.xlsx", "debian-faq.pptx"):
            shutil.copy(work / "out" / name, OUT / name)
            print(f"{OUT.relative_to(ROOT) / name}: {(OUT / name).stat().st_size:,} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
