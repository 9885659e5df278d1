"""app.config: defaults, env overrides, validation messages, connection strings."""

import os
from operator import attrgetter

import pytest

from app import config
from app.config import Settings, get_connection_string, get_db_config, get_settings
from tests.conftest import clear_settings_env


def test_settings_defaults_match_the_spec(clean_env):
    s = get_settings()
    assert (s.ingest.chunk_size, s.ingest.chunk_overlap, s.retrieval.search_k, s.retrieval.rerank_top_k) == (
        500,
        100,
        10,
        3,
    )
    assert (s.llm.n_ctx, s.llm.max_tokens) == (2048, 300)
    assert s.models.embed_model == "intfloat/multilingual-e5-small"
    assert s.models.reranker_model == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    assert s.llm.model_path == "./models/llama-2-7b.Q4_K_M.gguf"
    assert s.retrieval.collection_name == "documents"


def test_settings_default_db_is_embedded(clean_env):
    s = get_settings()
    assert s.db.host is None and s.db.embedded
    assert str(s.db.pgdata_dir) == ".pgdata"


@pytest.mark.parametrize(
    "name,attr,value,expected",
    [
        ("CHUNK_SIZE", "ingest.chunk_size", "800", 800),
        ("CHUNK_OVERLAP", "ingest.chunk_overlap", "0", 0),
        ("SEARCH_K", "retrieval.search_k", "25", 25),
        ("RERANK_TOP_K", "retrieval.rerank_top_k", "5", 5),
        ("DB_PORT", "db.port", "6543", 6543),
        ("LLM_N_CTX", "llm.n_ctx", "4096", 4096),
        ("LLM_MAX_TOKENS", "llm.max_tokens", " 128 ", 128),
        ("LLM_N_THREADS", "llm.n_threads", "3", 3),
    ],
)
def test_settings_int_env_overrides(clean_env, name, attr, value, expected):
    clean_env.setenv(name, value)
    assert attrgetter(attr)(get_settings()) == expected


@pytest.mark.parametrize(
    "name,value,message",
    [
        ("CHUNK_SIZE", "abc", "CHUNK_SIZE must be an integer, got 'abc'"),
        ("CHUNK_OVERLAP", "1.5", "CHUNK_OVERLAP must be an integer, got '1.5'"),
        ("SEARCH_K", "ten", "SEARCH_K must be an integer, got 'ten'"),
        ("RERANK_TOP_K", "3x", "RERANK_TOP_K must be an integer, got '3x'"),
        ("DB_PORT", "postgres", "DB_PORT must be an integer, got 'postgres'"),
        ("LLM_N_THREADS", "all", "LLM_N_THREADS must be an integer, got 'all'"),
        ("LLM_TEMPERATURE", "hot", "LLM_TEMPERATURE must be a number, got 'hot'"),
        ("CHUNK_SIZE", "0", "CHUNK_SIZE must be >= 1, got 0"),
        ("CHUNK_OVERLAP", "-1", "CHUNK_OVERLAP must be >= 0, got -1"),
        ("SEARCH_K", "0", "SEARCH_K must be >= 1, got 0"),
        ("LLM_N_THREADS", "0", "LLM_N_THREADS must be >= 1, got 0"),
        ("SEARCH_MODE", "fuzzy", "SEARCH_MODE must be one of hybrid, vector, keyword, got 'fuzzy'"),
        (
            "HYBRID_WEIGHTS",
            "1",
            "HYBRID_WEIGHTS must be two non-negative numbers 'vector,keyword', not both 0, got '1'",
        ),
        (
            "HYBRID_WEIGHTS",
            "a,b",
            "HYBRID_WEIGHTS must be two non-negative numbers 'vector,keyword', not both 0, got 'a,b'",
        ),
        (
            "HYBRID_WEIGHTS",
            "1,-1",
            "HYBRID_WEIGHTS must be two non-negative numbers 'vector,keyword', not both 0, got '1,-1'",
        ),
        (
            "HYBRID_WEIGHTS",
            "0,0",
            "HYBRID_WEIGHTS must be two non-negative numbers 'vector,keyword', not both 0, got '0,0'",
        ),
        (
            "HYBRID_WEIGHTS",
            "nan,1",
            "HYBRID_WEIGHTS must be two non-negative numbers 'vector,keyword', not both 0, got 'nan,1'",
        ),
        (
            "HYBRID_WEIGHTS",
            "inf,1",
            "HYBRID_WEIGHTS must be two non-negative numbers 'vector,keyword', not both 0, got 'inf,1'",
        ),
        ("LLM_TEMPERATURE", "nan", "LLM_TEMPERATURE must be a number from 0 to 2, got 'nan'"),
        ("LLM_TEMPERATURE", "-0.1", "LLM_TEMPERATURE must be a number from 0 to 2, got '-0.1'"),
        ("LLM_TEMPERATURE", "inf", "LLM_TEMPERATURE must be a number from 0 to 2, got 'inf'"),
        ("DB_PORT", "99999", "DB_PORT must be <= 65535, got 99999"),
        ("DB_PORT", "0", "DB_PORT must be >= 1, got 0"),
        ("RRF_K", "-5", "RRF_K must be >= 0, got -5"),
    ],
)
def test_settings_bad_values_raise_valueerror_naming_the_variable(clean_env, name, value, message):
    clean_env.setenv(name, value)
    with pytest.raises(ValueError) as err:
        get_settings()
    assert str(err.value) == message


