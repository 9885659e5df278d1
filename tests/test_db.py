"""app.db and app.storage with mocks: singletons, init SQL, connection targets, error messages.

The same paths run for real against PostgreSQL + pgvector in tests/integration."""

import pytest

from app import db, storage
from app.config import Settings
from app.errors import DatabaseUnavailableError
from app.storage import engine as storage_engine
from app.storage.tables import vector_literal


def test_resolve_connection_string_server_mode_uses_env():
    s = Settings.from_env({"DB_HOST": "db", "DB_PORT": "5433", "DB_PASSWORD": "pw"})
    assert storage.resolve_connection_string(s) == "postgresql+psycopg://rag:pw@db:5433/rag"


def test_resolve_connection_string_embedded_starts_server_and_provisions_the_app_role(mocker, tmp_path):
    start = mocker.patch("app.storage.embedded.ensure_running")
    mocker.patch(
        "app.storage.embedded.connection_url",
        side_effect=lambda pgdata, name, admin=False: f"{'admin' if admin else 'app'}/{name}",
    )
    mocker.patch("app.storage.embedded.app_password", return_value="pw")
    provision = mocker.patch("app.storage.provision.provision")
    assert storage.resolve_connection_string(Settings().changed(db={"pgdata_dir": tmp_path / "pg"})) == "app/rag"
    start.assert_called_once_with(tmp_path / "pg")
    provision.assert_called_once_with("admin/postgres", "admin/rag", "rag", "rag_app", "pw")


def test_describe_target():
    assert storage.describe_target(Settings().changed(db={"host": "db", "port": 5432})) == "PostgreSQL at db:5432"
    assert storage.describe_target(Settings()) == "embedded PostgreSQL in .pgdata"


def test_get_engine_unreachable_server_is_one_clear_error(clean_env):
    # Real connection attempt to a closed local port: refused at once.
    clean_env.setenv("DB_HOST", "127.0.0.1")
    clean_env.setenv("DB_PORT", "9")
    clean_env.setenv("DB_PASSWORD", "pw")
    with pytest.raises(DatabaseUnavailableError) as err:
        storage.get_engine()
    assert str(err.value).startswith("cannot connect to PostgreSQL at 127.0.0.1:9: ")
    assert "\n" not in str(err.value)


def test_get_vectorstore_opens_the_existing_schema_with_vectors_of_any_size_and_jsonb(mocker):
    engine = mocker.patch("app.storage.get_engine").return_value
    check = mocker.patch("app.storage.schema.check_schema")
    pgvector = mocker.patch("app.storage.schema.sized_vectorstore_class").return_value
    db.get_vectorstore(Settings(), embeddings=object())
    kw = pgvector.call_args.kwargs
    assert (
        kw["embedding_length"],
        kw["use_jsonb"],
        kw["collection_name"],
        kw["connection"],
        kw["create_extension"],
    ) == (None, True, "documents", engine, False)
    check.assert_called_once_with(engine, "documents")


def test_get_vectorstore_searches_as_the_principals_it_is_given_else_refuses(mocker):
    """tests/integration/test_fail_closed.py runs the refusal on PostgreSQL."""
    mocker.patch("app.storage.get_engine")
    mocker.patch("app.storage.schema.check_schema")
    mocker.patch("app.storage.schema.sized_vectorstore_class")
    assert db.get_vectorstore(Settings(), embeddings=object()).principals is None
    assert db.get_vectorstore(Settings(), embeddings=object(), principals=["everyone"]).principals == ("everyone",)


def test_create_schema_creates_hnsw_cosine_index_keyword_index_and_version(mocker):
    pgvector = mocker.patch("app.storage.schema.sized_vectorstore_class").return_value
    engine = mocker.MagicMock()
    conn = engine.begin.return_value.__enter__.return_value
    conn.execute.return_value.scalar.return_value = "vector(384)"
    conn.execute.return_value.all.return_value = []
    storage.create_schema(engine, object(), "documents")
    assert pgvector.call_args.kwargs["create_extension"] is True
    assert pgvector.call_args.kwargs["embedding_length"] == 384
    statements = [str(c.args[0]) for c in conn.execute.call_args_list]
    assert any("USING hnsw (embedding vector_cosine_ops)" in s and "IF NOT EXISTS" in s for s in statements)
    assert any("USING gin (tsv)" in s and "IF NOT EXISTS" in s for s in statements)
    assert any("ON DELETE CASCADE" in s for s in statements)
    assert any("ADD COLUMN IF NOT EXISTS origin" in s for s in statements)
    assert conn.execute.call_args_list[-1].args[1] == {"version": str(storage.SCHEMA_VERSION)}


def test_vector_literal():
    assert vector_literal([0.5, 1, -0.25]) == "[0.5,1.0,-0.25]"


def test_keyword_search_with_empty_query_does_not_touch_the_db(mocker):
    engine = mocker.Mock()
    assert storage.keyword_search(engine, "documents", "", 5, ("admin",)) == []
    engine.connect.assert_not_called()


