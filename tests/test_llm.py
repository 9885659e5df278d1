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


def test_get_llm_lets_the_gguf_set_rope(fake_llamacpp, gguf):
    llm.get_llm()
    kw = fake_llamacpp.call_args.kwargs
    assert (kw["rope_freq_base"], kw["rope_freq_scale"]) == (0.0, 0.0)  # not LangChain's 10000 / 1


def test_get_llm_sets_stop_sequences_and_threads(fake_llamacpp, gguf, clean_env):
    clean_env.setenv("LLM_N_THREADS", "2")
    llm.get_llm()
    kw = fake_llamacpp.call_args.kwargs
    assert {"\n質問:", "指示:", "\n[1]（出典", "\n[9]（出典", "<|im_end|>"} <= set(kw["stop"]) and kw["n_threads"] == 2
    # issue 39: a list line starting with a citation, or a source named after a citation, is not an end
    assert not {"\n[", "（出典"} & set(kw["stop"])


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


@pytest.mark.parametrize(
    "present, chosen",
    [
        (
            ["SmolLM2-135M-Instruct.Q4_1.gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"],
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        ),
        (
            ["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"],
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        ),
    ],
)
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
    client = SimpleNamespace(metadata={"tokenizer.chat_template": template}, token_bos=lambda: -1, token_eos=lambda: -1)
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

    metadata = {
        "tokenizer.chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
        "<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
    }

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
        "<|im_start|>system\n指示<|im_end|>\n<|im_start|>user\n資料と質問<|im_end|>\n<|im_start|>assistant"
    )
    assert llm.as_model_input("p", model) == "<|im_start|>user\np<|im_end|>\n<|im_start|>assistant"


def test_as_model_input_without_a_template_joins_system_and_prompt():
    assert llm.as_model_input("p", object(), system="s") == "s\n\np"
    assert llm.as_model_input("p", object()) == "p"


def _server_settings(**changes):

    from app.config import Settings

    return Settings.from_env({"LLM_BASE_URL": "http://127.0.0.1:9/v1"}).changed(llm=changes)


def test_llm_base_url_gives_chat_openai_with_the_same_stop_sequences(clean_env):
    model = llm.get_llm(_server_settings(max_tokens=77, timeout_s=5, max_retries=1))
    assert type(model).__name__ == "ChatOpenAI" and llm.is_chat_model(model)
    assert (model.openai_api_base, model.model_name, model.max_tokens) == (
        "http://127.0.0.1:9/v1",
        "llama-2-7b.Q4_K_M.gguf",
        77,
    )
    assert (model.stop, model.request_timeout, model.max_retries, model.temperature) == (llm.STOP_SEQUENCES, 5, 1, 0.0)
    assert model.extra_body == {"max_tokens": 77}  # llama.cpp's servers ignore max_completion_tokens
    assert llm.model_name(model) == "llama-2-7b.Q4_K_M.gguf at http://127.0.0.1:9/v1"


def test_generate_sends_system_and_prompt_as_chat_messages():
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    seen = []

    class Recording(GenericFakeChatModel):
        def _generate(self, messages, *args, **kwargs):
            seen.append([(m.type, m.content) for m in messages])
            return super()._generate(messages, *args, **kwargs)

    fake = Recording(messages=iter([AIMessage(" 答えです。 "), AIMessage("ストリーム の 答え")]))
    assert llm.generate("質問", llm=fake, system="指示") == "答えです。"
    assert seen == [[("system", "指示"), ("human", "質問")]]
    pieces = []
    assert llm.generate("質問", llm=fake, on_token=pieces.append) == "ストリーム の 答え"
    assert "".join(pieces) == "ストリーム の 答え" and len(pieces) > 1


def test_server_errors_are_one_line():
    import httpx
    import openai

    model = llm.get_llm(_server_settings())
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    refused = openai.APIConnectionError(request=request)
    refused.__cause__ = httpx.ConnectError("[Errno 111] Connection refused")
    assert str(llm.server_error(refused, model)) == (
        "cannot reach the LLM server at http://127.0.0.1:9/v1 ([Errno 111] Connection refused); start it or fix "
        "LLM_BASE_URL"
    )
    assert str(llm.server_error(refused, model, streaming=True)) == (
        "the LLM server at http://127.0.0.1:9/v1 broke off the answer ([Errno 111] Connection refused)"
    )
    assert str(llm.server_error(openai.APITimeoutError(request=request), model)) == (
        "the LLM server at http://127.0.0.1:9/v1 did not answer in time (timeout and retries used up)"
    )
    busy = openai.InternalServerError("model overloaded", response=httpx.Response(503, request=request), body=None)
    assert (
        str(llm.server_error(busy, model))
        == "the LLM server at http://127.0.0.1:9/v1 answered HTTP 503: model overloaded"
    )
    assert llm.server_error(ValueError("x"), model) is None
