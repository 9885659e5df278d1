"""Issue 15 on real PostgreSQL, real files and real processes: nothing lost, nobody let in.

Each test names the case it covers; each fails on the code before the fix."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.documents import Document
from sqlalchemy import text

from app import storage
from app.storage import embedded as embedded_pg
from app.storage import pg_process
from tests.integration.conftest import ROOT, private_base, run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def data(tmp_path):
    target = tmp_path / "data"
    shutil.copytree(ROOT / "data", target, ignore=shutil.ignore_patterns("*.json"))
    return target


def doc_ids(store) -> dict[str, str]:
    return {d["doc_id"]: d["origin"] for d in store.list_documents()}


# --- 1. API documents survive a sync ----------------------------------------------


def test_documents_added_through_the_api_survive_a_sync(hash_store, data):
    hash_store.add_document(Document(page_content="社内メモ：来週の定例会議は木曜10時から。", id="memo-1"))
    _, report = hash_store.sync(data)
    assert report.removed == 0
    stored = doc_ids(hash_store)
    assert stored["memo-1"] == "api" and stored["csv/faq.csv"] == "data_dir"
    (data / "csv" / "faq.csv").unlink()
    _, report = hash_store.sync(data)
    assert report.removed == 1 and "memo-1" in doc_ids(hash_store) and "csv/faq.csv" not in doc_ids(hash_store)


# --- 2. evaluate/tune --data-dir never touch the main collection --------------------


def test_tune_and_evaluate_with_data_dir_use_their_own_collection(ingested, rag_store, integration_env, tmp_path):
    main_before = doc_ids(rag_store)
    other = tmp_path / "other"
    (other / "csv").mkdir(parents=True)
    (other / "csv" / "only.csv").write_text("質問,回答\n定休日は？,毎週水曜日です。\n", encoding="utf-8")
    questions = tmp_path / "q.json"
    questions.write_text(
        json.dumps(
            [{"query": "定休日はいつですか？", "expected_source": "only.csv:r1", "expected_keywords": ["水曜"]}],
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    tuned = run_cli("app.tune", "--data-dir", str(other), "--questions", str(questions))
    assert tuned.returncode == 0, tuned.stderr
    assert (
        "Using collection 'eval_" in tuned.stderr and "the main collection 'documents' is not touched" in tuned.stderr
    )
    evaluated = run_cli("app.evaluate", "--data-dir", str(other), "--questions", str(questions), "--no-progress")
    assert evaluated.returncode == 0, evaluated.stderr
    assert "Retrieval@k: 100.0%" in evaluated.stdout
    assert doc_ids(rag_store) == main_before


# --- 3. one bad file never stops the others ------------------------------------------


def write_bad_files(data: Path) -> None:
    (data / "csv" / "nul.csv").write_bytes("名前,値\nA\x00B,1\n".encode())  # NUL: stored without it
    (data / "csv" / "utf16.csv").write_bytes("質問,回答\n休日は？,土日です。\n".encode("utf-16"))  # BOM: read
    (data / "csv" / "utf16nobom.csv").write_bytes("質問,回答\n休日は？,土日です。\n".encode("utf-16-le"))
    outside = data.parent / "outside.csv"
    outside.write_text("名前,値\n外部,1\n", encoding="utf-8")
    (data / "csv" / "link_out.csv").symlink_to(outside)  # refused: outside the data dir (FOLLOW_EXTERNAL_LINKS)
    (data / "csv" / "link_in.csv").symlink_to(data / "csv" / "faq.csv")  # same file: stored once
    (data / "csv" / "dangling.csv").symlink_to(data / "csv" / "missing.csv")
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(data / "pdf" / "scan.pdf"))
    c.rect(40, 40, 300, 300, fill=1)
    c.showPage()
    c.save()
    (data / "pdf" / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ntrailer\n%%EOF")


def test_bad_files_fail_one_by_one_and_the_rest_are_stored(hash_store, data, caplog):
    write_bad_files(data)
    _, report = hash_store.sync(data)
    stored = doc_ids(hash_store)
    assert {"csv/nul.csv", "csv/utf16.csv", "csv/faq.csv", "pdf/work_rules.pdf"} <= set(stored)
    assert "csv/link_in.csv" not in stored and "csv/link_out.csv" not in stored
    failed = sorted(r.split(":")[0] for r in report.failures)
    assert failed == ["csv/dangling.csv", "csv/link_out.csv", "csv/utf16nobom.csv", "pdf/broken.pdf", "pdf/scan.pdf"], (
        report.failures
    )
    assert report.failed == 5 and report.added == len(stored) == 9
    assert "pdf/scan.pdf: no extractable text" in caplog.text
    with hash_store.engine.connect() as conn:
        nul = conn.execute(
            text("SELECT document FROM langchain_pg_embedding WHERE cmetadata->>'doc_id' = 'csv/nul.csv'")
        ).scalar()
    assert nul == "名前:AB\n値:1"


def test_a_failing_file_keeps_its_stored_version(hash_store, data):
    hash_store.sync(data)
    before = doc_ids(hash_store)
    faq = data / "csv" / "faq.csv"
    faq.write_bytes(faq.read_text(encoding="utf-8").encode("utf-16-le"))  # now unreadable
    _, report = hash_store.sync(data)
    assert report.failed == 1 and report.removed == 0 and doc_ids(hash_store) == before


def test_an_unreadable_file_is_counted_failed_and_the_rest_go_on(tmp_path):
    data = tmp_path / "data"
    (data / "csv").mkdir(parents=True)
    (data / "csv" / "ok.csv").write_text("a\n1\n")
    (data / "csv" / "secret.csv").write_text("a\n2\n")
    (data / "csv" / "secret.csv").chmod(0)
    code = (
        "import json,sys; from pathlib import Path; from app.ingestion.sync import scan; "
        "f, bad = scan(Path(sys.argv[1])); print(json.dumps([[x.doc_id for x in f], bad]))"
    )
    cmd = [sys.executable, "-c", code, str(data)]
    if os.geteuid() == 0:  # root reads anything: drop the capabilities that let it
        cmd = [
            "setpriv",
            "--inh-caps=-dac_override,-dac_read_search",
            "--bounding-set=-dac_override,-dac_read_search",
            *cmd,
        ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    files, bad = json.loads(done.stdout)
    assert files == ["csv/ok.csv"]
    assert bad == [["csv/secret.csv", "csv/secret.csv: cannot read (PermissionError: Permission denied)"]]


def test_watch_keeps_going_after_a_sync_that_fails(hash_store, data):
    import threading

    from app.ingestion.watch import watch_and_sync

    syncs, stop = [], threading.Event()
    shutil.rmtree(data / "pdf")
    (data / "csv" / "nul.csv").write_bytes(b"a,b\n1\x00,2\n")

    def on_sync(reason, report):
        syncs.append((reason, report.failed, report.added))
        if len(syncs) == 2:
            stop.set()

    thread = threading.Thread(
        target=watch_and_sync,
        args=(data, hash_store),
        kwargs={"debounce_ms": 200, "stop": stop, "on_sync": on_sync},
        daemon=True,
    )
    thread.start()
    time.sleep(2.0)
    (data / "csv" / "new.csv").write_text("質問,回答\n駐車場は？,ありません。\n", encoding="utf-8")
    thread.join(timeout=60)
    assert not thread.is_alive() and syncs[0][0] == "start" and syncs[1][2] == 1


# --- 4. one writer at a time ---------------------------------------------------------------


def test_second_writer_fails_with_no_wait_or_waits_for_the_lock(ingested, engine, integration_env, tmp_path):
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "x.csv").write_text("a\n1\n")
    with storage.writer_lock(engine):
        busy = run_cli("app.ingest", "--no-wait", "--data-dir", str(ROOT / "data"), process=True)
        assert busy.returncode == 1 and busy.stderr.startswith("Error: another writer is running ("), busy.stderr
        said = tmp_path / "waiting.err"
        with open(said, "w") as stderr:
            waiting = subprocess.Popen(
                [sys.executable, "-m", "app.ingest", "--data-dir", str(ROOT / "data")],
                cwd=ROOT,
                env=os.environ.copy(),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        deadline = time.monotonic() + 120  # a guard against a hang: it says so when it reaches the lock
        while "waiting for another writer" not in said.read_text() and waiting.poll() is None:
            assert time.monotonic() < deadline, said.read_text()
            time.sleep(0.2)
        time.sleep(1)
        assert waiting.poll() is None  # still waiting for the lock, a second after it said so
    out, _ = waiting.communicate(timeout=120)
    err = said.read_text()
    assert waiting.returncode == 0 and "waiting for another writer" in err and "7 unchanged" in out, err


def test_three_first_runs_at_once_all_succeed(integration_env):
    base = private_base("rag-race-")
    env = {**os.environ, "DB_NAME": "rag_race", "PGDATA_DIR": str(base / "pgdata")}
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "app.db", "init"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        results = [p.communicate(timeout=180) + (p.returncode,) for p in procs]
        assert all(code == 0 for _, _, code in results), results
        assert all("0 chunks in collection 'documents'" in out for out, _, _ in results)
    finally:
        embedded_pg.stop(base / "pgdata")
        shutil.rmtree(base, ignore_errors=True)


# --- 5. a kill inside the replace transaction leaves old or new, never half ----------------------

PAUSE_IN_REPLACE = """
import sys, time, dataclasses, pathlib
from sqlalchemy import event
from app import storage
from app.config import get_settings
from app.storage.tables import EMBEDDING_TABLE, quote
from app.store import RagStore
from tests.integration.conftest import HashEmbeddings