def test_create_schema_fits_the_columns_to_a_second_size(mocker):
    mocker.patch("app.storage.schema.sized_vectorstore_class")
    engine = mocker.MagicMock()
    conn = engine.begin.return_value.__enter__.return_value
    conn.execute.return_value.scalar.return_value = "vector(384)"
    storage.create_schema(engine, object(), "documents", 768)
    statements = [str(c.args[0]) for c in conn.execute.call_args_list]
    chunks = [s for s in statements if "langchain_pg_embedding" in s and ("INDEX" in s or "ALTER TABLE" in s)]
    assert chunks[-4:] == [
        'DROP INDEX IF EXISTS "langchain_pg_embedding_embedding_hnsw"',
        'ALTER TABLE "langchain_pg_embedding" ALTER COLUMN embedding TYPE vector',
        'CREATE INDEX IF NOT EXISTS "langchain_pg_embedding_hnsw_384" ON "langchain_pg_embedding" USING hnsw '
        "((CAST(embedding AS vector(384))) vector_cosine_ops) WITH (m = 16, ef_construction = 200) WHERE vector_dims(embedding) = 384",
        'CREATE INDEX IF NOT EXISTS "langchain_pg_embedding_hnsw_768" ON "langchain_pg_embedding" USING hnsw '
        "((CAST(embedding AS vector(768))) vector_cosine_ops) WITH (m = 16, ef_construction = 200) WHERE vector_dims(embedding) = 768",
    ]
    assert 'ALTER TABLE "rag_staging" ALTER COLUMN embedding TYPE vector' in statements
    assert any(s.startswith('CREATE INDEX IF NOT EXISTS "rag_graph_entity_hnsw_768"') for s in statements)


@pytest.mark.parametrize("size", [0, 2001, 384.0, True])
def test_an_embedding_size_an_index_cannot_take_is_one_line(size):
    with pytest.raises(ValueError, match=r"^embedding size must be 1 to 2000 dimensions for an HNSW index, got "):
        storage.create_schema(object(), object(), "documents", size)


def test_stop_embedded_server_when_nothing_was_made(tmp_path):
    from app.storage import embedded as embedded_pg

    assert embedded_pg.stop(tmp_path) == f"no embedded database in {tmp_path}"


def test_database_error_maps_disk_full_to_one_line_without_parameters():
    import psycopg
    from sqlalchemy.exc import OperationalError

    exc = OperationalError(
        "INSERT INTO t VALUES (%(doc)s)",
        {"doc": "秘密の本文"},
        psycopg.errors.DiskFull("could not extend file: No space left on device"),
    )
    message = str(storage.database_error(exc))
    assert message.startswith("the database disk is full (could not extend file: No space left on device); ")
    assert "秘密" not in message and "\n" not in message


def test_database_error_leaves_data_errors_to_the_caller():
    import psycopg
    from sqlalchemy.exc import DataError

    assert storage.database_error(DataError("x", {}, psycopg.errors.DataError("bad"))) is None
    assert storage.database_error(ValueError("x")) is None


def test_connect_args_set_the_statement_timeout_unless_the_url_does():
    from app.config import Settings

    s = Settings.from_env({"DB_STATEMENT_TIMEOUT_MS": "2500"})
    me = storage_engine.application_name()
    assert storage_engine.connect_args(s, "postgresql+psycopg://u@h/d") == {
        "connect_timeout": storage.CONNECT_TIMEOUT_S,
        "application_name": me,
        "options": "-c statement_timeout=2500",
    }
    assert storage_engine.connect_args(s, "postgresql+psycopg://u@h/d?options=-c%20statement_timeout%3D9") == {
        "connect_timeout": storage.CONNECT_TIMEOUT_S,
        "application_name": me,
    }


def test_a_process_names_itself_to_the_server(monkeypatch):
    import os
    import socket

    monkeypatch.setattr("sys.argv", ["/srv/rag/app/ingest.py", "--queue"])
    assert storage_engine.application_name() == f"rag ingest on {socket.gethostname()} pid {os.getpid()}"[:63]


@pytest.mark.parametrize(
    "version,expected",
    [("0.8.2", (0, 8, 2)), ("0.7.0", (0, 7, 0)), ("0.10", (0, 10)), ("0.5.1-dev", (0, 5, 1)), ("x", ())],
)
def test_version_tuple(version, expected):
    assert storage_engine.version_tuple(version) == expected


def test_a_read_only_database_is_one_line_even_when_wrapped():
    import psycopg
    from sqlalchemy.exc import InternalError

    raw = InternalError(
        "CREATE EXTENSION IF NOT EXISTS vector",
        {},
        psycopg.errors.ReadOnlySqlTransaction("cannot execute CREATE EXTENSION in a read-only transaction"),
    )
    wrapped = Exception(f"Failed to create vector extension: {raw}")  # what langchain-postgres raises
    wrapped.__cause__ = raw
    for exc in (raw, wrapped):
        assert str(storage.database_error(exc)) == (
            "the database is read-only (cannot execute CREATE EXTENSION in a read-only transaction); a read replica "
            "answers questions, but ingest, remove and `db init` must go to the primary"
        )
    assert storage.database_error(Exception("other")) is None
