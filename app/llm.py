"""LLM inference (§4.4): a local GGUF model through LangChain's LlamaCpp, loaded lazily once, or,
with LLM_BASE_URL, any OpenAI-compatible server (llama.cpp's llama-server, vLLM, TGI, Ollama's /v1)
through LangChain's ChatOpenAI: the same prompt as chat messages, the same stop sequences."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from app.config import Settings, get_settings, mask_url
from app.config.urls import split_query
from app.errors import LLMUnavailableError
from app.models.locate import resolve_llm_path
from app.models.resources import cached
from app.models.servers import basic_auth_headers
from app.models.servers import server_error as _server_error

if TYPE_CHECKING:
    from langchain_community.llms import LlamaCpp

# Prompt tokens evaluated per batch. LangChain's LlamaCpp defaults to 8, llama-cpp-python to 512.
N_BATCH = 512

# Generation ends where the answer ends: a small model otherwise goes on to invent the next
# "質問:" turn, or to copy the next numbered context ("\n[2]（出典: …"), as Qwen 1.5B did in `make demo`.
# Only a context's whole header stops it (issue 39): the earlier "\n[" and "（出典" also cut answers the
# model was still writing — a list whose line starts with a citation (`以下の通りです。\n\n1. [2]`), a
# value after a citation written with its source (`…キーは、[3]（出典: …）「s」`); a source named inline
# is removed by the citation pass (app.workflow.checks.citations).
CONTEXT_HEADERS = [f"\n[{n}]（出典" for n in range(1, 10)]
STOP_SEQUENCES = ["\n質問:", "\n質問：", "指示:", *CONTEXT_HEADERS, "\n\n\n", "</s>", "<|im_end|>", "<|endoftext|>"]


def get_llm(settings: Settings | None = None):
    """Return the LLM for these settings: LlamaCpp, loading the GGUF file on first use, or, with
    LLM_BASE_URL, a ChatOpenAI client of that server."""
    s = settings or get_settings()
    if s.llm.base_url:
        key = (
            s.llm.base_url,
            s.llm.api_key,
            s.llm.url_auth,
            s.llm.server_model,
            s.llm.max_tokens,
            s.llm.temperature,
            s.llm.timeout_s,
            s.llm.max_retries,
        )
        return cached("llm", key, lambda: _server_llm(s))
    key = (s.llm.model_path, str(s.models.dir), s.llm.n_ctx, s.llm.max_tokens, s.llm.n_threads, s.llm.temperature)
    return cached("llm", key, lambda: _load_llm(s))


def _load_llm(s: Settings) -> LlamaCpp:
    path = resolve_llm_path(s.llm.model_path, s.models.dir, s.llm.model_path_is_default)
    from langchain_community.llms import LlamaCpp

    return LlamaCpp(
        model_path=str(path),
        n_ctx=s.llm.n_ctx,
        max_tokens=s.llm.max_tokens,
        n_threads=s.llm.n_threads,
        n_batch=N_BATCH,
        # LangChain's LlamaCpp passes RoPE base 10000 and scale 1 to every model unless told otherwise;
        # 0 lets llama.cpp read them from the GGUF (Qwen2.5's base is 1,000,000).
        rope_freq_base=0.0,
        rope_freq_scale=0.0,
        temperature=s.llm.temperature,
        stop=STOP_SEQUENCES,
        verbose=False,
    )


def _server_llm(s: Settings):
    """ChatOpenAI on LLM_BASE_URL: timeouts, and retries with exponential backoff, are the OpenAI
    client's own. Nothing is contacted until the first question."""
    from langchain_openai import ChatOpenAI

    bare, query = split_query(s.llm.base_url)
    return ChatOpenAI(
        default_headers=basic_auth_headers(s.llm.url_auth) or None,  # a user:password from LLM_BASE_URL
        base_url=bare,
        default_query=query or None,  # LLM_BASE_URL's query string (an api_key=… some gateways want)
        api_key=s.llm.api_key or "no-key",  # local servers want none; the client wants a non-empty one
        model=s.llm.server_model,
        temperature=s.llm.temperature,
        max_tokens=s.llm.max_tokens,  # sent as OpenAI's max_completion_tokens, which llama.cpp's servers ignore:
        extra_body={"max_tokens": s.llm.max_tokens},  # so also under the name they read
        stop=STOP_SEQUENCES,
        timeout=s.llm.timeout_s,
        max_retries=s.llm.max_retries,
    )


