"""db.py with mocks: singletons, init SQL, connection targets, error messages.

The same paths run for real against PostgreSQL + pgvector in tests/integration."""
import pytest

from app import db
from app.config import Settings
from app.errors import DatabaseUnavailableError


def test_resolve_connection_string_server_mode_uses_env():
    s = Settings.from_env({"DB_HOST": "db", "DB_PORT": "5433"})
    assert db.resolve_connection_string(s) == "postgresql+psycopg://rag:rag@db:5433/rag"


def test_resolve_connection_string_embedded_starts_server_and_creates_db(mocker, tmp_path):
    server = mocker.Mock()
    server.get_uri.side_effect = lambda name: f"postgresql://postgres:@/{name}?host={tmp_path}"
    start = mocker.patch("app.db._embedded_server", return_value=server)
    ensure = mocker.patch("app.db._ensure_database")
    url = db.resolve_connection_string(Settings(pgdata_dir=tmp_path / "pg"))
    assert url == f"postgresql+psycopg://postgres:@/rag?host={tmp_path}"
    start.assert_called_once_with(tmp_path / "pg")
    ensure.assert_called_once_with(f"postgresql://postgres:@/postgres?host={tmp_path}", "rag")


def test_ensure_database_creates_missing_database(mocker, mock_db_connection):
    mocker.patch("psycopg.connect", return_value=mock_db_connection)
    mock_db_connection.execute.return_value.fetchone.return_value = None
    db._ensure_database("postgresql://x", "rag")
    assert mock_db_connection.execute.call_args_list[0].args == (db.SQL_DATABASE_EXISTS, ("rag",))
    assert "CREATE DATABASE" in mock_db_connection.execute.call_args_list[1].args[0].as_string(None)


def test_ensure_database_leaves_existing_database(mocker, mock_db_connection):
    mocker.patch("psycopg.connect", return_value=mock_db_connection)
    db._ensure_database("postgresql://x", "rag")
    assert mock_db_connection.execute.call_count == 1


def test_describe_target():
    assert db.describe_target(Settings(db_host="db", db_port=5432)) == "PostgreSQL at db:5432"
    assert db.describe_target(Settings()) == "embedded PostgreSQL in .pgdata"


def test_get_engine_unreachable_server_is_one_clear_error(clean_env):
    # Real connection attempt to a closed local port: refused at once.
    clean_env.setenv("DB_HOST", "127.0.0.1")
    clean_env.setenv("DB_PORT", "9")
    with pytest.raises(DatabaseUnavailableError) as err:
        db.get_engine()
    assert str(err.value).startswith("cannot connect to PostgreSQL at 127.0.0.1:9: ")
    assert "\n" not in str(err.value)


def test_get_vectorstore_is_a_singleton_with_384_dims_and_jsonb(mocker):
    engine = mocker.patch("app.db.get_engine").return_value
    pgvector = mocker.patch("langchain_postgres.PGVector")
    emb = object()
    first = db.get_vectorstore(Settings(), embeddings=emb)
    assert db.get_vectorstore(Settings(), embeddings=emb) is first
    assert pgvector.call_count == 1
    kw = pgvector.call_args.kwargs
    assert (kw["embedding_length"], kw["use_jsonb"], kw["collection_name"], kw["connection"]) == (
        384, True, "documents", engine)


def test_init_db_creates_hnsw_cosine_index_and_keyword_index(mocker):
    mocker.patch("app.db.get_vectorstore")
    conn = mocker.patch("app.db.get_engine").return_value.begin.return_value.__enter__.return_value
    conn.execute.return_value.scalar.return_value = "vector(384)"
    conn.execute.return_value.all.return_value = []
    db.init_db(Settings())
    statements = [str(c.args[0]) for c in conn.execute.call_args_list]
    assert any("USING hnsw (embedding vector_cosine_ops)" in s and "IF NOT EXISTS" in s for s in statements)
    assert any("USING gin (tsv)" in s and "IF NOT EXISTS" in s for s in statements)
    assert any("ON DELETE CASCADE" in s for s in statements)


def test_vector_literal():
    assert db._vector_literal([0.5, 1, -0.25]) == "[0.5,1.0,-0.25]"


def test_keyword_search_with_empty_query_does_not_touch_the_db(mocker):
    engine = mocker.Mock()
    assert db.keyword_search(engine, "documents", "", 5) == []
    engine.connect.assert_not_called()


def test_init_db_rejects_wrong_embedding_dimension(mocker):
    mocker.patch("app.db.get_vectorstore")
    conn = mocker.patch("app.db.get_engine").return_value.begin.return_value.__enter__.return_value
    conn.execute.return_value.scalar.return_value = "vector"
    with pytest.raises(DatabaseUnavailableError, match=r"expected vector\(384\)"):
        db.init_db(Settings())


def test_stop_embedded_server_when_not_running(tmp_path):
    assert db.stop_embedded_server(tmp_path) is False
