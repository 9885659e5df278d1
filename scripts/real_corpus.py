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

Then, unless ``--no-office`` (or ``--large``), the office part in ``.cache/real-corpus-office/``: real
Word, Excel and PowerPoint files that LibreOffice headless converts from the same sources, the
package's HTML pages, and scans of real PDF pages (:func:`build_office`; skipped with one line
without LibreOffice, Debian ``libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui``,
or without ``pdftoppm``, ``poppler-utils``). Converted once: an existing folder is kept (``--force``).
A rebuild gives the same text everywhere and the same bytes for the scans (seeded, dated); the files
LibreOffice writes carry the time of their conversion.

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
import os
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
            "debian-faq.pdf": ("Debian GNU/Linux FAQ", chapters(faq, list(FAQ_CHAPTERS))),
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


# --- the office part (issue 26, item 8): real Word, Excel, PowerPoint, HTML and scanned pages ---------

OFFICE_PACKAGES = ("maint-guide-ja", "debian-faq-ja", "iso-codes", "debian-reference-ja")
MAINT_GUIDE_CHAPTERS = (
    "start.ja.html",
    "first.ja.html",
    "modify.ja.html",
    "dreq.ja.html",
    "dother.ja.html",
    "build.ja.html",
    "checkit.ja.html",
    "upload.ja.html",
    "update.ja.html",
)
FAQ_CHAPTERS = (
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
)
SCAN_PAGES = (30, 45)  # pages of the Debian Reference's own PDF scanned (first, last): chapter 1, prose + listings
SCAN_SEED = 26  # the degraded set's rotation and noise
SLIDE_CHARS = 600  # a slide's body holds about this much text; the rest goes on a "(続き)" slide


def soffice() -> str | None:
    """LibreOffice's program (Debian: libreoffice-writer-nogui, -calc-nogui, -impress-nogui), or None."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def convert(program: str, sources: list[Path], target: str, outdir: Path, infilter: str | None = None) -> None:
    """LibreOffice headless converts ``sources`` to ``target`` (e.g. ``docx:MS Word 2007 XML``) into
    ``outdir``, with a profile of its own (a LibreOffice the user has open is not disturbed)."""
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        command = [program, f"-env:UserInstallation=file://{profile}", "--headless", "--convert-to", target]
        command += [f"--infilter={infilter}"] if infilter else []
        done = subprocess.run(
            command + ["--outdir", str(outdir)] + [str(s) for s in sources],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "TZ": "UTC"},
        )
    missing = [s.name for s in sources if not (outdir / f"{s.stem}.{target.split(':')[0]}").is_file()]
    if done.returncode != 0 or missing:
        raise SystemExit(f"LibreOffice could not convert {missing or sources}: {done.stderr.strip()[-300:]}")


def esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def slides_of(blocks: list[tuple[str, str]]) -> list[tuple[str, list[str], list[str]]]:
    """A chapter's blocks as slides ``(title, bullets, notes)``: a slide per heading (the blocks before
    the first one on the chapter's title slide), paragraphs as bullets, code (``pre``) in the speaker
    notes, a long section continued on "(続き)" slides."""
    slides: list[tuple[str, list[str], list[str]]] = []
    title, bullets, notes = "", [], []
    for kind, text in blocks + [("h", "")]:
        if kind == "h":
            if title or bullets:
                slides.append((title, bullets, notes))
            title, bullets, notes = text, [], []
        elif kind == "pre":
            notes.append(text)
        else:
            if bullets and sum(len(b) for b in bullets) + len(text) > SLIDE_CHARS:
                slides.append((title, bullets, notes))
                title, bullets, notes = (title if title.endswith("(続き)") else f"{title} (続き)"), [], []
            bullets.append(text)
    return slides


def write_deck(target: Path, slides: list[tuple[str, list[str], list[str]]]) -> None:
    """A deck of title-and-content slides (python-pptx's default template: real title and body
    placeholders, speaker notes) that Impress then opens and saves as its own .pptx: Impress imports
    no HTML, and a flat ODP without a master's placeholders comes out as plain text boxes."""
    from pptx import Presentation

    deck = Presentation()
    layout = deck.slide_layouts[1]  # Title and Content
    for title, bullets, notes in slides:
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = bullets[0] if bullets else ""
        for bullet in bullets[1:]:
            body.add_paragraph().text = bullet
        if notes:
            slide.notes_slide.notes_text_frame.text = "\n".join(notes)
    deck.save(str(target))


