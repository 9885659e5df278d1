"""Ingest (§4.7, §14.1): PDFs and CSVs under the data dir → chunks → embeddings → pgvector.

PDFs are read page by page (source ``file.pdf:p1``) and split by paragraph;
CSV rows become ``column:value`` lines (source ``file.csv:r1``, 1-based data
rows) split with LangChain's RecursiveCharacterTextSplitter. ``make ingest`` is
a sync (app.sync): unchanged files are skipped, changed ones replaced in one
transaction, deleted ones purged. A bad file is skipped with a warning; the rest go in.
"""
from __future__ import annotations

import argparse
import logging
import unicodedata
from pathlib import Path
from typing import Any, Sequence


from app.chunking import split_by_structure
from app.config import Settings, get_settings
from app.errors import DataSourceError

log = logging.getLogger(__name__)

CSV_ENCODINGS = ("utf-8-sig", "cp932")  # UTF-8 (with or without BOM), then Shift_JIS/CP932


def _files(directory: Path, suffix: str) -> list[Path]:
    """Files in ``directory`` (not recursive) whose suffix matches, case-insensitively, sorted."""
    if not directory.is_dir():
        raise FileNotFoundError(f"directory not found: {directory}")
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix.lower() == suffix)


def _display_width(line: str) -> int:
    """Width in half-width cells: CJK full-width characters count 2."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


_SENTENCE_END = tuple("。！？!?」』）)：:")


def clean_pdf_text(text: str) -> str:
    """Undo PDF line wrapping: join wrapped lines, keep paragraph and heading breaks.

    A line is taken as wrapped when it is nearly as wide as the widest line of
    its block and does not end a sentence; it is then joined to the next line
    directly (Japanese) or with a space (between Latin words). Other line
    breaks stay; blank lines stay as paragraph breaks.
    """
    blocks = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line.strip() for line in block.split("\n") if line.strip()]
        if not lines:
            continue
        full = max(_display_width(line) for line in lines)
        out = lines[0]
        for prev, line in zip(lines, lines[1:]):
            wrapped = _display_width(prev) >= 0.8 * full and not prev.endswith(_SENTENCE_END)
            if not wrapped:
                out += "\n" + line
            elif prev[-1].isascii() and prev[-1].isalnum() and line[0].isascii() and line[0].isalnum():
                out += " " + line
            else:
                out += line
        blocks.append(out)
    return "\n\n".join(blocks)


def read_pdf_pages(path: Path) -> list[str]:
    """Return the text of each page of ``path``; DataSourceError if it is corrupt or encrypted."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise DataSourceError(f"{path.name}: encrypted PDF (decrypt it first)")
        return [page.extract_text() or "" for page in reader.pages]
    except DataSourceError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise DataSourceError(f"{path.name}: unreadable PDF ({exc})") from exc


def pdf_units(path: Path) -> list[tuple[str, str]]:
    """One PDF's pages as ``[(text, "file.pdf:p1"), ...]`` (pages without text left out).

    DataSourceError if the file is corrupt or encrypted.
    """
    pages = (clean_pdf_text(text) for text in read_pdf_pages(path))
    return [(text, f"{path.name}:p{number}") for number, text in enumerate(pages, start=1) if text]


def _load(directory: Path, suffix: str, units) -> list[tuple[str, str]]:
    """Units of every file in ``directory``; unreadable files are skipped with a warning."""
    out: list[tuple[str, str]] = []
    for path in _files(directory, suffix):
        try:
            out.extend(units(path))
        except DataSourceError as exc:
            log.warning("skipped %s", exc)
    return out


def load_pdfs(pdf_dir: str | Path) -> list[tuple[str, str]]:
    """Read every PDF in ``pdf_dir`` page by page: ``[(text, "file.pdf:p1"), ...]``.

    Pages without text are left out. A corrupt or encrypted file is skipped with
    a warning. FileNotFoundError if the folder does not exist.
    """
    return _load(Path(pdf_dir), ".pdf", pdf_units)


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """Read a CSV as a list of {column: value} dicts, decoding UTF-8 (BOM or not) or CP932.

    Empty cells are left out. An empty file gives ``[]``. DataSourceError if the
    file is in neither encoding or is not parseable.
    """
    import pandas as pd

    raw = path.read_bytes()
    if not raw.strip():
        return []
    for encoding in CSV_ENCODINGS:
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        raise DataSourceError(f"{path.name}: not UTF-8 or Shift_JIS/CP932 text")
    import io

    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataSourceError(f"{path.name}: unreadable CSV ({exc})") from exc
    rows = []
    for record in frame.to_dict(orient="records"):
        rows.append({str(k).strip(): str(v).strip() for k, v in record.items() if str(v).strip()})
    return rows