settings = get_settings().changed(retrieval={"collection_name": sys.argv[2]})
engine = storage.get_engine(settings)

@event.listens_for(engine, "after_cursor_execute")
def pause(conn, cursor, statement, *args):
    if statement.startswith("INSERT INTO " + quote(EMBEDDING_TABLE)):  # inside replace_document's transaction
        pathlib.Path(sys.argv[3]).write_text("in")
        time.sleep(300)

RagStore(settings, embeddings=HashEmbeddings(), engine=engine).sync(pathlib.Path(sys.argv[1]))
"""


def test_kill_inside_the_replace_transaction_keeps_the_old_version(hash_store, data, tmp_path):
    shutil.rmtree(data / "pdf")
    hash_store.sync(data)
    name = hash_store.settings.retrieval.collection_name

    def snapshot():
        with hash_store.engine.connect() as conn:
            chunks = sorted(
                conn.execute(
                    text(
                        "SELECT e.document FROM langchain_pg_embedding e JOIN langchain_pg_collection c ON c.uuid = "
                        "e.collection_id WHERE c.name = :n AND e.cmetadata->>'doc_id' = 'csv/faq.csv'"
                    ),
                    {"n": name},
                ).scalars()
            )
            keywords = conn.execute(
                text(
                    "SELECT count(*) FROM rag_keyword_index k JOIN langchain_pg_embedding e ON e.id = k.id "
                    "WHERE e.cmetadata->>'doc_id' = 'csv/faq.csv' AND k.collection_id = e.collection_id "
                    "AND e.collection_id = (SELECT uuid FROM langchain_pg_collection WHERE name = :n)"
                ),
                {"n": name},
            ).scalar()
        return chunks, keywords, doc_ids(hash_store)

    old = snapshot()
    faq = data / "csv" / "faq.csv"
    faq.write_text(
        faq.read_text(encoding="utf-8").replace("平日9時から18時まで", "平日10時から17時まで"), encoding="utf-8"
    )
    marker = tmp_path / "paused"
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSE_IN_REPLACE, str(data), name, str(marker)],
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 120
        while not marker.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert marker.exists(), proc.stderr.read().decode() if proc.poll() is not None else "never paused"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert snapshot() == old and any("平日9時から18時まで" in c for c in old[0]) and old[1] == len(old[0])
    _, report = hash_store.sync(data)
    new = snapshot()
    assert report.updated == 1 and any("平日10時から17時まで" in c for c in new[0]) and new[1] == len(new[0])


# --- 7. the embedded PostgreSQL is private ---------------------------------------------------------


def test_embedded_server_with_a_long_path_keeps_a_private_socket_and_needs_a_password(integration_env):
    import psycopg

    base = private_base("rag-long-")
    deep = base / ("x" * 60) / ("y" * 40)
    deep.mkdir(parents=True)
    for folder in (base / ("x" * 60), deep):
        folder.chmod(0o711)
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in (base, deep.parent, deep)}
    pgdata = deep / "pgdata"
    env = {"PGDATA_DIR": str(pgdata), "DB_NAME": "rag_private"}
    try:
        status = run_cli("app.db", "status", env=env, process=True)
        assert status.returncode == 0, status.stderr
        info = pg_process.read_pid_file(pgdata)
        sockets = info.socket_dir
        assert sockets != pgdata and "runtime" not in str(sockets)
        st = os.lstat(sockets)
        who = pg_process.runner()
        assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == who.uid
        assert {p: stat.S_IMODE(p.stat().st_mode) for p in modes} == modes  # nothing outside was opened up
        hba = (pgdata / "pg_hba.conf").read_text()
        assert not [
            line
            for line in hba.splitlines()
            if line.split() and not line.startswith("#") and line.split()[-1] == "trust"
        ]
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(
                host=str(sockets),
                port=embedded_pg.PORT,
                user="postgres",
                dbname="postgres",
                password="wrong",
                connect_timeout=5,
            )
        import psutil

        postmaster = psutil.Process(info.pid)
        if os.geteuid() == 0:
            assert postmaster.gids().real != 0 and postmaster.uids().real == who.uid
    finally:
        embedded_pg.stop(pgdata)
        shutil.rmtree(base, ignore_errors=True)


def test_no_password_reaches_the_postgresql_log(integration_env):
    """Issue 40, case 7: every start logged ``CREATE ROLE … PASSWORD '<the app password>'`` (the role
    already existed: an error with its statement). Now the role is made once, with a SCRAM verifier:
    two starts and a search later, the server's log holds neither password, and the app logs in."""
    base = private_base("rag-pwlog-")
    pgdata = base / "pgdata"
    env = {"PGDATA_DIR": str(pgdata), "DB_NAME": "rag_pwlog"}
    try:
        for _ in range(2):
            status = run_cli("app.db", "status", env=env, process=True)
            assert status.returncode == 0, status.stderr
            embedded_pg.stop(pgdata)
        status = run_cli("app.db", "status", env=env, process=True)
        assert status.returncode == 0, status.stderr
        secrets = [embedded_pg.app_password(pgdata), embedded_pg.read_password(pgdata)]
        log = (pgdata / "log").read_text(errors="replace")
        assert log and not [secret for secret in secrets if secret in log]
        assert "CREATE ROLE" not in log
    finally:
        embedded_pg.stop(pgdata)
        shutil.rmtree(base, ignore_errors=True)


