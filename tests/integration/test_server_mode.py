"""Server mode: DB_HOST/DB_PORT/DB_USER/DB_PASSWORD/DB_NAME pointing at a PostgreSQL over TCP."""

import pytest

from tests.integration.conftest import run_cli

pytestmark = pytest.mark.integration


def test_ingest_and_ask_against_a_server_over_tcp(integration_env, tcp_server):
    ingest = run_cli("app.ingest", env=tcp_server)
    assert ingest.returncode == 0, ingest.stderr
    assert "7 added" in ingest.stdout
    status = run_cli("app.db", "status", env=tcp_server)
    assert status.stdout.strip() == (
        f"PostgreSQL at 127.0.0.1:{tcp_server['DB_PORT']}: 50 chunks in collection 'documents'"
    )
    ask = run_cli(
        "app.ask",
        "--mode",
        "keyword",
        "--no-stream",
        "エラーコードE3010は何を意味しますか？",
        env={**tcp_server, "RERANKER_MODEL": "acme/absent"},
    )
    assert ask.returncode == 0, ask.stderr
    assert "- technical_guide.pdf:p3" in ask.stdout.split("=== Sources")[1]  # "(closest; …)" if withdrawn


def test_wrong_password_is_one_line_error(integration_env, tcp_server):
    result = run_cli("app.db", "status", env={**tcp_server, "DB_PASSWORD": "wrong"})
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: cannot connect to PostgreSQL at 127.0.0.1:{tcp_server['DB_PORT']}: ")
    assert "password authentication failed" in result.stderr and len(result.stderr.strip().splitlines()) == 1
