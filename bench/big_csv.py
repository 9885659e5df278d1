"""Ingest one large CSV and compare with the raw embedding throughput (issue "bounded on every input").

    PGDATA_DIR=/tmp/bench-pg DB_NAME=bench .venv/bin/python -m bench.big_csv 20000

Writes a CSV of ROWS rows x 5 Japanese columns to a temporary folder, syncs it into a new
collection of the configured database (the embedded PostgreSQL unless DB_HOST is set) with the
configured embedding model, and embeds the same chunk texts with ``embed_documents`` in batches of
64 (the raw encoder, no database), half of them before the ingest and half after. Prints one JSON
object: the ingest's time and chunks/s, the raw encoder's chunks/s on the same texts (on the first
``--raw-sample`` of them when given), their ratio (also per CPU second of this process, which other
load on the machine disturbs less; PostgreSQL's own work is not in it), the share of the ingest's
wall-clock its encoder was busy (the pipeline's overhead, measured over the same seconds), and the resident memory
during the ingest (sampled every second: start, quartiles, peak, end; and the peak the kernel
recorded). The collection is dropped afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEPARTMENTS = ("総務部", "人事部", "経理部", "営業一課", "営業二課", "情報システム部", "品質保証部", "法務部")
TITLES = ("部長", "課長", "係長", "主任", "担当")
TOPICS = (
    "出張旅費の精算",
    "在宅勤務の申請",
    "備品の購入",
    "契約書の確認",
    "システム障害の報告",
    "研修の受講",
    "健康診断の予約",
    "有給休暇の取得",
)


def write_csv(path: Path, rows: int) -> None:
    """``rows`` rows of 5 columns (ID, name, department, title, note), every row's text different."""
    with path.open("w", encoding="utf-8") as out:
        out.write("社員番号,氏名,部署,役職,備考\n")
        for i in range(rows):
            topic = TOPICS[i % len(TOPICS)]
            out.write(
                f"E{i:06d},社員{i}号,{DEPARTMENTS[i % len(DEPARTMENTS)]},{TITLES[i % len(TITLES)]},"
                f"{topic}について第{i}件目の問い合わせ。手続き番号{i * 7 % 100003}で受付、"
                "担当者が確認した。\n"
            )