# --- 9. errors a user can act on ---------------------------------------------------------------------


@pytest.fixture
def own_server():
    base = private_base("rag-own-")
    pgdata = base / "pgdata"
    env = {"PGDATA_DIR": str(pgdata), "DB_NAME": "rag_own"}
    assert run_cli("app.db", "init", env=env, process=True).returncode == 0
    yield pgdata, env
    embedded_pg.stop(pgdata)
    shutil.rmtree(base, ignore_errors=True)


def test_stale_pid_file_of_an_unrelated_live_process_is_recovered(own_server):
    pgdata, env = own_server
    stopped = run_cli("app.db", "stop", env=env, process=True)
    assert stopped.returncode == 0 and "Stopped" in stopped.stdout
    stranger = subprocess.Popen(["sleep", "120"])
    try:
        lines = ["0"] * 8
        lines[0] = str(stranger.pid)
        (pgdata / "postmaster.pid").write_text("\n".join(lines) + "\n")
        again = run_cli("app.db", "stop", env=env, process=True)
        assert again.returncode == 0 and "removed a stale postmaster.pid" in again.stdout
        (pgdata / "postmaster.pid").write_text("\n".join(lines) + "\n")
        status = run_cli("app.db", "status", env=env, process=True)
        assert status.returncode == 0 and "0 chunks" in status.stdout, status.stderr
    finally:
        stranger.kill()


