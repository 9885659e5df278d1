"""Write the question sets of the office corpus (`make real-corpus` → .cache/real-corpus-office) into
data/real/formats/: each question once, with a needle (a phrase of the answer's text), resolved to its
source ID in each format's data dir and in the original's (issue 26, 'Done when').

    python scripts/format_questions.py [--corpus .cache/real-corpus-office]

Sets (expected_source per data dir of the office corpus):

* ``word`` (word/: maint-guide as .docx) and ``word_pdf`` (scan-text/: maint-guide.pdf);
* ``excel`` (excel/: .xlsx) and ``excel_csv`` (scan-text/: the CSVs);
* ``slides`` (slides/: debian-faq as .pptx), ``html`` (html/: as .html) and ``faq_pdf`` (debian-faq.pdf);
* ``ocr`` (scan-text/, scan-300/, scan-200/, scan-degraded/: pdf/debian-reference.pdf, same page IDs).

A needle that is in no unit, or a keyword not in the resolved unit, is reported; the files are
written only when every needle is found.
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "real" / "formats"

# (query, expected keywords, paraphrased, needle: a phrase in the answer's unit)
WORD = [
    (
        "パッケージを作り始める前に入れておくべき、いちばん大事な開発用パッケージは？",
        ["build-essential"],
        True,
        "開発用システムにインストールする一番重要なパッケージは、build-essential",
    ),
    (
        "追加のシンボリックリンクをパッケージに含めたいとき、どのファイルに書いてどのコマンドで入れますか？",
        ["package.links", "dh_link"],
        True,
        "package.links ファイル中にリストすることで dh_link",
    ),
    (
        "package.default ファイルはどこにインストールされますか？",
        ["/etc/default/package"],
        False,
        "will be installed as /etc/default/package",
    ),
    (
        "自動で作られるファイルの変更をパッチに入れないよう dpkg-source に指示するオプションは？",
        ["extend-diff-ignore"],
        True,
        "--extend-diff-ignore オプション引数に Perl 正規表現",
    ),
    (
        "quilt を Debian パッケージ作成用に使うためのエリアスの名前は何ですか？",
        ["dquilt"],
        False,
        "Debian パッケージ作成用のエリアス dquilt",
    ),
    (
        "gentoo-0.9.12.tar.gz として提供される場合のパッケージ名とアップストリームバージョンは？",
        ["gentoo", "0.9.12"],
        False,
        "パッケージ名は gentoo で アップストリームバージョンは 0.9.12",
    ),
    (
        "作業に使う自分のメールアドレスと氏名は、どの環境変数で各種ツールに伝えますか？",
        ["DEBEMAIL", "DEBFULLNAME"],
        True,
        "$DEBEMAIL と $DEBFULLNAME を設定して",
    ),
    ("pbuilder 実行の加速に使うツールは何ですか？", ["cowbuilder"], False, "cowbuilder = pbuilder 実行の加速"),
    (
        "見本として同梱したいファイルを並べておくと、それらを入れてくれる debhelper のコマンドは？",
        ["dh_installexamples"],
        True,
        "dh_installexamples(1)コマンドはこのディレクトリーに列挙されたファイル",
    ),
]
FAQ = [
    (
        "Debian にはフリーの Flash 動画の再生ソフトとして何が入っていますか？",
        ["gnash", "swfdec"],
        True,
        "gnash と swfdec を両方収録",
    ),
    (
        "いま動いているカーネルを消そうとしていないかを確かめてくれるのは何ですか？",
        ["prerm"],
        True,
        "linux-image-NNN.prerm スクリプトは現在実行中のカーネル",
    ),
    (
        "Debian プロジェクトは誰によって何年に創設されましたか？",
        ["Ian Murdock", "1993"],
        False,
        "Ian Murdock さんによって 1993 年に創設",
    ),
    (
        "ミラーを提供したい場合はどこに連絡すればよいですか？",
        ["debian-admin@lists.debian.org"],
        False,
        "<debian-admin@lists.debian.org> に連絡",
    ),
    (
        "Debian のカーネル周りを詳しく説明した資料は何という名前ですか？",
        ["Kernel Handbook"],
        True,
        "詳細な情報が Debian Linux Kernel Handbook で保守",
    ),
    (
        "ファイル名からそれを含むパッケージを探すのに使う Contents ファイルはアーカイブのどこにありますか？",
        ["Contents-ARCH.gz"],
        False,
        "The files Contents-ARCH.gz (where ARCH represents",
    ),
    (
        "既定の起動の仕組みが切り替わってから、それを最初に標準にしたリリースはどれですか？",
        ["jessie"],
        True,
        'Debian 8 "jessie" in April 2015',
    ),
    ("Linux は元々どの PC 向けに設計されましたか？", ["386"], False, "386 (以上) の PC 向けに設計"),
    (
        "FSF は Debian のシステムをどう呼ぶように求めていますか？",
        ["Debian GNU/Linux"],
        True,
        "FSF は私達のシステムを「Debian GNU/Linux」と呼ぶようにはっきりと要求",
    ),
]
# Excel: the row's subject by name, never a column's name; (query, keywords, paraphrased, (file stem, needle))
EXCEL = [
    ("アイスランドを表すアルファベット3文字の国コードは？", ["ISL"], True, ("countries", "ISL")),
    ("イラクの英語での正式な国名を教えてください。", ["Republic of Iraq"], False, ("countries", "IRQ")),
    ("アフガニスタンを表す2文字の国コードは？", ["AF"], False, ("countries", "AFG")),
    ("アルーバの国コードを教えてください。", ["ABW"], True, ("countries", "ABW")),
    ("ニュージーランドは ISO ではどう表されますか？", ["NZ", "NZL"], True, ("countries", "NZL")),
    ("アラブ首長国連邦で使われているお金を表す記号は？", ["AED"], True, ("currencies", "AED")),
    ("アフガニスタンの通貨の名前は？", ["アフガニ"], False, ("currencies", "AFN")),
    ("日本円の通貨コードと番号は？", ["JPY", "392"], False, ("currencies", "JPY")),
    ("ブラジルのお金は英語で何と呼ばれますか？", ["Brazilian Real"], True, ("currencies", "BRL")),
]
OCR = [
    (
        "どのユーザーのシェルプロンプトからでも root のシェルを得るには何と入力しますか？",
        ["su -l"],
        False,
        "どのユーザーシェルプロンプトからでも",
    ),
    ("ログインしたシェルを終わらせるキー操作は何ですか？", ["Ctrl-D"], True, "Ctrl-D、つまり left-Ctrl-key と d-key"),
    (
        "デフォルトの Debian システムで切り替え可能な文字コンソールはいくつありますか？",
        ["6"],
        False,
        "6 つの切り替え可能な VT100",
    ),
    ("画面表示が崩れたとき、画面を消して戻すのに打つコマンドは？", ["clear"], True, "とすればスクリーンが消去できます"),
    (
        "テキストモードの WWW ブラウザーとして挙げられているのは何ですか？",
        ["w3m"],
        False,
        "テキストモード WWW ブラウザー",
    ),
    (
        "Debian のよくある質問集が入っている文書パッケージはどれですか？",
        ["doc-debian"],
        True,
        "Debian プロジェクトの文書、(Debian FAQ) 他",
    ),
    (
        "root アカウントからファイルの所有者を変更するのに使うコマンドは？",
        ["chown"],
        False,
        "を使用することでファイルの所有者を変更",
    ),
    (
        "利用者ごとのグループ方式を有効にするため ~/.bashrc に書く設定は？",
        ["umask 002"],
        True,
        "と書いて UPG を有効にしましょう",
    ),
    (
        "モデムの設定をしたりどこにでも電話したりするにはどのグループに所属する必要がありますか？",
        ["dialout"],
        False,
        "dialout グループに所属",
    ),
    (
        "一般ユーザーそれぞれの個人用フォルダーが置かれる場所は？",
        ["/home/"],
        True,
        "全ての非特権ユーザーのホームディレクトリー",
    ),
]


def norm(text: str) -> str:
    """NFKC, lower case, no spaces, no Markdown marks (HTML is read as Markdown), straight quotes."""
    text = "".join(unicodedata.normalize("NFKC", text).lower().split()).replace("”", '"').replace("“", '"')
    return text.translate(str.maketrans("", "", "`*<>_\\"))


def units(folder: Path, names: tuple[str, ...]) -> dict[str, str]:
    """{source ID: text} of the files ``names`` (globs) under a data dir, read as a sync reads them
    (app.ingestion.reading.read_units; only text PDFs here: the scans share the text PDF's page IDs)."""
    from app.config import Settings
    from app.ingestion.reading import read_units

    texts: dict[str, str] = {}
    for pattern in names:
        for path in sorted(folder.glob(pattern)):
            for text, source, _ in read_units(path, Settings())[0]:
                texts[source] = texts.get(source, "") + "\n" + text
    return texts


def raw_html(folder: Path, pattern: str) -> dict[str, str]:
    """{file name: text of the whole page} (tags removed): where a needle the reader lost is."""
    import re
    from html import unescape

    return {p.name: unescape(re.sub(r"<[^>]+>", "", p.read_text(encoding="utf-8"))) for p in folder.glob(pattern)}


def resolve(questions, texts: dict[str, str], where: str, problems: list[str], fallback=None) -> list[dict]:
    """The questions with their expected source in ``texts``; a needle found only in ``fallback``
    (whole pages) is expected at the page's own source ID and reported: the reader lost it."""
    out = []
    for query, keywords, paraphrased, needle in questions:
        stem = None
        if isinstance(needle, tuple):
            stem, needle = needle
        if stem is None:
            found = [s for s, t in texts.items() if norm(needle) in norm(t)]
        else:  # a row: one of its cells is the needle
            found = [
                s
                for s, t in texts.items()
                if s.startswith(stem + ".") and any(line.rsplit(":", 1)[-1] == needle for line in t.split("\n"))
            ]
        if not found and fallback:
            found = [s for s, t in fallback.items() if norm(needle) in norm(t)]
            if found:
                print(f"note: {where}: {found[0]}: the reader lost {needle!r} ({query})", file=sys.stderr)
                texts = {**texts, found[0]: texts.get(found[0], "")}
        if not found:
            problems.append(f"{where}: needle not found: {needle!r} ({query})")
            continue
        source = found[0]
        lost = [k for k in keywords if norm(k) not in norm(texts[source])]
        if lost:
            print(f"note: {where}: {source}: keywords {lost} not in its text ({query})", file=sys.stderr)
        out.append(
            {"query": query, "expected_source": source, "expected_keywords": keywords, "paraphrased": paraphrased}
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / ".cache" / "real-corpus-office")
    args = parser.parse_args(argv)
    c = args.corpus
    problems: list[str] = []
    sets = {
        "word": resolve(WORD, units(c / "word", ("docs/maint-guide/*.docx",)), "word", problems),
        "word_pdf": resolve(WORD, units(c / "scan-text", ("pdf/maint-guide.pdf",)), "word_pdf", problems),
        "excel": resolve(EXCEL, units(c / "excel", ("csv/*.xlsx",)), "excel", problems),
        "excel_csv": resolve(EXCEL, units(c / "scan-text", ("csv/*.csv",)), "excel_csv", problems),
        "slides": resolve(FAQ, units(c / "slides", ("docs/debian-faq/*.pptx",)), "slides", problems),
        "html": resolve(
            FAQ,
            units(c / "html", ("docs/debian-faq/*.html",)),
            "html",
            problems,
            raw_html(c / "html" / "docs" / "debian-faq", "*.html"),
        ),
        "faq_pdf": resolve(FAQ, units(c / "scan-text", ("pdf/debian-faq.pdf",)), "faq_pdf", problems),
        "ocr": resolve(OCR, units(c / "scan-text", ("pdf/debian-reference.pdf",)), "ocr", problems),
    }
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    for name, questions in sets.items():
        (OUT / f"{name}_questions.json").write_text(
            json.dumps(questions, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        print(f"{name}: {len(questions)} questions, {sum(q['paraphrased'] for q in questions)} paraphrased")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