def with_options(llm: object, stop: list[str], max_tokens: int) -> object:
    """The same model (the loaded weights or the server client shared, nothing reloaded) with other
    stop sequences and answer length: the graph's map, reduce and extraction calls write JSON and
    lists, which the answer's stop sequences (``\n[`` …) would cut. Any other object is returned as it is."""
    from langchain_core.language_models import BaseLanguageModel

    if not isinstance(llm, BaseLanguageModel) or not hasattr(llm, "stop"):
        return llm
    update: dict = {"stop": list(stop), "max_tokens": max_tokens}
    if getattr(llm, "extra_body", None) is not None:
        update["extra_body"] = {**llm.extra_body, "max_tokens": max_tokens}  # llama.cpp servers read this name
    return llm.model_copy(update=update)


def is_chat_model(llm: object) -> bool:
    """True for a LangChain chat model (messages in, a message out), False for a text LLM."""
    from langchain_core.language_models import BaseChatModel

    return isinstance(llm, BaseChatModel)


def model_name(llm: object) -> str:
    """A short name for reports: the GGUF file name, the server's model name, or the class name."""
    path = getattr(llm, "model_path", None)
    if path:
        return str(path).rsplit("/", 1)[-1]
    if is_chat_model(llm) and getattr(llm, "model_name", None):
        return f"{llm.model_name} at {mask_url(str(getattr(llm, 'openai_api_base', '?')))}"
    return type(llm).__name__


def server_error(exc: BaseException, llm: object, streaming: bool = False) -> LLMUnavailableError | None:
    """The one-line error for a failure of the LLM server, or None for anything else (app.models.servers)."""
    url = getattr(llm, "openai_api_base", None) or "LLM_BASE_URL"
    return _server_error(exc, "LLM", url, "LLM_BASE_URL", LLMUnavailableError, streaming)  # type: ignore[return-value]


@lru_cache(maxsize=4)
def _chat_formatter(template: str, bos: str, eos: str):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    return Jinja2ChatFormatter(template=template, bos_token=bos, eos_token=eos)


def _token_text(client, token_id: int) -> str:
    """Text of a special token (as llama-cpp-python does when it reads the chat template)."""
    return client._model.token_get_text(token_id) if token_id != -1 else ""


def as_model_input(prompt: str, llm: object, system: str | None = None) -> str:
    """Wrap ``prompt`` as a user turn (after ``system``, if given) in the GGUF's chat template, if it has one.

    Instruction-tuned GGUFs (Qwen2.5, SmolLM2) answer far better in their chat
    format; a base model such as Llama-2-7B has no template and gets the system
    text, a blank line and the prompt as they are.
    """
    client = getattr(llm, "client", None)
    metadata = getattr(client, "metadata", None) or {}
    template = metadata.get("tokenizer.chat_template")
    if not template:
        return f"{system}\n\n{prompt}" if system else prompt
    bos, eos = (_token_text(client, client.token_bos()), _token_text(client, client.token_eos()))
    formatter = _chat_formatter(template, bos, eos)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return formatter(messages=messages).prompt


def generate(
    prompt: str, llm: object | None = None, on_token: Callable[[str], None] | None = None, system: str | None = None
) -> str:
    """Return the model's completion of ``prompt``, stripped.

    With ``on_token``, the completion is streamed and each piece is passed to it
    as it arrives. Raises ValueError for a None or blank prompt.
    """
    if prompt is None or not str(prompt).strip():
        raise ValueError("prompt must be a non-empty string")
    model = llm if llm is not None else get_llm()
    if is_chat_model(model):
        return _generate_chat(prompt, model, on_token, system)
    model_input = as_model_input(prompt, model, system)
    if on_token is None:
        return str(model.invoke(model_input)).strip()
    pieces = []
    for piece in model.stream(model_input):
        pieces.append(str(piece))
        on_token(str(piece))
    return "".join(pieces).strip()


def _generate_chat(prompt: str, model, on_token: Callable[[str], None] | None, system: str | None) -> str:
    """:func:`generate` for a chat model (LLM_BASE_URL): the server applies the model's chat template."""
    from langchain_core.messages import HumanMessage, SystemMessage

    messages = ([SystemMessage(system)] if system else []) + [HumanMessage(prompt)]
    pieces: list[str] = []
    try:
        if on_token is None:
            return str(model.invoke(messages).content).strip()
        for chunk in model.stream(messages):
            piece = str(chunk.content)
            if piece:
                pieces.append(piece)
                on_token(piece)
        return "".join(pieces).strip()
    except Exception as exc:
        mapped = server_error(exc, model, streaming=bool(pieces))
        if mapped is None:
            raise
        raise mapped from None
