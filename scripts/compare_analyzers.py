"""Compare the Japanese morphological analyzers the graph's extractor could use (README "Why SudachiPy").

On the PDF text of a corpus (default: the real corpus of ``make real-corpus``), for each analyzer:
characters per second with each word's part of speech read (best of 3; Janome once), the katakana
words (runs of 3+ katakana) it splits, and those it cuts in the middle of a word (a one-letter piece,
or a piece starting with ー or a small kana), and the memory its loading takes.

fugashi and Janome are not requirements of the app; install them first, e.g. into a folder:
    pip install --target /tmp/morph fugashi unidic-lite janome
    PYTHONPATH=/tmp/morph .venv/bin/python scripts/compare_analyzers.py
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KATAKANA_RUN = re.compile(r"[ァ-ヺー]{3,}")
WORD_INNER = tuple("ーァィゥェォッャュョヮ")  # a word never starts with these
ANALYZERS = ("sudachipy", "fugashi", "janome")
PAGE_CHARS = 20_000  # a page longer than this (a table dump) is cut: Janome slows down on huge inputs


def load(name: str) -> Callable[[str], list[tuple[str, str]]]:
    """A function text → [(surface, part of speech)] for the analyzer ``name``."""
    if name == "sudachipy":
        from sudachipy import Dictionary, SplitMode

        tokenizer = Dictionary(dict="core").create(mode=SplitMode.C)
        return lambda text: [(m.surface(), m.part_of_speech()[0]) for m in tokenizer.tokenize(text)]
    if name == "fugashi":
        import fugashi

        tagger = fugashi.Tagger()
        return lambda text: [(w.surface, w.feature.pos1) for w in tagger(text)]
    from janome.tokenizer import Tokenizer

    janome = Tokenizer()
    return lambda text: [(t.surface, t.part_of_speech.split(",")[0]) for t in janome.tokenize(text)]


def boundaries(text: str, words: list[str]) -> set[int]:
    """Character offsets in ``text`` where a word starts or ends."""
    out, pos = set(), 0
    for word in words:
        at = text.find(word, pos)
        if at < 0:
            continue
        out.update((at, at + len(word)))
        pos = at + len(word)
    return out


def katakana_cuts(text: str, words: list[str]) -> tuple[int, int, int]:
    """(runs, runs split, runs cut mid-word) of the katakana runs of ``text``; runs that begin with ー or a
    small kana (the PDF's text lost a letter there) are left out."""
    cuts_at = boundaries(text, words)
    runs = split = broken = 0
    for match in KATAKANA_RUN.finditer(text):
        if match.group()[0] in WORD_INNER:
            continue
        runs += 1
        start, end = match.span()
        inner = sorted(x for x in cuts_at if start < x < end)
        if not inner:
            continue
        split += 1
        edges = [start, *inner, end]
        pieces = [text[edges[i] : edges[i + 1]] for i in range(len(edges) - 1)]
        broken += any(len(p) == 1 or p[0] in WORD_INNER for p in pieces)
    return runs, split, broken


def measure(name: str, pages: list[str]) -> dict:
    """Speed, katakana splits and load memory of one analyzer on ``pages``."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    analyze = load(name)
    analyze("テスト")
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    best, tokens = float("inf"), []
    for _ in range(1 if name == "janome" else 3):
        start = time.perf_counter()
        tokens = [analyze(page) for page in pages]
        best = min(best, time.perf_counter() - start)
    totals = [katakana_cuts(page, [w for w, _ in toks]) for page, toks in zip(pages, tokens)]
    chars = sum(map(len, pages))
    return {
        "analyzer": name,
        "chars": chars,
        "chars_per_s": round(chars / best),
        "rss_mb_after_load": round((loaded - before) / 1024, 1),
        "katakana_runs": sum(t[0] for t in totals),
        "katakana_split": sum(t[1] for t in totals),
        "katakana_cut_mid_word": sum(t[2] for t in totals),
    }


def main(argv: list[str] | None = None) -> int:
    """Print one JSON line per analyzer."""
    from app.formats.pdf import read_pdf_pages

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf-dir", type=Path, default=ROOT / ".cache" / "real-corpus" / "pdf")
    parser.add_argument("--analyzers", default=",".join(ANALYZERS))
    args = parser.parse_args(argv)
    files = sorted(args.pdf_dir.glob("*.pdf"))
    if not files:
        parser.error(f"no PDF in {args.pdf_dir} (run `make real-corpus`, or give --pdf-dir)")
    names = [n.strip() for n in args.analyzers.split(",") if n.strip()]
    if len(names) > 1:  # one process each, so that each one's memory is its own
        for name in names:
            subprocess.run([sys.executable, __file__, "--pdf-dir", str(args.pdf_dir), "--analyzers", name], check=False)
        return 0
    pages = [unicodedata.normalize("NFKC", text)[:PAGE_CHARS] for f in files for text in read_pdf_pages(f)]
    try:
        print(json.dumps(measure(names[0], pages), ensure_ascii=False), flush=True)
    except ImportError as exc:
        print(f"{names[0]}: not installed ({exc}); see this script's docstring", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