def test_settings_empty_value_means_default(clean_env):
    clean_env.setenv("CHUNK_SIZE", "")
    assert get_settings().ingest.chunk_size == 500


def test_settings_llm_threads_default_is_all_cores(clean_env):
    assert get_settings().llm.n_threads == (os.cpu_count() or 1)


def test_settings_llm_path_override_is_not_default(clean_env):
    clean_env.setenv("LLM_MODEL_PATH", "/models/x.gguf")
    s = get_settings()
    assert s.llm.model_path == "/models/x.gguf" and s.llm.model_path_is_default is False


def test_settings_from_env_accepts_a_mapping():
    s = Settings.from_env({"DB_HOST": "db", "DB_PASSWORD": "pw", "SEARCH_K": "7"})
    assert (s.db.host, s.retrieval.search_k, s.db.embedded) == ("db", 7, False)


def test_get_db_config_defaults(clean_env):
    assert get_db_config() == {
        "host": "localhost",
        "port": 5432,
        "user": "rag",
        "password": "",
        "dbname": "rag",
        "embedded": True,
    }


def test_get_db_config_from_env(clean_env):
    for k, v in {"DB_HOST": "db", "DB_PORT": "5433", "DB_USER": "u", "DB_PASSWORD": "p", "DB_NAME": "n"}.items():
        clean_env.setenv(k, v)
    assert get_db_config() == {
        "host": "db",
        "port": 5433,
        "user": "u",
        "password": "p",
        "dbname": "n",
        "embedded": False,
    }


def test_get_connection_string_format(clean_env):
    clean_env.setenv("DB_HOST", "db")
    clean_env.setenv("DB_PASSWORD", "pw")
    assert get_connection_string() == "postgresql+psycopg://rag:pw@db:5432/rag"


def test_server_mode_needs_a_password_there_is_no_default(clean_env):
    clean_env.setenv("DB_HOST", "db")
    with pytest.raises(ValueError) as err:
        get_settings()
    assert str(err.value) == (
        "DB_HOST is set, so DB_PASSWORD or DB_PASSWORD_FILE must be set too (there is no default password)"
    )


