"""Throughput of the ingest queue against today's INGEST_WORKERS, on one machine standing in for several
(issue 53; docs/scaling.md, "Measured").

An OCR-heavy set made from real Japanese text (pages of Debian's maint-guide-ja, from ``make
real-corpus``'s PDF, drawn as scans at 300 dpi scale; Word files of the same text; the real code
lists), then, each into a fresh database of a TCP PostgreSQL started here:

* ``python -m app.ingest --workers K`` (K = 1, 2): one machine, today's parallel ingest;
* ``python -m app.ingest --queue`` with K ``python -m app.worker`` processes (K = 1, 2, 4), each with its
  own HOME and its own copy of the data folder, started before the ingest (their model loads count).

Then the queue's own cost per job: enqueue (the writer's rows and procrastinate's batch defer), and
lease + ack (a worker fetching a job, marking it begun and staged, procrastinate finishing it) with the
reading left out. Prints a Markdown table and writes ``bench/results-queue.json``.

    python scripts/bench_queue.py [--pages 24] [--jobs 300] [--out bench/results-queue.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

XML_INVALID = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # what Word cannot hold
FONT_SIZE = 40
LINES_PER_PAGE = 12


def source_lines(pdf: Path) -> list[str]:
    """Non-empty text lines of a real Japanese manual (the PDF's text layer), or of the sample's manual."""
    if pdf.is_file():
        import pypdfium2

        document = pypdfium2.PdfDocument(str(pdf))
        lines = []
        for page in document:
            lines += [
                line.strip() for line in page.get_textpage().get_text_range().splitlines() if len(line.strip()) > 8
            ]
        return [XML_INVALID.sub("", line) for line in lines]
    text = (ROOT / "data" / "docs" / "it_helpdesk.md").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def make_set(folder: Path, pages: int, lines: list[str]) -> dict:
    """The OCR-heavy set: ``pages`` scanned pages (PNG), 4 Word files, the real code lists."""
    from docx import Document as Docx
    from PIL import Image, ImageDraw, ImageFont

    from tests.test_formats_ocr import japanese_font

    font = ImageFont.truetype(japanese_font(), FONT_SIZE)
    (folder / "pdf").mkdir(parents=True)
    for n in range(pages):
        chunk = [lines[(n * LINES_PER_PAGE + i) % len(lines)] for i in range(LINES_PER_PAGE)]
        image = Image.new("L", (2480, 140 + 90 * len(chunk)), 255)  # A4's width at 300 dpi
        draw = ImageDraw.Draw(image)
        for i, line in enumerate(chunk):
            draw.text((120, 70 + 90 * i), line[:52], font=font, fill=0)
        image.save(folder / "pdf" / f"scan{n + 1:03d}.png")
    (folder / "docs").mkdir()
    for n in range(4):
        doc = Docx()
        doc.add_heading(f"手順書 {n + 1}", level=1)
        for i in range(60):
            doc.add_paragraph(lines[(n * 200 + i) % len(lines)])
        doc.save(folder / "docs" / f"manual{n + 1}.docx")
    (folder / "csv").mkdir()
    for name in ("countries.csv", "currencies.csv"):
        source = ROOT / ".cache" / "real-corpus" / "csv" / name
        if source.is_file():
            shutil.copy(source, folder / "csv" / name)
    return {"scanned_pages": pages, "word_files": 4, "csv_files": len(list((folder / "csv").iterdir()))}


def start_server(base: Path) -> tuple[dict, callable]:
    """A PostgreSQL + pgvector on 127.0.0.1 (the tests' own TCP cluster): its DB_* variables and a stop."""
    from tests.integration.conftest import tcp_cluster

    return tcp_cluster(base, "bench")


def create_database(env: dict, name: str) -> None:
    """A fresh database on the server."""
    import psycopg

    with psycopg.connect(
        host=env["DB_HOST"], port=env["DB_PORT"], user="rag", password=env["DB_PASSWORD"], dbname="postgres"
    ) as conn:
        conn.autocommit = True
        conn.execute(f'CREATE DATABASE "{name}"')


def stored_chunks(env: dict, name: str) -> int:
    """How many chunks the run stored."""
    import psycopg

    with psycopg.connect(
        host=env["DB_HOST"], port=env["DB_PORT"], user="rag", password=env["DB_PASSWORD"], dbname=name
    ) as conn:
        return conn.execute("SELECT count(*) FROM langchain_pg_embedding").fetchone()[0]


def run_config(base: Path, data: Path, env: dict, name: str, queued: bool, workers: int) -> dict:
    """One ingest of the set into a fresh database: wall time, the writer's CPU time, chunks."""
    import psutil

    create_database(env, name)
    run_env = {**env, "DB_NAME": name}
    started = []
    for n in range(workers if queued else 0):
        home = base / name / f"machine{n}" / "home"
        home.mkdir(parents=True)
        copy = base / name / f"machine{n}" / "share"
        shutil.copytree(data, copy)
        log = open(base / name / f"worker{n}.log", "w")
        started.append(
            subprocess.Popen(
                [sys.executable, "-m", "app.worker", "--data-dir", str(copy), "--quiet"],
                cwd=ROOT,
                # the cores shared as INGEST_WORKERS shares them: each worker's embedder on cores / workers threads
                env={**run_env, "HOME": str(home), "LLM_N_THREADS": str(max(1, (os.cpu_count() or 1) // workers))},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    command = [sys.executable, "-m", "app.ingest", "--data-dir", str(data)]
    command += ["--queue"] if queued else ["--workers", str(workers)]
    t0 = time.perf_counter()
    writer = psutil.Popen(command, cwd=ROOT, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu = 0.0
    while writer.poll() is None:
        try:
            times = writer.cpu_times()
            cpu = times.user + times.system
        except psutil.Error:
            pass
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    out, err = writer.communicate()
    for worker in started:
        os.killpg(worker.pid, 9)
        worker.wait()
    if writer.returncode != 0:
        raise SystemExit(f"{name}: ingest failed: {err.strip().splitlines()[-1:]}")
    return {
        "wall_s": round(wall, 1),
        "writer_cpu_s": round(cpu, 1),
        "chunks": stored_chunks(env, name),
        "summary": out.strip(),
    }


def queue_costs(env: dict, name: str, jobs: int) -> dict:
    """Per job: enqueue (the writer's rows + procrastinate's batch defer), and lease + ack (a worker
    fetching it, marking it begun and staged, procrastinate finishing it), the reading left out."""
    import asyncio

    from app import storage
    from app.config import Settings
    from app.ingestion import queue_runner, queue_worker
    from app.ingestion.datadir import SourceFile
    from app.ingestion.queue_sync import _enqueue
    from app.ingestion.staging import StageRun
    from app.ingestion.sync import settings_hash
    from app.storage import queue as queue_store

    settings = Settings.from_env({**os.environ, **env, "DB_NAME": name})
    engine = storage.get_engine(settings)
    key = settings_hash(settings)
    folder = Path(tempfile.mkdtemp())
    items = [
        (SourceFile(f"pdf/bench{n:05d}.png", folder / f"bench{n:05d}.png", "x.png", f"{n:064x}"), "added")
        for n in range(jobs)
    ]
    t0 = time.perf_counter()
    _enqueue(
        engine,
        settings,
        [(item, f"gen{n}") for n, item in enumerate(items)],
        StageRun(settings, None, engine, key, "bench"),
        folder,
    )
    enqueue = (time.perf_counter() - t0) / jobs
    ctx = queue_worker.WorkerContext(settings, folder, name="bench:1")

    def no_reading(job_id: int, args: dict, _ctx) -> str:  # the queue's own rows, no file read
        job = queue_worker.QueuedFile.from_args(args)
        queue_store.begin_queued(
            engine, settings.retrieval.collection_name, job.doc_id, job.generation, job_id, ctx.name
        )
        counts = {"chunks": 1, "embedded": 1, "truncated": 0, "token_limit": 0, "page_words": None}
        queue_store.finish_queued(
            engine, settings.retrieval.collection_name, job.doc_id, job.generation, job_id, counts
        )
        return "staged"

    original = queue_worker.run_job
    queue_worker.run_job = no_reading
    try:
        t0 = time.perf_counter()
        asyncio.run(queue_runner.serve_once(ctx, concurrency=1, once=True))
        lease_ack = (time.perf_counter() - t0) / jobs
    finally:
        queue_worker.run_job = original
    with engine.begin() as conn:  # the stand-in rows go
        from sqlalchemy import text

        conn.execute(text("DELETE FROM rag_queued_file WHERE doc_id LIKE 'pdf/bench%'"))
    return {"jobs": jobs, "enqueue_ms": round(enqueue * 1000, 2), "lease_ack_ms": round(lease_ack * 1000, 2)}


def table(results: dict) -> str:
    """The Markdown table of the runs."""
    pages = results["set"]["scanned_pages"]
    rows = ["| how | processes | wall s | scanned pages/s | chunks/s | writer CPU s |", "|---|---|---|---|---|---|"]
    for run in results["runs"]:
        rows.append(
            f"| {run['how']} | {run['processes']} | {run['wall_s']} | {pages / run['wall_s']:.2f} | "
            f"{run['chunks'] / run['wall_s']:.1f} | {run['writer_cpu_s']} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=24)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results-queue.json")
    parser.add_argument("--configs", default="local1,local2,queue1,queue2,queue4")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="rag-bq-"))
    base.chmod(0o711)
    data = base / "data"
    results = {
        "set": make_set(data, args.pages, source_lines(ROOT / ".cache" / "real-corpus" / "pdf" / "maint-guide.pdf"))
    }
    env, stop = start_server(base)
    env = {**os.environ, **env, "GRAPH_EXTRACTOR": "off", "QUEUE_LEASE_S": "10"}
    env.pop("DATABASE_URL", None)
    try:
        results["runs"] = []
        for config in args.configs.split(","):
            queued, workers = config.startswith("queue"), int(config[-1])
            run = run_config(base, data, env, f"bench_{config}", queued, workers)
            run.update(how="queue + app.worker" if queued else "INGEST_WORKERS", processes=workers)
            results["runs"].append(run)
            print(f"{config}: {run}", flush=True)
        last = f"bench_{args.configs.split(',')[-1]}"
        results["queue"] = queue_costs(env, last, args.jobs)
        print(results["queue"], flush=True)
    finally:
        stop()
        shutil.rmtree(base, ignore_errors=True)
    args.out.write_text(json.dumps(results, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(table(results))


if __name__ == "__main__":
    main()
