"""llm.py: lazy LlamaCpp loading, parameters, model resolution, generate()."""
from types import SimpleNamespace

import pytest

from app import llm
from app.errors import ModelNotFoundError


@pytest.fixture
def fake_llamacpp(mocker):
    return mocker.patch("langchain_community.llms.LlamaCpp")


@pytest.fixture
def gguf(tmp_path, clean_env):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    clean_env.setenv("LLM_MODEL_PATH", str(path))
    return path


def test_get_llm_passes_spec_parameters(fake_llamacpp, gguf):
    llm.get_llm()
    kw = fake_llamacpp.call_args.kwargs
    assert kw["model_path"] == str(gguf)
    assert (kw["n_ctx"], kw["max_tokens"], kw["verbose"]) == (2048, 300, False)


def test_get_llm_sets_stop_sequences_and_threads(fake_llamacpp, gguf, clean_env):
    clean_env.setenv("LLM_N_THREADS", "2")
    llm.get_llm()
    kw = fake_llamacpp.call_args.kwargs
    assert {"\n質問:", "指示:", "\n[", "（出典", "<|im_end|>"} <= set(kw["stop"]) and kw["n_threads"] == 2


def test_get_llm_is_a_singleton(fake_llamacpp, gguf):
    assert llm.get_llm() is llm.get_llm()
    assert fake_llamacpp.call_count == 1


def test_get_llm_missing_file_names_path_and_make_models(fake_llamacpp, tmp_path, clean_env):
    clean_env.setenv("LLM_MODEL_PATH", str(tmp_path / "nope.gguf"))
    with pytest.raises(ModelNotFoundError) as err:
        llm.get_llm()
    assert str(err.value) == f"LLM model file not found: {tmp_path / 'nope.gguf'}; run `make models`"
    fake_llamacpp.assert_not_called()


def test_get_llm_default_path_falls_back_to_standin(fake_llamacpp, tmp_path, clean_env):
    (tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    llm.get_llm()
    assert fake_llamacpp.call_args.kwargs["model_path"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.mark.parametrize("present, chosen", [
    (["SmolLM2-135M-Instruct.Q4_1.gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"],
     "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    (["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"],
     "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
])
def test_get_llm_default_path_prefers_the_japanese_capable_models(fake_llamacpp, tmp_path, clean_env, present, chosen):
    for name in present:
        (tmp_path / name).write_bytes(b"GGUF")
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    llm.get_llm()
    assert fake_llamacpp.call_args.kwargs["model_path"] == str(tmp_path / chosen)


def test_get_llm_explicit_path_never_falls_back(fake_llamacpp, tmp_path, clean_env):
    (tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    clean_env.setenv("MODELS_DIR", str(tmp_path))
    clean_env.setenv("LLM_MODEL_PATH", str(tmp_path / "mine.gguf"))
    with pytest.raises(ModelNotFoundError):
        llm.get_llm()


def test_generate_returns_stripped_completion():
    from langchain_core.language_models.fake import FakeListLLM

    assert llm.generate("質問", llm=FakeListLLM(responses=["  回答です。\n"])) == "回答です。"


@pytest.mark.parametrize("prompt", [None, "", "   "])
def test_generate_rejects_blank_prompt(prompt):
    with pytest.raises(ValueError, match="prompt must be a non-empty string"):
        llm.generate(prompt, llm=object())


def test_generate_uses_singleton_when_no_llm_given(fake_llamacpp, gguf, mock_llm_response):
    fake_llamacpp.return_value.invoke.return_value = mock_llm_response["choices"][0]["text"]
    fake_llamacpp.return_value.client = None
    assert llm.generate("プロンプト") == "サポート窓口の受付時間は平日9時から18時までです。"


def test_as_model_input_without_chat_template_is_unchanged():
    fake = SimpleNamespace(client=SimpleNamespace(metadata={}))
    assert llm.as_model_input("以下の情報", fake) == "以下の情報"


def test_as_model_input_wraps_in_chat_template():
    template = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}<|assistant|>"
    client = SimpleNamespace(metadata={"tokenizer.chat_template": template},
                             token_bos=lambda: -1, token_eos=lambda: -1)
    out = llm.as_model_input("質問:X\n回答:", SimpleNamespace(client=client))
    assert out == "<|user|>質問:X\n回答:<|end|><|assistant|>"


def test_model_name_is_the_gguf_file_name():
    assert llm.model_name(SimpleNamespace(model_path="/a/b/x.gguf")) == "x.gguf"
    assert llm.model_name(object()) == "object"


def test_generate_streams_pieces_to_on_token():
    from langchain_core.language_models.fake import FakeStreamingListLLM

    pieces = []
    out = llm.generate("質問", llm=FakeStreamingListLLM(responses=[" 回答です。"]), on_token=pieces.append)
    assert out == "回答です。" and "".join(pieces) == " 回答です。" and len(pieces) > 1


def test_get_llm_uses_batch_512(fake_llamacpp, gguf):
    llm.get_llm()
    assert fake_llamacpp.call_args.kwargs["n_batch"] == 512


class TemplateClient:
    """A llama.cpp client stand-in with a ChatML template (as Qwen2.5's GGUF carries)."""

    metadata = {"tokenizer.chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                                          "<|im_end|>\n{% endfor %}<|im_start|>assistant\n"}

    def token_bos(self):
        return -1

    def token_eos(self):
        return 7

    class _model:
        @staticmethod
        def token_get_text(token_id):
            return "<|im_end|>"


def test_as_model_input_puts_the_system_text_in_its_own_turn():
    model = type("M", (), {"client": TemplateClient()})()
    assert llm.as_model_input("資料と質問", model, system="指示") == (
        "<|im_start|>system\n指示<|im_end|>\n<|im_start|>user\n資料と質問<|im_end|>\n<|im_start|>assistant")
    assert llm.as_model_input("p", model) == "<|im_start|>user\np<|im_end|>\n<|im_start|>assistant"


def test_as_model_input_without_a_template_joins_system_and_prompt():
    assert llm.as_model_input("p", object(), system="s") == "s\n\np"
    assert llm.as_model_input("p", object()) == "p"
