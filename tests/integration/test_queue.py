"""The ingest queue with real processes (issue 53): `python -m app.ingest --queue` on the writer's data
folder, `python -m app.worker` on copies of it (each with its own HOME and its own path, as another
machine would mount the share), real PostgreSQL with procrastinate's tables, real e5 and real
Tesseract on pages drawn from real Japanese text."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
from sqlalchemy import text

from app.formats.ocr import Ocr
from tests.integration.conftest import ROOT, drop_when_left, private_base, run_cli
from tests.integration.test_workers import own_db  # noqa: F401  (the fixture)
from tests.test_formats_ocr import FONT, page_image

pytestmark = pytest.mark.integration

needs_ocr = pytest.mark.skipif(
    Ocr().missing() is not None or FONT is None, reason="needs Tesseract and a Japanese font"
)
ROWS = 240  # the long table's: seconds of embedding, in batches of 8 (own_db's INGEST_BATCH_CHUNKS)
ACCESS = '[folders]\n"" = ["everyone"]\n"docs/情報システム" = ["情報システム"]\n'


def real_lines() -> list[str]:
    """Body lines of the sample's IT helpdesk manual (real Japanese prose)."""
    text_ = (ROOT / "data" / "docs" / "it_helpdesk.md").read_text(encoding="utf-8")
    return [line for line in text_.splitlines() if line.strip() and not line.startswith("#")]


def write_ocr_set(folder, pages: int = 3) -> None:
    """Scanned pages (PNG) of the manual's lines, the manual itself under a folder one group reads, the
    FAQ table and the access file."""
    lines = real_lines()
    (folder / "pdf").mkdir(parents=True)
    for n in range(pages):
        page_image(lines[2 * n : 2 * n + 2]).save(folder / "pdf" / f"scan{n + 1}.png")
    (folder / "docs" / "情報システム").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "docs" / "it_helpdesk.md", folder / "docs" / "情報システム" / "it_helpdesk.md")
    (folder / "csv").mkdir()
    shutil.copy(ROOT / "data" / "csv" / "faq.csv", folder / "csv" / "faq.csv")
    (folder / "access.toml").write_text(ACCESS, encoding="utf-8")


def machine(tmp_path, name: str, source) -> tuple:
    """Another machine: its own HOME and its own copy of the data folder at its own path."""
    home = tmp_path / name / "home"
    home.mkdir(parents=True)
    data = tmp_path / name / "mnt" / "share"
    shutil.copytree(source, data)
    return home, data