def countries_html(rows: list[dict], version: str) -> str:
    """The countries as an HTML table the way an office keeps such a list: a title block above the
    table and a two-row header whose first row is merged across its columns (Calc keeps both)."""
    cells = lambda values, tag="td": "".join(f"<{tag}>{esc(v)}</{tag}>" for v in values)  # noqa: E731
    body = "".join(
        "<tr>"
        + cells([r["alpha_2"], r["alpha_3"], r["numeric"], r["name"], r["official_name"], r["name_ja"]])
        + "</tr>"
        for r in rows
    )
    return (
        '<html><head><meta charset="utf-8"><title>国名コード一覧</title></head><body><table>'
        '<tr><td colspan="6">ISO 3166-1 国名コード一覧</td></tr>'
        f'<tr><td colspan="6">出典: Debian iso-codes {esc(version)}(日本語名は同梱の翻訳カタログ)</td></tr>'
        "<tr><td></td></tr>"
        '<tr><th colspan="3">コード</th><th colspan="3">国名</th></tr>'
        f"<tr>{cells(['2文字', '3文字', '数字', '英語名', '正式名称', '日本語名'], 'th')}</tr>"
        f"{body}</table></body></html>\n"
    )


def scan_pages(pdf: Path, folder: Path, program: str, dpi: int, pages: tuple[int, int]) -> list[Path]:
    """Pages ``pages`` of ``pdf`` rendered by poppler's pdftoppm at ``dpi`` in grayscale PNG."""
    folder.mkdir(parents=True, exist_ok=True)
    first, last = pages
    subprocess.run(
        [program, "-r", str(dpi), "-gray", "-png", "-f", str(first), "-l", str(last), str(pdf), str(folder / "p")],
        check=True,
        timeout=600,
    )
    return sorted(folder.glob("p-*.png"))


def degrade(image, rng, noise):
    """A page as a worn office scanner makes it: turned by up to ±1.5°, speckled (Gaussian noise,
    σ 18 grey levels), slightly blurred; the caller saves it as JPEG at quality 40."""
    import numpy as np
    from PIL import Image, ImageFilter

    angle = rng.uniform(0.5, 1.5) * (1 if rng.random() < 0.5 else -1)
    turned = image.convert("L").rotate(angle, resample=Image.BICUBIC, expand=False, fillcolor=255)
    noisy = np.asarray(turned, dtype=np.float32) + noise.normal(0.0, 18.0, (turned.height, turned.width))
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).filter(ImageFilter.GaussianBlur(0.6))


def image_pdf(target: Path, images: list, dpi: int, quality: int) -> None:
    """Pages that are images only (no text layer), as a scanner writes them: JPEG at ``quality``; dated
    2026-01-01, so the same pages give the same bytes (and content hash) on every build."""
    import time

    first, *rest = images
    date = time.gmtime(1767225600)
    first.save(
        target,
        "PDF",
        resolution=float(dpi),
        save_all=True,
        append_images=rest,
        quality=quality,
        creationDate=date,
        modDate=date,
    )


