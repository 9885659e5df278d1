"""Character error rate and speed of the OCR on the office corpus's scans (issue 26, 'Done when').

Each scanned set of ``make real-corpus`` (``.cache/real-corpus-office/scan-*/pdf/debian-reference.pdf``:
image-only pages of the Debian Reference's real PDF) is OCR'd page by page exactly as a sync does it
(:meth:`app.formats.ocr.Ocr.pdf_pages`: PDFium renders at OCR_DPI, Tesseract with OCR_LANGS, one
thread), and compared with the text layer of the same pages (``scan-text/``, read as a sync reads a
text PDF). Both sides are NFKC-normalized and stripped of all white space (Japanese has no spaces;
Tesseract's line breaks and spacing are not errors a search sees); CER = edit distance / reference
characters, summed over the pages.

    python scripts/ocr_cer.py [--sets scan-300 scan-degraded] [--pages 16] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def normalize(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions: 1 each), two rows of DP."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def measure(scan: Path, reference: list[str], pages: int, ocr) -> dict:
    """OCR ``pages`` pages of ``scan``; their CER against ``reference`` and the seconds per page."""
    stamps = [time.monotonic()]
    texts = ocr.pdf_pages(
        scan, list(range(1, pages + 1)), pages, on_page=lambda done, total: stamps.append(time.monotonic())
    )
    seconds = [b - a for a, b in zip(stamps, stamps[1:])]
    per_page, edits, chars = [], 0, 0
    for number in range(1, pages + 1):
        ref, hyp = normalize(reference[number - 1]), normalize(texts.get(number, ""))
        distance = edit_distance(ref, hyp)
        edits, chars = edits + distance, chars + len(ref)
        per_page.append(
            {
                "page": number,
                "chars": len(ref),
                "edits": distance,
                "cer": distance / max(len(ref), 1),
                "seconds": seconds[number - 1],
            }
        )
    return {
        "pages": pages,
        "cer": edits / max(chars, 1),
        "median_page_cer": sorted(p["cer"] for p in per_page)[pages // 2],
        "worst_page": max(per_page, key=lambda p: p["cer"]),
        "seconds_per_page": sum(seconds) / pages,
        "per_page": per_page,
    }


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from app.config import Settings
    from app.formats.ocr import Ocr
    from app.formats.pdf import read_pdf_pages

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / ".cache" / "real-corpus-office")
    parser.add_argument("--sets", nargs="+", default=["scan-300", "scan-200", "scan-degraded"])
    parser.add_argument("--pages", type=int, default=0, help="the first N pages only (default: all)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    ocr = Ocr.from_settings(Settings())
    reference = read_pdf_pages(args.corpus / "scan-text" / "pdf" / "debian-reference.pdf")
    pages = args.pages or len(reference)
    results = {
        "ocr_langs": ocr.langs,
        "ocr_dpi": ocr.dpi,
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
        "sets": {},
    }
    for name in args.sets:
        result = measure(args.corpus / name / "pdf" / "debian-reference.pdf", reference, pages, ocr)
        results["sets"][name] = result
        print(
            f"{name}: CER {100 * result['cer']:.1f} % over {pages} pages (median page "
            f"{100 * result['median_page_cer']:.1f} %, worst p{result['worst_page']['page']} "
            f"{100 * result['worst_page']['cer']:.1f} %), {result['seconds_per_page']:.1f} s/page",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