def start_worker(env: dict, home, data, log, *extra: str) -> subprocess.Popen:
    """`python -m app.worker` as its own process group (killed whole at the end)."""
    return subprocess.Popen(
        [sys.executable, "-m", "app.worker", "--data-dir", str(data), *extra],
        cwd=ROOT,
        env={**env, "HOME": str(home)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def ingest(env: dict, data, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m app.ingest` (queued with ``--queue``) on the writer's folder."""
    return run_module(env, "app.ingest", "--data-dir", str(data), *extra, timeout=timeout)


def start_ingest(env: dict, data) -> subprocess.Popen:
    """`python -m app.ingest --queue` in the background (it waits for the workers). Ctrl-C reaches it as
    in a terminal, even when this run was started where SIGINT is ignored (a shell's `&` job: Python then
    keeps it ignored and raises no KeyboardInterrupt)."""
    return subprocess.Popen(
        [sys.executable, "-m", "app.ingest", "--queue", "--data-dir", str(data)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def run_module(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m <args>` to its end (app.docs, app.worker --once …)."""
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def stop(*workers: subprocess.Popen) -> None:
    """End worker processes (and anything they started)."""
    import os

    for worker in workers:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def stored(engine) -> tuple[list, list, list]:
    """Every chunk (ID, text, metadata, readers, vector), document (ID, hash, readers, chunks) and OCR'd
    page's words, in order."""
    with engine.connect() as conn:
        chunks = conn.execute(
            text(
                "SELECT id, document, cmetadata::text, readers, embedding::text FROM langchain_pg_embedding ORDER BY id"
            )
        ).all()
        documents = conn.execute(
            text("SELECT doc_id, content_hash, settings_hash, readers, chunks FROM rag_document ORDER BY doc_id")
        ).all()
        words = conn.execute(  # the scans' words, kept for their page view
            text("SELECT doc_id, page, width, height, words::text FROM rag_page_words ORDER BY doc_id, page")
        ).all()
    return chunks, documents, words


@pytest.fixture
def two_dbs(own_db):  # noqa: F811
    """``own_db`` and a second database of its own on the same server (for the one-machine sync)."""
    from sqlalchemy import create_engine

    from app import storage
    from app.config import Settings

    env, engine = own_db
    name = f"rag_w{uuid.uuid4().hex[:8]}"
    other = create_engine(storage.resolve_connection_string(Settings.from_env().changed(db={"name": name})))
    yield env, engine, {**env, "DB_NAME": name}, other
    other.dispose()
    admin = create_engine(
        storage.resolve_connection_string(Settings.from_env().changed(db={"name": "postgres"})),
        isolation_level="AUTOCOMMIT",
    )
    drop_when_left(admin, name)
    admin.dispose()


@needs_ocr
def test_a_two_worker_queued_ingest_stores_what_a_one_machine_sync_stores(two_dbs, tmp_path):
    queued_env, queued_db, local_env, local_db = two_dbs
    writer = tmp_path / "writer" / "data"
    write_ocr_set(writer)
    local = ingest(local_env, writer)
    assert local.returncode == 0, local.stderr
    env = {**queued_env, "QUEUE_LEASE_S": "5"}
    logs = [open(tmp_path / f"worker{n}.log", "w+") for n in (1, 2)]
    workers = [start_worker(env, *machine(tmp_path, f"m{n}", writer), logs[n - 1]) for n in (1, 2)]
    try:
        queued = ingest(env, writer, "--queue")
    finally:
        stop(*workers)
    assert queued.returncode == 0, queued.stderr
    assert "5 added, 0 updated, 0 unchanged, 0 removed, 0 failed" in queued.stdout
    said = "".join(log.seek(0) or log.read() for log in logs)
    assert said.count(": staged ") == 5, said  # each file staged once, by one worker or the other
    ours, theirs = stored(queued_db), stored(local_db)
    assert (
        len(ours[0]) > 10 and len(ours[2]) == 3 and ours == theirs
    )  # the same IDs, texts, metadata, readers, vectors, words
    assert any("情報システム" in chunk[3] and "everyone" not in chunk[3] for chunk in ours[0])
    with queued_db.connect() as conn:  # nothing left queued, no job row left behind
        assert conn.execute(text("SELECT count(*) FROM rag_queued_file")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM procrastinate_jobs WHERE status <> 'succeeded'")).scalar() == 0
    assert query_role_reads(queued_db, "langchain_pg_embedding")  # under its readers' policy
    for table in ("rag_queued_file", "procrastinate_jobs", "procrastinate_workers", "rag_staging"):
        assert not query_role_reads(queued_db, table)  # they name documents and hold their text


def query_role_reads(engine, table: str) -> bool:
    """Whether the role questions are read as (rag_query, with every row's principal) may SELECT ``table``."""
    from sqlalchemy.exc import ProgrammingError

    from app.storage import reading
    from app.storage.readers import ALL_ROWS

    try:
        with reading(engine, ALL_ROWS) as conn:
            conn.execute(text(f"SELECT count(*) FROM {table}"))  # a table name of ours, not input
    except ProgrammingError as exc:
        assert "permission denied" in str(exc)
        return False
    return True


def write_long_table(folder, rows: int = ROWS) -> None:
    """A CSV whose rows are all new text: seconds of embedding, batch after batch."""
    token = uuid.uuid4().hex[:8]
    lines = real_lines()
    body = [f"{r},{token} {lines[r % len(lines)]}（第{r}項）" for r in range(rows)]
    (folder / "csv").mkdir(parents=True, exist_ok=True)
    (folder / "csv" / "long.csv").write_text("番号,内容\n" + "\n".join(body) + "\n", encoding="utf-8")


def wait_for(engine, sql: str, seconds: float = 180) -> int:
    """Poll ``sql`` (one number) until it is positive; that number (0 after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with engine.connect() as conn:
                found = conn.execute(text(sql)).scalar() or 0
        except Exception:  # the schema is being made
            found = 0
        if found:
            return found
        time.sleep(0.2)
    return 0


def test_a_worker_killed_mid_file_loses_and_doubles_nothing(own_db, tmp_path):  # noqa: F811
    env, engine = own_db
    env = {**env, "QUEUE_LEASE_S": "5", "GRAPH_EXTRACTOR": "off"}
    writer = tmp_path / "writer" / "data"
    write_long_table(writer)
    log_a, log_b = open(tmp_path / "a.log", "w+"), open(tmp_path / "b.log", "w+")
    first = start_worker(env, *machine(tmp_path, "a", writer), log_a)
    sync = start_ingest(env, writer)
    second = None
    try:
        staged = wait_for(engine, "SELECT count(*) FROM rag_staging")
        assert staged, "the first worker never staged a batch"
        stop(first)  # kill -9 mid-file: some batches staged, the job left 'doing'
        busy = ingest(env, writer, "--queue", "--no-wait")  # a second ingest while the first waits
        assert busy.returncode == 1
        assert f"another writer is running (rag ingest on {socket.gethostname()} pid {sync.pid})" in busy.stderr
        with engine.connect() as conn:
            running = conn.execute(text("SELECT state, attempts FROM rag_queued_file")).one()
        assert tuple(running) == ("running", 1)
        second = start_worker(env, *machine(tmp_path, "b", writer), log_b)
        out, err = sync.communicate(timeout=600)
    finally:
        stop(*(w for w in (first, second) if w is not None))
        if sync.poll() is None:
            sync.kill()
    assert sync.returncode == 0, err
    assert "1 added, 0 updated, 0 unchanged, 0 removed, 0 failed" in out
    embedded = int(out.split("embedded ")[1].split(" ")[0])
    assert embedded <= ROWS - staged  # the batches the killed worker staged were not embedded again
    log_b.seek(0)
    said = log_b.read()
    assert "lost its worker; queued again" in said and f"csv/long.csv: staged {ROWS} chunks" in said
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*), count(DISTINCT document) FROM langchain_pg_embedding")).one() == (
            ROWS,
            ROWS,
        )
        assert conn.execute(text("SELECT count(*) FROM rag_staging")).scalar() == 0


def test_a_different_copy_is_refused_a_bad_file_fails_for_good_the_rest_is_stored(own_db, tmp_path):  # noqa: F811
    env, engine = own_db
    env = {**env, "QUEUE_LEASE_S": "5", "QUEUE_MAX_ATTEMPTS": "3", "GRAPH_EXTRACTOR": "off"}
    writer = tmp_path / "writer" / "data"
    (writer / "csv").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "csv" / "faq.csv", writer / "csv" / "faq.csv")
    (writer / "pdf").mkdir()
    (writer / "pdf" / "broken.pdf").write_bytes(b"%PDF-1.4\n this is no PDF at all\n")
    home_a, data_a = machine(tmp_path, "a", writer)
    (data_a / "csv" / "faq.csv").write_text("質問,回答\n古い,版\n", encoding="utf-8")  # a stale copy on machine a
    log_a, log_b = open(tmp_path / "a.log", "w+"), open(tmp_path / "b.log", "w+")
    first = start_worker(env, home_a, data_a, log_a)
    second = None
    try:
        sync = start_ingest(env, writer)
        assert wait_for(engine, "SELECT count(*) FROM rag_queued_file WHERE error LIKE '%copy differs%'")
        stop(first)  # it refused: the job waits for another worker
        second = start_worker(env, *machine(tmp_path, "b", writer), log_b)
        out, err = sync.communicate(timeout=600)
        again = ingest(env, writer, "--queue", "--no-wait")  # the failed file is queued again, and fails again
        docs = run_module(env, "app.docs", "list")
        once = run_module(env, "app.worker", "--once", "--data-dir", str(writer))  # for cron: it ends by itself
    finally:
        stop(*(w for w in (first, second) if w is not None))
    assert sync.returncode == 0, err
    log_a.seek(0)
    refusal = [line for line in log_a.read().splitlines() if "copy differs" in line]
    assert refusal and refusal[0].startswith("WARNING: csv/faq.csv: this worker's copy differs from the file queued")
    assert "1 added, 0 updated, 0 unchanged, 0 removed, 1 failed" in out
    assert "WARNING: skipped pdf/broken.pdf: " in err
    assert again.returncode == 0 and "0 added, 0 updated, 1 unchanged, 0 removed, 1 failed" in again.stdout
    assert (
        "Failed in the queue: 1 files" in docs.stdout and "  pdf/broken.pdf (3 tries): pdf/broken.pdf: " in docs.stdout
    )
    assert once.returncode == 0 and "taking files from the ingest queue until it is empty" in once.stderr
    (writer / "pdf" / "broken.pdf").unlink()  # gone: a plain sync forgets its queued row and failed job
    plain = ingest(env, writer)
    listed = run_module(env, "app.docs", "list")
    assert plain.returncode == 0 and "Failed in the queue" not in listed.stdout
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM rag_queued_file")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM procrastinate_jobs")).scalar() == 0


def test_workers_wait_while_the_database_is_away_and_resume(integration_env, tmp_path):
    from app.storage import embedded as embedded_pg

    base = private_base("rag-q-")
    pgdata = base / "pg"  # a server of its own: stopping it stops no other test's
    env = {**os.environ, "PGDATA_DIR": str(pgdata), "QUEUE_LEASE_S": "5", "GRAPH_EXTRACTOR": "off"}
    writer = tmp_path / "writer" / "data"
    (writer / "csv").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "csv" / "faq.csv", writer / "csv" / "faq.csv")
    more = "質問,回答\n再開,できます\n"
    log = open(tmp_path / "worker.log", "w+")
    home, data = machine(tmp_path, "a", writer)
    (data / "csv" / "more.csv").write_text(more, encoding="utf-8")
    worker = None
    try:
        worker = start_worker(env, home, data, log)  # it starts the server and waits for a queue
        first = ingest(env, writer, "--queue", timeout=300)
        assert first.returncode == 0 and "1 added" in first.stdout, first.stderr
        embedded_pg.stop(pgdata)  # the worker is in procrastinate's loop now, waiting for jobs
        deadline = time.monotonic() + 90
        while "the database is unreachable" not in (log.seek(0) or log.read()) and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)  # a few more tries
        assert worker.poll() is None  # waiting, not dead
        embedded_pg.ensure_running(pgdata)
        (writer / "csv" / "more.csv").write_text(more, encoding="utf-8")
        second = ingest(env, writer, "--queue", timeout=300)
    finally:
        stop(*(w for w in (worker,) if w is not None))
        embedded_pg.stop(pgdata)
        shutil.rmtree(base, ignore_errors=True)
    assert second.returncode == 0, second.stderr
    assert "1 added, 0 updated, 1 unchanged, 0 removed, 0 failed" in second.stdout, second.stdout
    said = log.seek(0) or log.read()
    assert said.count("the database is unreachable") >= 2 and "csv/more.csv: staged 1 chunks" in said, said


def test_an_interrupted_ingest_leaves_the_queue_and_the_next_one_resumes(own_db, tmp_path):  # noqa: F811
    env, engine = own_db
    env = {**env, "QUEUE_LEASE_S": "5", "GRAPH_EXTRACTOR": "off"}
    writer = tmp_path / "writer" / "data"
    (writer / "csv").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "csv" / "faq.csv", writer / "csv" / "faq.csv")
    shutil.copy(ROOT / "data" / "csv" / "products.csv", writer / "csv" / "products.csv")
    first = start_ingest(env, writer)  # no worker yet: the files wait in the queue
    assert wait_for(engine, "SELECT count(*) FROM rag_queued_file WHERE job_id IS NOT NULL") == 2
    with engine.connect() as conn:
        jobs = sorted(conn.execute(text("SELECT job_id FROM rag_queued_file")).scalars())
    home, data = machine(tmp_path, "misfit", writer)  # other chunk settings: it must not fail the files
    misfit = run_module({**env, "HOME": str(home), "CHUNK_SIZE": "300"}, "app.worker", "--data-dir", str(data))
    assert misfit.returncode == 1
    assert (
        misfit.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "this worker's settings (embedding model, chunk size, OCR, graph extractor) differ from the ingest's; "
            "refused, and this worker stops"
        )
    )
    with engine.connect() as conn:  # its job given back, no try counted
        assert list(conn.execute(text("SELECT DISTINCT state, attempts FROM rag_queued_file"))) == [("queued", 0)]
    first.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130 and "Interrupted" in err
    log = open(tmp_path / "worker.log", "w+")
    worker = start_worker(env, *machine(tmp_path, "a", writer), log)
    try:
        again = ingest(env, writer, "--queue", timeout=300)
    finally:
        stop(worker)
    assert again.returncode == 0 and "2 added, 0 updated, 0 unchanged, 0 removed, 0 failed" in again.stdout
    with engine.connect() as conn:  # the jobs the first run queued did the work: no job was queued since
        assert conn.execute(text("SELECT last_value FROM procrastinate_jobs_id_seq")).scalar() == jobs[-1]
        assert conn.execute(text("SELECT count(*) FROM langchain_pg_embedding")).scalar() > 2
    said = log.seek(0) or log.read()
    assert said.count(": staged ") == 2


def test_the_documents_list_of_a_database_nothing_was_ingested_into_is_one_line(integration_env):
    """`make docs` before the first `make ingest`: no tables yet, so no queue either; no traceback."""
    listed = run_cli("app.docs", "list", env={"DB_NAME": "rag_never_ingested"})
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == "No documents (run `make ingest`)." and "Traceback" not in listed.stderr