def build_office(base: Path, out: Path, cache: Path) -> None:
    """The office corpus in ``out``: each folder a data dir holding the base corpus with one document
    swapped for the same content in another format, so each format is measured against its original
    with the same neighbours:

    * ``word/``: ``maint-guide.pdf`` → ``docs/maint-guide/<chapter>.docx`` (Writer: HTML → Word)
    * ``excel/``: ``csv/*.csv`` → ``csv/countries.xlsx`` (Calc: an HTML table with a title block and a
      merged two-row header) and ``csv/currencies.xlsx`` (Calc: the CSV)
    * ``slides/``: ``debian-faq.pdf`` → ``docs/debian-faq/<chapter>.pptx`` (Impress: a slide per section)
    * ``html/``: ``debian-faq.pdf`` → ``docs/debian-faq/<chapter>.html`` (the package's own pages)
    * ``scan-text/``, ``scan-300/``, ``scan-200/``, ``scan-degraded/``: the base plus
      ``pdf/debian-reference.pdf``, pages SCAN_PAGES of the Debian Reference's real PDF: its text layer,
      and image-only scans (pdftoppm at 300 and 200 dpi; the 300-dpi pages turned, speckled, blurred
      and JPEG-compressed at quality 40; the clean scans at quality 90, as a scanner writes them).
    """
    program = soffice()
    if program is None:
        print(
            "office part skipped: LibreOffice is not installed "
            "(apt-get install libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui)",
            file=sys.stderr,
        )
        return
    pdftoppm = shutil.which("pdftoppm")
    if pdftoppm is None:
        print("office part skipped: pdftoppm is not installed (apt-get install poppler-utils)", file=sys.stderr)
        return
    import random

    import numpy as np

    tree = cache / "tree"
    download(OFFICE_PACKAGES, cache / "debs", tree)
    mg = tree / "usr/share/doc/maint-guide-ja/html"
    faq = tree / "usr/share/doc/debian/FAQ/ja"
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        staging, work = Path(tmp) / "out", Path(tmp) / "work"
        staging.mkdir()

        def variant(name: str, drop: tuple[str, ...]) -> Path:
            shutil.copytree(base, staging / name, ignore=lambda _, names: [n for n in names if n in drop])
            return staging / name

        word = variant("word", ("maint-guide.pdf",)) / "docs" / "maint-guide"
        convert(
            program,
            [mg / name for name in MAINT_GUIDE_CHAPTERS],
            "docx:MS Word 2007 XML",
            work / "docx",
            "HTML (StarWriter)",
        )
        word.mkdir(parents=True)
        for name in MAINT_GUIDE_CHAPTERS:
            stem = name.removesuffix(".ja.html")
            shutil.copy(work / "docx" / f"{Path(name).stem}.docx", word / f"{stem}.docx")
        print(f"word/: {len(MAINT_GUIDE_CHAPTERS)} .docx (maint-guide, LibreOffice Writer)", file=sys.stderr)

        excel = variant("excel", ("countries.csv", "currencies.csv")) / "csv"
        version = sorted((cache / "debs").glob("iso-codes_*.deb"))[-1].name.split("_")[1]
        countries = iso_table(tree, "iso_3166-1", "3166-1", ["alpha_2", "alpha_3", "numeric", "name", "official_name"])
        (work / "countries.html").write_text(countries_html(countries, version), encoding="utf-8")
        convert(program, [work / "countries.html"], "xlsx:Calc MS Excel 2007 XML", work / "xlsx", "HTML (StarCalc)")
        convert(
            program, [base / "csv" / "currencies.csv"], "xlsx:Calc MS Excel 2007 XML", work / "xlsx", "CSV:44,34,76,1"
        )
        for name in ("countries", "currencies"):
            shutil.copy(work / "xlsx" / f"{name}.xlsx", excel / f"{name}.xlsx")
        print(
            "excel/: countries.xlsx (title block, merged header), currencies.xlsx (LibreOffice Calc)", file=sys.stderr
        )

        slides = variant("slides", ("debian-faq.pdf",)) / "docs" / "debian-faq"
        decks = []
        (work / "deck").mkdir()
        for name in FAQ_CHAPTERS:
            decks.append(work / "deck" / f"{name.removesuffix('.ja.html')}.pptx")
            write_deck(decks[-1], slides_of(html_blocks(faq / name)))
        convert(program, decks, "pptx:Impress MS PowerPoint 2007 XML", work / "pptx")
        slides.mkdir(parents=True)
        for deck in decks:
            shutil.copy(work / "pptx" / f"{deck.stem}.pptx", slides / f"{deck.stem}.pptx")
        print(f"slides/: {len(decks)} .pptx (debian-faq, LibreOffice Impress)", file=sys.stderr)

        html = variant("html", ("debian-faq.pdf",)) / "docs" / "debian-faq"
        html.mkdir(parents=True)
        for name in FAQ_CHAPTERS:
            shutil.copy(faq / name, html / f"{name.removesuffix('.ja.html')}.html")
        print(f"html/: {len(FAQ_CHAPTERS)} .html (debian-faq, as shipped)", file=sys.stderr)

        from PIL import Image
        from pypdf import PdfReader, PdfWriter

        reference = tree / "usr/share/debian-reference/debian-reference.ja.pdf"
        first, last = SCAN_PAGES
        writer = PdfWriter()
        for number in range(first, last + 1):
            writer.add_page(PdfReader(reference).pages[number - 1])
        writer.add_metadata({"/Title": "Debian リファレンス"})
        text_pdf = work / "debian-reference.pdf"
        with open(text_pdf, "wb") as fh:
            writer.write(fh)
        variant("scan-text", ())
        shutil.copy(text_pdf, staging / "scan-text" / "pdf" / "debian-reference.pdf")
        rng = random.Random(SCAN_SEED)
        noise = np.random.default_rng(SCAN_SEED)
        for name, dpi in (("scan-300", 300), ("scan-200", 200), ("scan-degraded", 300)):
            pngs = scan_pages(text_pdf, work / name, pdftoppm, dpi, (1, last - first + 1))
            images = [Image.open(p) for p in pngs]
            quality = 90
            if name == "scan-degraded":
                images = [degrade(image, rng, noise) for image in images]
                quality = 40
            variant(name, ())
            image_pdf(staging / name / "pdf" / "debian-reference.pdf", images, dpi, quality)
            print(f"{name}/: debian-reference.pdf, {len(pngs)} image-only pages at {dpi} dpi", file=sys.stderr)
        if out.exists():
            shutil.rmtree(out)
        shutil.move(str(staging), str(out))
    print(f"office corpus ready in {out}", file=sys.stderr)


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
    parser.add_argument(
        "--no-office", action="store_true", help="skip the office part (<out>-office: Word, Excel, PowerPoint, scans)"
    )
    args = parser.parse_args(argv)
    args.out = args.out or ROOT / ".cache" / ("real-corpus-large" if args.large else "real-corpus")
    if (args.out / "pdf").is_dir() and not args.force:
        print(f"real corpus already in {args.out} (--force rebuilds it)", file=sys.stderr)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        build(args.out, large=args.large)
    office = args.out.parent / f"{args.out.name}-office"
    if args.large or args.no_office:
        return 0
    if (office / "word").is_dir() and not args.force:
        print(f"office corpus already in {office} (--force rebuilds it)", file=sys.stderr)
        return 0
    build_office(args.out, office, args.out.parent / f"{args.out.name}-src")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
