"""Secrets never printed (issue 24, case 4): URLs masked, a user:password in LLM_BASE_URL used as HTTP
Basic auth deliberately, and refused together with LLM_API_KEY."""

from __future__ import annotations

import pytest

from app.config import Settings, mask_url, split_userinfo
from app.models.servers import basic_auth_headers, mask_urls


@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
        ("http://user:secret@host:8080/v1", "http://***@host:8080/v1"),
        ("https://token@host/v1", "https://***@host/v1"),
        ("http://host/v1?api_key=sk-123&model=qwen", "http://host/v1?api_key=***&model=***"),
        ("http://host/v1?access_token=abc&sig=xyz&x=1", "http://host/v1?access_token=***&sig=***&x=***"),
        ("http://host/v1?flag&a=", "http://host/v1?flag&a=***"),
        ("http://u:p%40ss@host/v1?Password=p", "http://***@host/v1?Password=***"),
    ],
)
def test_mask_url(url, shown):
    assert mask_url(url) == shown


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://host:8080/v1", ("http://host:8080/v1", "")),
        ("http://user:secret@host:8080/v1", ("http://host:8080/v1", "user:secret")),
        ("http://us%3Aer:p%40ss@host/v1", ("http://host/v1", "us:er:p@ss")),
        ("http://user@host/v1", ("http://host/v1", "user:")),
    ],
)
def test_split_userinfo(url, expected):
    assert split_userinfo(url) == expected


def test_llm_base_url_password_becomes_basic_auth_and_leaves_the_url():
    s = Settings.from_env({"LLM_BASE_URL": "http://ann:s3cret@127.0.0.1:8080/v1/"})
    assert s.llm.base_url == "http://127.0.0.1:8080/v1" and s.llm.url_auth == "ann:s3cret"
    assert basic_auth_headers(s.llm.url_auth) == {"Authorization": "Basic YW5uOnMzY3JldA=="}
    assert "s3cret" not in repr(s)


@pytest.mark.parametrize(
    "env, message",
    [
        (
            {"LLM_BASE_URL": "http://ann:s3cret@host/v1", "LLM_API_KEY": "sk-1"},
            "LLM_BASE_URL carries a user:password and LLM_API_KEY is set too",
        ),
        (
            {"EMBED_BASE_URL": "http://ann:s3cret@host/v1", "EMBED_API_KEY": "sk-1"},
            "EMBED_BASE_URL carries a user:password and EMBED_API_KEY is set too",
        ),
        ({"LLM_BASE_URL": "ftp://ann:s3cret@host/v1"}, "got 'ftp://***@host/v1'"),
    ],
)
def test_base_url_errors_name_the_variables_never_the_secret(env, message):
    with pytest.raises(ValueError) as err:
        Settings.from_env(env)
    assert message in str(err.value) and "s3cret" not in str(err.value) and "sk-1" not in str(err.value)


def test_settings_repr_masks_every_secret():
    s = Settings().changed(
        db={"password": "pw1", "url": "postgresql+psycopg://u:pw5@h/db"},
        llm={"api_key": "sk-2"},
        models={"embed_api_key": "sk-3"},
        servers={"mcp_token": "tok4"},
    )
    shown = repr(s)
    assert not any(secret in shown for secret in ("pw1", "sk-2", "sk-3", "tok4", "pw5"))
    assert "password='***'" in shown and "url='***'" in shown and "mcp_token='***'" in shown


def test_server_errors_mask_urls_in_the_cause():
    assert mask_urls("Connection refused: http://ann:pw@10.0.0.9:8080/v1/chat?key=k") == (
        "Connection refused: http://***@10.0.0.9:8080/v1/chat?key=***"
    )


def test_llm_client_sends_basic_auth_and_shows_no_password(clean_env):
    from app.llm import _server_llm, model_name

    llm = _server_llm(Settings.from_env({"LLM_BASE_URL": "http://ann:s3cret@127.0.0.1:9/v1"}))
    assert llm.default_headers == {"Authorization": "Basic YW5uOnMzY3JldA=="}
    assert "s3cret" not in str(llm.openai_api_base) and "s3cret" not in model_name(llm)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://host:8080/v1", ("http://host:8080/v1", {})),
        ("http://host/v1?api_key=QKEY&x=1", ("http://host/v1", {"api_key": "QKEY", "x": "1"})),
        ("http://host/v1?a=%2Fb&empty=", ("http://host/v1", {"a": "/b", "empty": ""})),
    ],
)
def test_split_query(url, expected):
    from app.config.urls import split_query

    assert split_query(url) == expected


def test_a_base_url_query_reaches_the_server_intact_and_no_log_line_shows_a_secret(clean_env, capsys):
    """LLM_BASE_URL with a user:password and a query string (issue 40, case 5): a real request over
    loopback to a stand-in server goes to /v1/chat/completions with the query and Basic auth, and the
    --debug log lines show neither the password nor the query's values."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from app.cli import setup_logging
    from app.llm import _server_llm

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, self.headers.get("Authorization")))
            body = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "はい"}, "finish_reason": "stop"}
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://u:pw9@127.0.0.1:{server.server_port}/v1?api_key=QKEY&x=1"
        setup_logging(debug=True)
        llm = _server_llm(Settings.from_env({"LLM_BASE_URL": url, "LLM_MAX_RETRIES": "0"}))
        assert llm.invoke("質問").content == "はい"
    finally:
        server.shutdown()
        setup_logging()
    assert seen == [("/v1/chat/completions?api_key=QKEY&x=1", "Basic dTpwdzk=")]
    err = capsys.readouterr().err
    assert "chat/completions" in err  # the debug lines were written …
    assert "QKEY" not in err and "pw9" not in err and "x=1" not in err  # … without a secret