def row_to_text(row: dict[str, str]) -> str:
    """Render a CSV row as ``column:value`` lines (§4.7)."""
    return "\n".join(f"{column}:{value}" for column, value in row.items())


def csv_units(path: Path) -> list[tuple[str, str]]:
    """One CSV's rows as ``[("col:val\\n...", "file.csv:r1"), ...]``.

    DataSourceError if it cannot be decoded or parsed, or has no data rows.
    """
    records = read_csv_rows(path)
    if not records:
        raise DataSourceError(f"{path.name}: empty CSV (no data rows)")
    rows = ((row_to_text(record), number) for number, record in enumerate(records, start=1))
    return [(text, f"{path.name}:r{number}") for text, number in rows if text]


def load_csvs(csv_dir: str | Path) -> list[tuple[str, str]]:
    """Read every CSV in ``csv_dir`` row by row: ``[("col:val\\n...", "file.csv:r1"), ...]``.

    An empty or unreadable file is skipped with a warning. FileNotFoundError if
    the folder does not exist.
    """
    return _load(Path(csv_dir), ".csv", csv_units)


def csv_splitter(chunk_size: int, chunk_overlap: int):
    """LangChain's RecursiveCharacterTextSplitter with Japanese sentence and clause separators."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=min(chunk_overlap, chunk_size // 2),
        separators=["\n\n", "\n", "。", "、", " ", ""],
        keep_separator="end",
    )


def count_truncated(texts: Sequence[str], embeddings: Any) -> tuple[int, int]:
    """How many texts exceed the embedding model's token limit, and that limit (0, 0 if unknown)."""
    client = getattr(embeddings, "_client", None)
    tokenizer, limit = getattr(client, "tokenizer", None), getattr(client, "max_seq_length", None)
    if tokenizer is None or not limit:
        return 0, 0
    lengths = [len(ids) for ids in tokenizer(list(texts), add_special_tokens=True)["input_ids"]]
    return sum(n > limit for n in lengths), int(limit)


def warn_truncated(chunks: Sequence[str], embeddings: Any) -> None:
    """One warning if chunks exceed the embedding model's token limit (their tail is not embedded)."""
    truncated, limit = count_truncated(chunks, embeddings)
    if truncated:
        log.warning("%d of %d new chunks are longer than the embedding model's %d-token limit; their tail is "
                    "not embedded (keyword search and the LLM still see it). A smaller CHUNK_SIZE avoids this.",
                    truncated, len(chunks), limit)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m app.ingest [--data-dir DIR] [--dry-run]``; prints a one-line summary."""
    from app.cli import run

    parser = argparse.ArgumentParser(prog="python -m app.ingest", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="folder with pdf/ and csv/ (default: DATA_DIR or ./data)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be added/updated/removed; change nothing")
    parser.add_argument("--allow-empty", action="store_true",
                        help="let an empty data dir remove every stored document")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)

    def body() -> int:
        from app.store import RagStore

        settings = get_settings()
        data_dir = args.data_dir or settings.data_dir
        store = RagStore(settings)
        plan, report = store.sync(data_dir, dry_run=args.dry_run, progress=not args.dry_run,
                                  allow_empty=args.allow_empty)
        if args.dry_run:
            print("\n".join(plan.lines() or ["nothing to do"]))
            print(f"Dry run: {len(plan.added)} to add, {len(plan.updated)} to update, "
                  f"{len(plan.unchanged)} unchanged, {len(plan.removed)} to remove")
            return 0
        if not (report.added or report.updated or report.unchanged or report.removed or report.failed):
            print(f"Nothing to ingest: no PDF or CSV under {data_dir}/pdf or {data_dir}/csv")
            return 0
        print(f"Ingest: {report.summary()}")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