class RssSampler(threading.Thread):
    """The process's resident memory (MB), once a second, in the background."""

    def __init__(self):
        super().__init__(daemon=True)
        import psutil

        self.process, self.samples, self.stop = psutil.Process(), [], threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append(self.process.memory_info().rss / 2**20)
            self.stop.wait(1.0)

    def summary(self) -> dict:
        self.stop.set()
        self.join()
        s = self.samples or [0.0]
        quarter = [s[min(len(s) - 1, len(s) * q // 4)] for q in (1, 2, 3)]
        return {
            "rss_start_mb": round(s[0]),
            "rss_25_50_75_mb": [round(x) for x in quarter],
            "rss_peak_sampled_mb": round(max(s)),
            "rss_end_mb": round(s[-1]),
        }


class EncoderClock:
    """Wall-clock seconds spent inside ``embeddings.embed_documents`` (wrapped in place)."""

    def __init__(self, embeddings):
        self.seconds, self.inner = 0.0, embeddings.embed_documents
        embeddings.embed_documents = self

    def __call__(self, texts):
        start = time.perf_counter()
        try:
            return self.inner(texts)
        finally:
            self.seconds += time.perf_counter() - start


def ingest(data: Path, settings, embeddings, graph: bool) -> tuple[dict, object]:
    """Sync ``data`` into a new collection; (figures, the store)."""
    from app.store import RagStore

    store = RagStore(settings, embeddings=embeddings)
    with store.writing():  # the schema, outside the timing
        pass
    sampler, clock = RssSampler(), EncoderClock(embeddings)
    sampler.start()
    start, cpu = time.perf_counter(), time.process_time()
    try:
        _, report = store.sync(data, graph=graph)
    finally:
        embeddings.embed_documents = clock.inner
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    figures = {
        "chunks": report.chunks_written,
        "failed": report.failed,
        "ingest_s": round(seconds, 1),
        "ingest_chunks_per_s": round(report.chunks_written / seconds, 1),
        "ingest_chunks_per_cpu_s": round(report.chunks_written / cpu, 2),
        # the share of the ingest's wall-clock the encoder was busy (drift on the machine cannot
        # disturb it: both are measured over the same seconds)
        "encoder_busy_share": round(clock.seconds / seconds, 3),
        **sampler.summary(),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    return figures, store


def chunk_texts(source, settings, limit: int) -> list[str]:
    """The ingest's own chunk texts as embedded (context line included): the first ``limit`` (0: all)."""
    from app.ingestion.reading import iter_chunks
    from app.text.chunks import embedding_text

    texts = []
    for chunk in iter_chunks(source, settings):
        texts.append(embedding_text(chunk.page_content, chunk.metadata.get("context", "")))
        if limit and len(texts) >= limit:
            break
    return texts


def raw_encode(embeddings, texts: list[str]) -> tuple[float, float]:
    """(Seconds, CPU seconds of this process) ``embed_documents`` takes for ``texts``, 64 at a time
    (the raw encoder, no database)."""
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), 64):
        embeddings.embed_documents(texts[i : i + 64])
    return time.perf_counter() - start, time.process_time() - cpu


def main(argv=None) -> int:
    """CLI: ``bench/big_csv.py ROWS [--raw-sample N] [--graph] [--keep]``; prints JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", type=int, help="data rows of the CSV")
    parser.add_argument("--raw-sample", type=int, default=0, help="raw encoder on the first N texts only (0: all)")
    parser.add_argument("--graph", action="store_true", help="also rebuild the graph at the end of the sync (timed)")
    parser.add_argument("--keep", action="store_true", help="keep the collection")
    args = parser.parse_args(argv)

    from app.config import get_settings
    from app.embeddings import get_embeddings
    from app.ingestion.scan import resolve_file

    settings = get_settings().changed(retrieval={"collection_name": f"bench_big_{uuid.uuid4().hex[:8]}"})
    embeddings = get_embeddings(settings)
    embeddings.embed_documents(["warm-up"])  # the model loads outside both timings
    with tempfile.TemporaryDirectory(prefix="big-csv-") as folder:
        data = Path(folder)
        (data / "csv").mkdir()
        path = data / "csv" / f"big_{args.rows}.csv"
        write_csv(path, args.rows)
        size_mb = round(path.stat().st_size / 2**20, 1)
        texts = chunk_texts(resolve_file(path, data, settings), settings, args.raw_sample)
        half = len(texts) // 2  # the raw encoder runs before and after the ingest (the machine's load drifts)
        before = raw_encode(embeddings, texts[:half])
        figures, store = ingest(data, settings, embeddings, args.graph)
        after = raw_encode(embeddings, texts[half:])
    raw = {
        "raw_texts": len(texts),
        "raw_chunks_per_s": round(len(texts) / (before[0] + after[0]), 1),
        "raw_before_after_chunks_per_s": [round(half / before[0], 1), round((len(texts) - half) / after[0], 1)],
        "raw_chunks_per_cpu_s": round(len(texts) / (before[1] + after[1]), 2),
    }
    out = {
        "rows": args.rows,
        "csv_mb": size_mb,
        "batch_chunks": settings.ingest.batch_chunks,
        "embed_model": settings.models.embed_model,
        **figures,
        **raw,
        "ingest_vs_raw": round(figures["ingest_chunks_per_s"] / raw["raw_chunks_per_s"], 3),
        "ingest_vs_raw_cpu": round(figures["ingest_chunks_per_cpu_s"] / raw["raw_chunks_per_cpu_s"], 3),
    }
    print(json.dumps(out, ensure_ascii=False), flush=True)
    if not args.keep:
        start = time.perf_counter()
        with store.writing():
            store.vectorstore.delete_collection()
        print(
            f"collection {settings.retrieval.collection_name} dropped in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