def test_password_from_a_secret_file(clean_env, tmp_path):
    secret = tmp_path / "db_password"
    secret.write_text("s3cr3t\n")
    clean_env.setenv("DB_HOST", "db")
    clean_env.setenv("DB_PASSWORD_FILE", str(secret))
    assert get_settings().db.password == "s3cr3t"
    clean_env.setenv("DB_PASSWORD_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=r"DB_PASSWORD_FILE: cannot read .*missing \(No such file or directory\)"):
        get_settings()


def test_get_connection_string_quotes_special_characters(clean_env):
    clean_env.setenv("DB_HOST", "db")
    clean_env.setenv("DB_PASSWORD", "p@ss:w/rd")
    assert get_connection_string() == "postgresql+psycopg://rag:p%40ss%3Aw%2Frd@db:5432/rag"


def test_module_constants_follow_the_environment(clean_env):
    assert config.CHUNK_SIZE == 500
    clean_env.setenv("CHUNK_SIZE", "321")
    assert config.CHUNK_SIZE == 321
    assert config.COLLECTION_NAME == "documents"


def test_module_constant_with_bad_env_raises_valueerror(clean_env):
    clean_env.setenv("RERANK_TOP_K", "many")
    with pytest.raises(ValueError, match="RERANK_TOP_K"):
        _ = config.RERANK_TOP_K


def test_unknown_module_attribute_raises_attributeerror():
    with pytest.raises(AttributeError):
        _ = config.NOT_A_SETTING


def test_search_settings_defaults(clean_env):
    s = get_settings()
    assert (s.retrieval.search_mode, s.retrieval.rrf_k, s.retrieval.hybrid_weights) == ("hybrid", 60, (1.0, 1.0))


@pytest.mark.parametrize(
    "env,attr,expected",
    [
        ({"SEARCH_MODE": "Keyword"}, "retrieval.search_mode", "keyword"),
        ({"SEARCH_MODE": "vector"}, "retrieval.search_mode", "vector"),
        ({"RRF_K": "10"}, "retrieval.rrf_k", 10),
        ({"HYBRID_WEIGHTS": "0.5, 2"}, "retrieval.hybrid_weights", (0.5, 2.0)),
    ],
)
def test_search_settings_from_env(clean_env, env, attr, expected):
    for k, v in env.items():
        clean_env.setenv(k, v)
    assert attrgetter(attr)(get_settings()) == expected


def test_settings_class_defaults_equal_an_empty_environment():
    """Settings() and Settings.from_env({}) take their defaults from the same place."""
    from app.config import Settings

    assert Settings() == Settings.from_env({})


def test_prompt_style_and_abstention_threshold(clean_env):
    s = Settings.from_env({})
    assert (
        s.answers.prompt_style == "cited" and s.answers.abstain_min_similarity == config.ABSTAIN_MIN_SIMILARITY_DEFAULT
    )
    s = Settings.from_env({"PROMPT_STYLE": "Spec", "ABSTAIN_MIN_SIMILARITY": "0.8"})
    assert s.answers.prompt_style == "spec" and s.answers.abstain_min_similarity == 0.8
    minilm = {"EMBED_MODEL": "sentence-transformers/all-MiniLM-L6-v2"}
    assert Settings.from_env(minilm).answers.abstain_min_similarity == 0.0  # calibrated for the default model only
    assert Settings.from_env({**minilm, "ABSTAIN_MIN_SIMILARITY": "0.3"}).answers.abstain_min_similarity == 0.3


@pytest.mark.parametrize(
    "env, message",
    [
        ({"PROMPT_STYLE": "fancy"}, "PROMPT_STYLE must be one of cited, spec, evidence, got 'fancy'"),
        ({"ABSTAIN_MIN_SIMILARITY": "2"}, "ABSTAIN_MIN_SIMILARITY must be a number from -1 to 1, got '2'"),
        ({"ABSTAIN_MIN_SIMILARITY": "high"}, "ABSTAIN_MIN_SIMILARITY must be a number, got 'high'"),
        (
            {"DATABASE_URL": "mysql://a@b/c"},
            "DATABASE_URL must look like postgresql://user:password@host:5432/dbname "
            "(scheme 'mysql' is not one of postgresql, postgres, postgresql+psycopg)",
        ),
        ({"DATABASE_URL": "postgres://a@b:70000/c"}, "DATABASE_URL has a port that is not a number from 1 to 65535"),
        (
            {"DATABASE_URL": "postgres://a@b/c", "DB_HOST": "x", "DB_PASSWORD": "y"},
            "DATABASE_URL and DB_HOST are both set; set one of them",
        ),
        (
            {"LLM_BASE_URL": "127.0.0.1:8080/v1"},
            "LLM_BASE_URL must be an http:// or https:// URL such as http://127.0.0.1:8080/v1, got '127.0.0.1:8080/v1'",
        ),
        ({"DB_STATEMENT_TIMEOUT_MS": "-1"}, "DB_STATEMENT_TIMEOUT_MS must be >= 0, got -1"),
        ({"DB_POOL_SIZE": "0"}, "DB_POOL_SIZE must be >= 1, got 0"),
        ({"INGEST_WORKERS": "0"}, "INGEST_WORKERS must be >= 1, got 0"),
        ({"EMBED_SERVER_PREFIXES": "both"}, "EMBED_SERVER_PREFIXES must be one of text, input_type, got 'both'"),
    ],
)
def test_other_settings_are_validated(env, message):
    with pytest.raises(ValueError) as err:
        Settings.from_env(env)
    assert str(err.value) == message


def test_abstain_min_coverage(clean_env):
    assert Settings.from_env({}).answers.abstain_min_coverage == config.ABSTAIN_MIN_COVERAGE_DEFAULT == 0.15
    assert Settings.from_env({"ABSTAIN_MIN_COVERAGE": "0"}).answers.abstain_min_coverage == 0.0
    with pytest.raises(ValueError, match="ABSTAIN_MIN_COVERAGE must be a number from 0 to 1, got '1.5'"):
        Settings.from_env({"ABSTAIN_MIN_COVERAGE": "1.5"})


def test_abstain_min_support(clean_env):
    assert Settings.from_env({}).answers.abstain_min_support == config.ABSTAIN_MIN_SUPPORT_DEFAULT == 0.5
    assert Settings.from_env({"ABSTAIN_MIN_SUPPORT": "0"}).answers.abstain_min_support == 0.0
    with pytest.raises(ValueError, match="ABSTAIN_MIN_SUPPORT must be a number, got 'x'"):
        Settings.from_env({"ABSTAIN_MIN_SUPPORT": "x"})


def test_database_url_replaces_the_db_variables(clean_env):
    s = Settings.from_env({"DATABASE_URL": "postgresql://ann:p%40ss@db.example:6543/rag?sslmode=require"})
    assert not s.db.embedded and s.db.host is None
    assert get_connection_string(s) == "postgresql+psycopg://ann:p%40ss@db.example:6543/rag?sslmode=require"
    assert get_db_config(s) == {
        "host": "db.example",
        "port": 6543,
        "user": "ann",
        "password": "p@ss",
        "dbname": "rag",
        "embedded": False,
    }


def test_llm_server_settings(clean_env):
    s = Settings.from_env({"LLM_BASE_URL": "http://127.0.0.1:8080/v1/", "LLM_MODEL_PATH": "models/q.gguf"})
    assert (s.llm.base_url, s.llm.server_model, s.llm.api_key) == ("http://127.0.0.1:8080/v1", "q.gguf", "")
    assert (s.llm.timeout_s, s.llm.max_retries, s.db.pool_size, s.db.statement_timeout_ms) == (120, 2, 5, 60000)
    named = Settings.from_env({"LLM_BASE_URL": "https://llm.example/v1", "LLM_MODEL": "qwen2.5:1.5b"})
    assert named.llm.server_model == "qwen2.5:1.5b"


@pytest.mark.parametrize(
    "mode, default, allowed, expected",
    [
        (" Vector ", "hybrid", config.SEARCH_MODES, "vector"),
        (None, "hybrid", config.ASK_MODES, "hybrid"),
        ("", "keyword", config.ASK_MODES, "keyword"),
        ("local", "hybrid", config.ASK_MODES, "local"),
    ],
)
def test_validate_mode_normalizes_and_defaults(mode, default, allowed, expected):
    assert config.validate_mode(mode, default, allowed) == expected


@pytest.mark.parametrize(
    "mode, default, allowed, message",
    [
        ("local", "hybrid", config.SEARCH_MODES, "mode must be one of hybrid, vector, keyword, got 'local'"),
        ("", None, config.SEARCH_MODES, "mode must be one of hybrid, vector, keyword, got ''"),
        (3, None, config.ASK_MODES, "mode must be one of hybrid, vector, keyword, local, global, auto, got 3"),
        (
            "drift",
            "hybrid",
            config.ASK_MODES,
            "mode must be one of hybrid, vector, keyword, local, global, auto, got 'drift'",
        ),
    ],
)
def test_validate_mode_rejects_with_one_message(mode, default, allowed, message):
    with pytest.raises(ValueError) as err:
        config.validate_mode(mode, default, allowed)
    assert str(err.value) == message


def test_settings_come_in_groups_each_listing_the_variables_it_reads():
    assert list(Settings.GROUPS) == [
        "db",
        "models",
        "llm",
        "retrieval",
        "answers",
        "graph",
        "servers",
        "access",
        "ingest",
        "memory",
        "tables",
    ]
    names = config.variables()
    assert len(names) == len(set(names)) == 109  # no variable in two groups
    assert names[:3] == ("DB_HOST", "DB_PORT", "DB_USER") and "GRAPH_LEVEL" in names and "PROMPT_STYLE" in names


def test_a_group_that_reads_a_variable_it_does_not_list_fails_loudly():
    view = config._Declared({"SEARCH_K": "4", "DB_HOST": "x"}, config.RetrievalSettings)
    assert view.get("SEARCH_K") == "4" and dict(view) == {"SEARCH_K": "4"}
    with pytest.raises(RuntimeError, match="RetrievalSettings reads DB_HOST, which its VARIABLES do not list"):
        view.get("DB_HOST")


def test_the_unit_tests_clean_environment_is_the_settings_own_list(monkeypatch):
    for name, value in {"GRAPH_LEVEL": "2", "PROMPT_STYLE": "spec", "MAX_ZIP_MB": "9", "DB_NAME": "x"}.items():
        monkeypatch.setenv(name, value)
    assert get_settings() != Settings()
    clear_settings_env(monkeypatch)
    assert get_settings() == Settings()


def test_changed_replaces_fields_inside_groups_and_keeps_the_rest():
    s = Settings().changed(db={"name": "other", "port": 6000}, retrieval={"search_k": 4})
    assert (s.db.name, s.db.port, s.retrieval.search_k) == ("other", 6000, 4)
    assert (s.db.user, s.retrieval.rerank_top_k, s.llm) == ("rag", 3, Settings().llm)
    with pytest.raises(TypeError):
        Settings().changed(db={"search_k": 4})


def test_every_variable_is_documented():
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert [name for name in config.variables() if f"`{name}`" not in page and f"/ `{name}`" not in page] == []
