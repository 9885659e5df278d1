"""Assemble a real Japanese development corpus that nobody on this project wrote (`make real-corpus`).

Documents come from Debian's package archive (`apt-get download` + `dpkg-deb -x`), cached under
``.cache/real-corpus/`` (git-ignored); the result is a data dir the app ingests as it is:

* ``pdf/maint-guide.pdf`` — Debian New Maintainers' Guide, Japanese (maint-guide-ja)
* ``pdf/debian-faq.pdf`` — The Debian GNU/Linux FAQ, Japanese (debian-faq-ja)
* ``pdf/aptitude.pdf`` — the aptitude user's manual, Japanese, chapters 1–2 (aptitude-doc-ja)
* ``csv/countries.csv`` — ISO 3166-1 countries with their Japanese names (iso-codes: JSON + ja .mo)
* ``csv/currencies.csv`` — ISO 4217 currencies with their Japanese names (iso-codes)

``--large`` (into ``.cache/real-corpus-large``) adds, for measuring at about 1,000 pages (graph build):

* ``pdf/debian-reference.pdf`` — the Debian Reference, Japanese: the real PDF the package ships (272 pages)
* ``pdf/developers-reference.pdf`` — the Debian Developer's Reference, Japanese (its shipped PDF's
  text layer is unreadable, so it is laid out from the HTML like the others)

The packages ship HTML, not PDF: each chapter's text (headings, paragraphs, lists, tables,
code) is laid out on A4 pages with reportlab's Japanese CID font, one chapter per new page.
The held-out evaluation set (debian-edu-doc-*, distro-info-data) is never used here.

    python scripts/real_corpus.py [--out .cache/real-corpus]
"""

from __future__ import annotations

import argparse
import csv
import gettext
import json
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("maint-guide-ja", "debian-faq-ja", "aptitude-doc-ja", "iso-codes")
LARGE_PACKAGES = ("debian-reference-ja", "developers-reference-ja")
FORBIDDEN = ("debian-edu-doc", "distro-info-data")  # the held-out evaluation: never here
FONT = "HeiseiKakuGo-W5"