def test_a_command_right_after_the_server_died_starts_it_again(own_server):
    pgdata, env = own_server
    os.kill(pg_process.running_pid(pgdata), signal.SIGKILL)
    status = run_cli("app.db", "status", env=env, process=True)
    assert status.returncode == 0 and "0 chunks" in status.stdout, status.stderr


def test_sql_errors_never_show_document_text(engine):
    from sqlalchemy.exc import DBAPIError

    with pytest.raises(DBAPIError) as err, engine.begin() as conn:
        conn.execute(
            text(storage.SQL_UPSERT_EMBEDDING),
            {"id": "x", "collection": None, "embedding": "[1,2,3]", "document": "極秘の本文", "cmetadata": "{}"},
        )
    assert "極秘" not in str(err.value) and "parameters hidden" in str(err.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_disk_full_is_one_line_and_nothing_is_half_written(tmp_path):
    mount = private_base("rag-full-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m,mode=0711", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    pgdata = mount / "pgdata"
    env = {"PGDATA_DIR": str(pgdata), "DB_NAME": "rag_full", "EMBED_MODEL": os.environ.get("EMBED_MODEL", "")}
    data = tmp_path / "data"
    (data / "csv").mkdir(parents=True)
    try:
        assert run_cli("app.db", "init", env=env, process=True).returncode == 0
        free = shutil.disk_usage(mount).free
        with open(mount / "filler", "wb") as fh:  # leave ~300 kB: the new rows need more
            fh.write(b"\0" * max(free - 300_000, 0))
        body = "".join(f"{i},{'本文' * 40}{i}\n" for i in range(150))  # short rows: the vectors and index fill the disk
        (data / "csv" / "big.csv").write_text("番号,内容\n" + body, encoding="utf-8")
        done = run_cli("app.ingest", "--data-dir", str(data), env=env, process=True)
        assert done.returncode == 1, done.stdout + done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
        assert errors[0].startswith("Error: the database disk is full ("), done.stderr
        (mount / "filler").unlink()
        listed = run_cli("app.docs", "list", env=env, process=True)
        assert listed.returncode == 0 and "csv/big.csv" not in listed.stdout
    finally:
        embedded_pg.stop(pgdata)
        subprocess.run(["umount", "-l", str(mount)])
        shutil.rmtree(mount, ignore_errors=True)


# --- 10. a question too long for the context ----------------------------------------------------------


def test_question_longer_than_the_context_is_a_clear_error(ingested, integration_env):
    done = run_cli(
        "app.ask", "--no-stream", "受付時間" * 400, env={"LLM_N_CTX": "512", "LLM_MAX_TOKENS": "48"}, process=True
    )
    assert done.returncode == 1
    assert done.stderr.startswith("Error: the question is too long: the prompt needs "), done.stderr


# --- 11. reads create nothing: a read-only user can ask ---------------------------------------------


def test_a_read_only_database_user_can_list_and_search(tcp_server, integration_env):
    import psycopg

    owner = dict(host="127.0.0.1", port=int(tcp_server["DB_PORT"]), user="rag", password="s3cret", autocommit=True)
    with psycopg.connect(**owner, dbname="postgres") as conn:
        conn.execute("CREATE DATABASE rag_ro")
    tcp_server = {**tcp_server, "DB_NAME": "rag_ro"}
    writer = run_cli("app.ingest", env=tcp_server, process=True)
    assert writer.returncode == 0, writer.stderr
    with psycopg.connect(**owner, dbname="rag_ro") as conn:
        conn.execute("DROP ROLE IF EXISTS reader")
        conn.execute("CREATE ROLE reader LOGIN PASSWORD 'r3ad'")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
    reader = {**tcp_server, "DB_USER": "reader", "DB_PASSWORD": "r3ad"}
    listed = run_cli("app.docs", "list", env=reader, process=True)
    assert listed.returncode == 0 and "csv/faq.csv" in listed.stdout, listed.stderr
    code = (
        "from app.permissions.principals import FULL_ACCESS; from app.store import RagStore; "
        "print([d.metadata['source'] for d in "
        "RagStore(principals=FULL_ACCESS).search('受付時間', search_mode='hybrid', top_k=3)])"
    )
    searched = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **reader},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert searched.returncode == 0 and "faq.csv:r2" in searched.stdout, searched.stderr
    denied = run_cli("app.ingest", env=reader, process=True)
    assert denied.returncode == 1 and denied.stderr.startswith("Error: ") and "Traceback" not in denied.stderr


# --- fuzz: 200+ mutated files through one sync ------------------------------------------------------------


def mutate(raw: bytes, rng: random.Random) -> bytes:
    """One random damage: flipped bytes, a cut, a spliced block or zeroed bytes."""
    data = bytearray(raw)
    kind = rng.randrange(4)
    if kind == 0:
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 1:
        data = data[: rng.randrange(1, len(data))]
    elif kind == 2:
        start = rng.randrange(len(data))
        data[start:start] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    else:
        start = rng.randrange(len(data))
        data[start : start + rng.randint(1, 200)] = b"\0" * 32
    return bytes(data)


def test_fuzzed_files_are_stored_or_counted_failed_never_crash(hash_store, tmp_path):
    rng = random.Random(20261122)
    data = tmp_path / "fuzz"
    (data / "pdf").mkdir(parents=True)
    (data / "csv").mkdir()
    sources = [(p, "pdf") for p in sorted((ROOT / "data" / "pdf").glob("*.pdf"))]
    sources += [(p, "csv") for p in sorted((ROOT / "data" / "csv").glob("*.csv"))]
    for source, folder in sources:  # the originals stay good
        shutil.copy(source, data / folder / source.name)
    for i in range(210):
        source, folder = sources[i % len(sources)]
        (data / folder / f"m{i:03d}_{source.name}").write_bytes(mutate(source.read_bytes(), rng))
    total = len(list(data.glob("*/*")))
    _, report = hash_store.sync(data)
    stored = doc_ids(hash_store)
    assert report.added + report.failed == total == 216
    assert len(stored) == report.added and len(report.failures) == report.failed
    assert {f"{folder}/{s.name}" for s, folder in sources} <= set(stored)
    assert report.failed > 20  # many mutations really are broken
