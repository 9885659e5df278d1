"""Two real releases of one Japanese manual, as versions in one folder (issue 42's development set).

Chapter 2 (Debian package management) of the Debian Reference in Japanese, from Debian 11 "bullseye"
(debian-reference-ja 2.78, the text says 第2.77版, 2021-01-10) and Debian 13 "trixie" (2.127, 2025-04-30):
the same chapter, revised between the releases (the stable release it assumes, package counts, the
sources list, non-free-firmware, package sizes and popcon figures …). Downloaded with ``apt-get
download`` through a private apt configuration (the host's sources are left alone), cached under
``.cache/versions-corpus/`` (git-ignored); each file keeps the date of the package's text as its
modification time.

    python scripts/versions_corpus.py [--out .cache/versions-corpus/data]
    python -m app.evaluate --data-dir .cache/versions-corpus/data --questions data/versions/questions.json \\
        --json on.json --per-question                      # and again with VERSION_FAMILIES=0 -> off.json
    python scripts/versions_corpus.py --report on.json off.json   # the table of docs/evaluation.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "versions-corpus"
MIRROR = "http://deb.debian.org/debian"
# release -> (suite, package version, where the package keeps its text)
RELEASES = {
    "2.78": ("bullseye", "usr/share/debian-reference/debian-reference.ja.txt.gz"),
    "2.127": ("trixie", "usr/share/doc/debian-reference-common/docs/debian-reference.ja.txt.gz"),
}
CHAPTER = re.compile(r"^第2章 Debian パッケージ管理$", re.MULTILINE)
NEXT_CHAPTER = re.compile(r"^第3章", re.MULTILINE)
HEADING = re.compile(r"^(2(?:\.\d+)+)\. \S.*$", re.MULTILINE)


def apt_options(root: Path) -> list[str]:
    """A private apt configuration over bullseye and trixie (nothing of the host's is changed)."""
    (root / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    sources = root / "sources.list"
    sources.write_text("".join(f"deb {MIRROR} {suite} main\n" for suite, _ in RELEASES.values()), encoding="utf-8")
    return [
        f"-o=Dir::Etc::sourcelist={sources}",
        "-o=Dir::Etc::sourceparts=-",
        f"-o=Dir::State::Lists={root / 'lists'}",
        f"-o=Dir::Cache={root / 'cache'}",
    ]


def download(debs: Path) -> None:
    """debian-reference-ja of each release into ``debs`` (skipped when already there)."""
    missing = [v for v in RELEASES if not (debs / f"debian-reference-ja_{v}_all.deb").is_file()]
    if not missing:
        return
    debs.mkdir(parents=True, exist_ok=True)
    options = apt_options(CACHE / "apt")
    subprocess.run(["apt-get", *options, "update"], check=True, capture_output=True)
    subprocess.run(
        ["apt-get", *options, "download", *(f"debian-reference-ja={v}" for v in missing)], cwd=debs, check=True
    )


def chapter(text: str) -> str:
    """The title block (the edition and its date) and chapter 2 of the manual's text."""
    start, end = CHAPTER.search(text), NEXT_CHAPTER.search(text, CHAPTER.search(text).end())
    head = text[: text.index("概要")].strip()
    body = text[start.start() : end.start()].strip()
    # its numbered headings as Markdown's, so that each section is a source of its own
    body = HEADING.sub(lambda m: "#" * (m.group(1).count(".") + 1) + " " + m.group(0), body)
    return f"{head}\n\n# {body}\n"


def build(out: Path) -> list[Path]:
    """Write ``<out>/docs/debian-reference/debian-reference-ch02_v<version>.md`` for each release (the
    manual's text, its numbered headings marked as Markdown's)."""
    debs = CACHE / "debs"
    download(debs)
    folder = out / "docs" / "debian-reference"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for version, (_, inner) in RELEASES.items():
        with tempfile.TemporaryDirectory() as tree:
            subprocess.run(["dpkg-deb", "-x", str(debs / f"debian-reference-ja_{version}_all.deb"), tree], check=True)
            packed = Path(tree) / inner
            text = gzip.decompress(packed.read_bytes()).decode("utf-8")
            mtime = packed.stat().st_mtime
        target = folder / f"debian-reference-ch02_v{version}.md"
        target.write_text(chapter(text), encoding="utf-8")
        os.utime(target, (mtime, mtime))
        written.append(target)
    return written


CURRENT, PAST = "_v2.127.md", "_v2.78.md"


def summarize(results: list[dict], questions: list[dict]) -> dict[str, str]:
    """One row of the table: per group of questions (answer changed between the releases or not), the
    share of answers citing the current release, right for it, and stating the past release's value."""
    by_query = {q["query"]: q for q in questions}
    row = {}
    for name, changed in (("changed", True), ("same", False)):
        rows = [r for r in results if by_query[r["query"]]["changed"] is changed]
        cites = sum(any(CURRENT in s for s in r.get("cited_sources") or []) for r in rows)
        cites_past = sum(bool(r.get("cited_sources")) and all(PAST in s for s in r["cited_sources"]) for r in rows)
        right = sum(bool(r.get("exact_match")) for r in rows)
        row[name] = f"{cites}/{len(rows)} cite current, {cites_past} only past, {right}/{len(rows)} right"
        if changed:
            past = [by_query[r["query"]]["past_keywords"] for r in rows]
            stale = sum(
                bool(p) and all(k in (r.get("answer") or "") for k in p) and not r.get("exact_match")
                for r, p in zip(rows, past)
            )
            row[name] += f", {stale} the past value"
    return row


def report(paths: list[Path], questions: Path) -> None:
    """Print the summary of each evaluation JSON (``python -m app.evaluate --json``)."""
    items = json.loads(questions.read_text(encoding="utf-8"))
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        results = data.get("results") or data.get("per_question") or data
        print(path.name, summarize(results, items))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CACHE / "data")
    parser.add_argument("--report", nargs="+", type=Path, help="summarize these evaluation JSON files instead")
    parser.add_argument("--questions", type=Path, default=ROOT / "data" / "versions" / "questions.json")
    args = parser.parse_args()
    if args.report:
        report(args.report, args.questions)
        return 0
    for path in build(args.out):
        print(f"{path.relative_to(args.out)}: {path.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