class TextBlocks(HTMLParser):
    """HTML → [(kind, text)] with kind 'h' (heading), 'p' (paragraph, list item, cell) or 'pre'."""

    BLOCK = {"p", "li", "dt", "dd", "td", "th", "pre", "h1", "h2", "h3", "h4", "title", "div"}
    SKIP = {"script", "style", "head"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []
        self.stack: list[str] = []
        self.buffer: list[str] = []
        self.skip = 0

    def _flush(self, tag: str) -> None:
        text = "".join(self.buffer)
        self.buffer = []
        if tag != "pre":
            text = " ".join(text.split())
        text = text.strip("\n")
        if text.strip():
            kind = "h" if tag in {"h1", "h2", "h3", "h4"} else "pre" if tag == "pre" else "p"
            self.blocks.append((kind, text))

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in self.BLOCK:
            if self.buffer and self.stack:
                self._flush(self.stack[-1])
            self.stack.append(tag)
        elif tag == "br":
            self.buffer.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCK and self.stack:
            current = self.stack.pop()
            self._flush(current)

    def handle_data(self, data):
        if not self.skip and self.stack and self.stack[-1] != "title":
            self.buffer.append(data)


def html_blocks(path: Path) -> list[tuple[str, str]]:
    parser = TextBlocks()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser.blocks


def width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrap(text: str, cells: int) -> list[str]:
    """Break a line into pieces of at most ``cells`` half-width cells."""
    lines, current = [], ""
    for ch in text:
        if width(current + ch) > cells:
            lines.append(current)
            current = ""
        current += ch
    return lines + [current] if current else lines


def write_pdf(target: Path, title: str, chapters: list[list[tuple[str, str]]]) -> int:
    """Lay out chapters (lists of blocks) on A4 pages; return the page count."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(UnicodeCIDFont(FONT))
    c = canvas.Canvas(str(target), pagesize=A4)
    c.setTitle(title)
    _, height = A4
    pages = 0
    for blocks in chapters:
        y = height - 60
        c.setFont(FONT, 10)
        for kind, text in blocks:
            size, cells, gap = (13, 70, 8) if kind == "h" else (10, 92, 4)
            lines = [part for raw in text.split("\n") for part in wrap(raw.rstrip(), cells)]
            for line in lines:
                if y < 60:
                    c.showPage()
                    pages += 1
                    y = height - 60
                c.setFont(FONT, size)
                c.drawString(50, y, line)
                y -= size + 4
            y -= gap
        c.showPage()
        pages += 1
    c.save()
    return pages


def download(packages: tuple[str, ...], debs: Path, tree: Path) -> None:
    debs.mkdir(parents=True, exist_ok=True)
    for name in packages:
        if any(bad in name for bad in FORBIDDEN):
            raise SystemExit(f"refusing {name}: it belongs to the held-out evaluation")
        if not list(debs.glob(f"{name}_*.deb")):
            print(f"downloading {name} …", file=sys.stderr)
            done = subprocess.run(["apt-get", "download", name], cwd=debs, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(
                    f"apt-get download {name} failed: {done.stderr.strip().splitlines()[-1:]}"
                    " (run `apt-get update` first?)"
                )
        deb = sorted(debs.glob(f"{name}_*.deb"))[-1]
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)


def chapters(folder: Path, names: list[str]) -> list[list[tuple[str, str]]]:
    return [html_blocks(folder / name) for name in names if (folder / name).is_file()]


def iso_table(tree: Path, standard: str, key: str, columns: list[str]) -> list[dict]:
    """Rows of an iso-codes JSON table plus ``name_ja`` from its Japanese message catalogue."""
    data = json.loads((tree / f"usr/share/iso-codes/json/{standard}.json").read_text(encoding="utf-8"))[key]
    mo = tree / f"usr/share/locale/ja/LC_MESSAGES/{standard}.mo"
    ja = gettext.GNUTranslations(open(mo, "rb")) if mo.is_file() else gettext.NullTranslations()
    rows = []
    for item in data:
        row = {column: item.get(column, "") for column in columns}
        translated = ja.gettext(item["name"])
        row["name_ja"] = translated if translated != item["name"] else ""
        rows.append(row)
    return rows


def write_csv(target: Path, rows: list[dict]) -> None:
    with open(target, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def build(out: Path, large: bool = False) -> None:
    cache = out.parent / f"{out.name}-src"
    tree = cache / "tree"
    download(PACKAGES + (LARGE_PACKAGES if large else ()), cache / "debs", tree)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        staging = Path(tmp)
        (staging / "pdf").mkdir()
        (staging / "csv").mkdir()
        mg = tree / "usr/share/doc/maint-guide-ja/html"
        faq = tree / "usr/share/doc/debian/FAQ/ja"
        apt = tree / "usr/share/doc/aptitude/html/ja"
        docs = {
            "maint-guide.pdf": (
                "Debian 新メンテナーガイド",
                chapters(
                    mg,
                    [
                        "start.ja.html",
                        "first.ja.html",
                        "modify.ja.html",
                        "dreq.ja.html",
                        "dother.ja.html",
                        "build.ja.html",
                        "checkit.ja.html",
                        "upload.ja.html",
                        "update.ja.html",
                    ],
                ),
            ),
            "debian-faq.pdf": (
                "Debian GNU/Linux FAQ",
                chapters(
                    faq,
                    [
                        "basic-defs.ja.html",
                        "getting-debian.ja.html",
                        "choosing.ja.html",
                        "compatibility.ja.html",
                        "software.ja.html",
                        "ftparchives.ja.html",
                        "pkg-basics.ja.html",
                        "pkgtools.ja.html",
                        "uptodate.ja.html",
                        "kernel.ja.html",
                        "customizing.ja.html",
                        "support.ja.html",
                        "contributing.ja.html",
                        "redistributing.ja.html",
                    ],
                ),
            ),
            "aptitude.pdf": (
                "aptitude ユーザマニュアル",
                chapters(apt, sorted(p.name for p in apt.glob("ch0[12]*.html"))),
            ),
        }
        if large:
            dev = tree / "usr/share/developers-reference/ja"
            docs["developers-reference.pdf"] = (
                "Debian 開発者リファレンス",
                chapters(
                    dev,
                    [
                        "scope.html",
                        "new-maintainer.html",
                        "developer-duties.html",
                        "resources.html",
                        "pkgs.html",
                        "best-pkging-practices.html",
                        "beyond-pkging.html",
                        "l10n.html",
                        "tools.html",
                    ],
                ),
            )
            shutil.copy(
                tree / "usr/share/debian-reference/debian-reference.ja.pdf", staging / "pdf" / "debian-reference.pdf"
            )
            print("pdf/debian-reference.pdf: the package's own PDF", file=sys.stderr)
        for name, (title, parts) in docs.items():
            pages = write_pdf(staging / "pdf" / name, title, parts)
            print(f"pdf/{name}: {pages} pages", file=sys.stderr)
        write_csv(
            staging / "csv" / "countries.csv",
            iso_table(tree, "iso_3166-1", "3166-1", ["alpha_2", "alpha_3", "numeric", "name", "official_name"]),
        )
        write_csv(
            staging / "csv" / "currencies.csv", iso_table(tree, "iso_4217", "4217", ["alpha_3", "numeric", "name"])
        )
        if out.exists():
            shutil.rmtree(out)
        shutil.move(str(staging), str(out))
    print(f"real corpus ready in {out}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out", type=Path, default=None, help="default: .cache/real-corpus (.cache/real-corpus-large with --large)"
    )
    parser.add_argument(
        "--large",
        action="store_true",
        help="add the Debian Reference and Developer's Reference (about 1,000 pages and rows in all)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if it exists")
    args = parser.parse_args(argv)
    args.out = args.out or ROOT / ".cache" / ("real-corpus-large" if args.large else "real-corpus")
    if (args.out / "pdf").is_dir() and not args.force:
        print(f"real corpus already in {args.out} (--force rebuilds it)", file=sys.stderr)
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    build(args.out, large=args.large)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
