"""Any PostgreSQL: DATABASE_URL (a libpq URI) against the TCP server, `app.db check`, a user without
the right to create the extension, a read-only user, and the statement timeout."""

import shutil

import psycopg
import pytest

from app.config import Settings
from app.errors import DatabaseUnavailableError
from app.storage import pg_process
from tests.integration.conftest import free_port, private_base, run_cli, start_postgres

pytestmark = pytest.mark.integration


def _url(server: dict, user: str = "rag", password: str = "s3cret", dbname: str = "url", query: str = "") -> str:
    return f"postgresql://{user}:{password}@127.0.0.1:{server['DB_PORT']}/{dbname}{query}"


def _admin(server: dict, dbname: str = "postgres"):
    return psycopg.connect(
        host="127.0.0.1", port=int(server["DB_PORT"]), user="rag", password="s3cret", dbname=dbname, autocommit=True
    )


@pytest.fixture(scope="module")
def url_env(integration_env, tcp_server):
    """The TCP server reached through DATABASE_URL only (no DB_* variables), with the sample data ingested
    into a database of its own (``url``: other tests use ``rag`` on the same server)."""
    with _admin(tcp_server) as conn:
        conn.execute("DROP DATABASE IF EXISTS url")
        conn.execute("CREATE DATABASE url")
    env = {
        "DATABASE_URL": _url(tcp_server, dbname="url", query="?sslmode=disable&application_name=rag-test"),
        "DB_HOST": "",
        "DB_PASSWORD": "",
    }
    ingest = run_cli("app.ingest", env=env)
    assert ingest.returncode == 0, ingest.stderr
    return env


def test_database_url_reaches_the_server(url_env, tcp_server):
    status = run_cli("app.db", "status", env=url_env)
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip() == (
        f"PostgreSQL at 127.0.0.1:{tcp_server['DB_PORT']} (DATABASE_URL): 50 chunks in collection 'documents'"
    )
    check = run_cli("app.db", "check", env=url_env)
    assert check.returncode == 0, check.stderr
    assert check.stdout.strip() == (
        f"PostgreSQL at 127.0.0.1:{tcp_server['DB_PORT']} (DATABASE_URL): PostgreSQL "
        "18.3 (primary), pgvector 0.8.2 installed, user rag: OK"
    )


def test_sslmode_require_on_a_server_without_ssl_is_one_line(url_env, tcp_server):
    result = run_cli("app.db", "status", env={**url_env, "DATABASE_URL": _url(tcp_server, query="?sslmode=require")})
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"Error: cannot connect to PostgreSQL at 127.0.0.1:{tcp_server['DB_PORT']} (DATABASE_URL): "
    )
    assert "SSL" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "s3cret" not in result.stderr


def test_a_read_only_user_can_ask_but_not_ingest(url_env, tcp_server):
    with _admin(tcp_server, "url") as conn:
        conn.execute("CREATE ROLE url_reader LOGIN PASSWORD 'r34d'")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO url_reader")
    env = {
        **url_env,
        "DATABASE_URL": _url(tcp_server, user="url_reader", password="r34d"),
        "RERANKER_MODEL": "acme/absent",
    }
    ask = run_cli("app.ask", "--mode", "keyword", "--no-stream", "エラーコードE3010は何を意味しますか？", env=env)
    assert ask.returncode == 0, ask.stderr
    assert "technical_guide.pdf:p3" in ask.stdout.split("=== Sources")[1]
    ingest = run_cli("app.ingest", env=env)
    assert ingest.returncode == 1
    assert ingest.stderr.startswith("Error: the database user may not do this (")


def test_check_says_when_the_user_may_not_create_the_extension(url_env, tcp_server):
    with _admin(tcp_server) as conn:
        conn.execute("CREATE ROLE url_owner LOGIN PASSWORD '0wn'")
        conn.execute("CREATE DATABASE url_fresh OWNER url_owner")
    env = {**url_env, "DATABASE_URL": _url(tcp_server, user="url_owner", password="0wn", dbname="url_fresh")}
    check = run_cli("app.db", "check", env=env)
    assert check.returncode == 1
    assert check.stderr.strip() == (
        "Error: the database user 'url_owner' may not create the vector extension; ask an "
        "administrator to run `CREATE EXTENSION vector;` once in this database"
    )
    with _admin(tcp_server, "url_fresh") as conn:  # what the administrator does
        conn.execute("CREATE EXTENSION vector")
    check = run_cli("app.db", "check", env=env)
    assert check.returncode == 0, check.stderr
    assert "pgvector 0.8.2 installed, user url_owner: OK" in check.stdout
    ingest = run_cli("app.ingest", env=env)  # the owner may create the tables now
    assert ingest.returncode == 0, ingest.stderr
    assert "7 added" in ingest.stdout


def test_statement_timeout_stops_a_long_statement(url_env):
    from sqlalchemy import text

    from app import storage

    settings = Settings.from_env(url_env).changed(db={"statement_timeout_ms": 100})
    engine = storage.get_engine(settings)
    with engine.connect() as conn:
        assert conn.execute(text("SHOW statement_timeout")).scalar() == "100ms"
    with pytest.raises(Exception) as caught, engine.connect() as conn:
        conn.execute(text("SELECT pg_sleep(2)"))
    mapped = storage.database_error(caught.value)
    assert isinstance(mapped, DatabaseUnavailableError)
    assert str(mapped) == "the database failed: canceling statement due to statement timeout"
    assert engine.pool.size() == settings.db.pool_size == 5


@pytest.fixture(scope="module")
def replica(url_env, tcp_server):
    """A hot standby of the TCP server (pg_basebackup -R, streaming), with the ingested data: a real
    read replica on another port."""
    base = private_base("rag-replica-")
    pgdata = base / "pgdata"
    who = pg_process.runner()
    if who.user is not None:
        shutil.chown(base, who.uid, who.gid)
    pg = pg_process.bin_dir()
    done = pg_process.run(
        [
            str(pg / "pg_basebackup"),
            "-D",
            str(pgdata),
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
            "-d",
            f"host=127.0.0.1 port={tcp_server['DB_PORT']} user=rag password=s3cret",
        ],
        who,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    port = free_port()
    start_postgres(pgdata, port, base / "log", who)
    yield {**tcp_server, "DB_PORT": str(port)}
    pg_process.run([str(pg / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"], who)
    shutil.rmtree(base, ignore_errors=True)


def test_a_read_replica_answers_and_refuses_writes_in_one_line(url_env, replica):
    env = {**url_env, "DATABASE_URL": _url(replica), "RERANKER_MODEL": "acme/absent"}
    check = run_cli("app.db", "check", env=env)
    assert check.returncode == 0, check.stderr
    assert check.stdout.strip().endswith("(read replica), pgvector 0.8.2 installed, user rag: OK")
    ask = run_cli("app.ask", "--mode", "hybrid", "--no-stream", "エラーコードE3010は何を意味しますか？", env=env)
    assert ask.returncode == 0, ask.stderr
    assert "technical_guide.pdf:p3" in ask.stdout.split("=== Sources")[1]
    ingest = run_cli("app.ingest", env=env)
    assert ingest.returncode == 1, ingest.stderr
    assert ingest.stderr.strip().splitlines()[-1].startswith("Error: the database is read-only ("), ingest.stderr[
        -3000:
    ]
    assert ingest.stderr.strip().endswith(
        "a read replica answers questions, but ingest, remove and `db init` must go to the primary"
    )
