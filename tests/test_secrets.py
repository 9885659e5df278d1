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
        ("http://host/v1?api_key=sk-123&model=qwen", "http://host/v1?api_key=***&model=qwen"),
        ("http://host/v1?access_token=abc&sig=xyz&x=1", "http://host/v1?access_token=***&sig=***&x=1"),
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
