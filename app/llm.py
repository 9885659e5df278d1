"""LLM inference (§4.4): a local GGUF model through LangChain's LlamaCpp, loaded lazily once."""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Callable

from app.config import Settings, get_settings
from app.models import resolve_llm_path

if TYPE_CHECKING:
    from langchain_community.llms import LlamaCpp

# Generation ends where the answer ends: a small model otherwise goes on to
# invent the next "質問:" turn of the prompt format.
# Prompt tokens evaluated per batch. LangChain's LlamaCpp defaults to 8, llama-cpp-python to 512.
N_BATCH = 512

# Generation ends where the answer ends: a small model otherwise goes on to invent the next
# "質問:" turn, or to copy the next numbered context ("\n[2]（出典: …"), as Qwen 1.5B did in `make demo`.
STOP_SEQUENCES = ["\n質問:", "\n質問：", "指示:", "\n[", "（出典", "\n\n\n", "</s>", "<|im_end|>",
                  "<|endoftext|>"]


def get_llm(settings: Settings | None = None) -> "LlamaCpp":
    """Return the LlamaCpp model for these settings, loading the GGUF file on first use."""
    from app.resources import cached

    s = settings or get_settings()
    key = (s.llm_model_path, str(s.models_dir), s.llm_n_ctx, s.llm_max_tokens, s.llm_n_threads, s.llm_temperature)
    return cached("llm", key, lambda: _load_llm(s))


def _load_llm(s: Settings) -> "LlamaCpp":
    path = resolve_llm_path(s.llm_model_path, s.models_dir, s.llm_model_path_is_default)
    from langchain_community.llms import LlamaCpp

    return LlamaCpp(
        model_path=str(path),
        n_ctx=s.llm_n_ctx,
        max_tokens=s.llm_max_tokens,
        n_threads=s.llm_n_threads,
        n_batch=N_BATCH,
        temperature=s.llm_temperature,
        stop=STOP_SEQUENCES,
        verbose=False,
    )


def model_name(llm: object) -> str:
    """A short name for reports: the GGUF file name, or the class name for other LLMs."""
    path = getattr(llm, "model_path", None)
    return str(path).rsplit("/", 1)[-1] if path else type(llm).__name__


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


def generate(prompt: str, llm: object | None = None, on_token: Callable[[str], None] | None = None,
             system: str | None = None) -> str:
    """Return the model's completion of ``prompt``, stripped.

    With ``on_token``, the completion is streamed and each piece is passed to it
    as it arrives. Raises ValueError for a None or blank prompt.
    """
    if prompt is None or not str(prompt).strip():
        raise ValueError("prompt must be a non-empty string")
    model = llm if llm is not None else get_llm()
    model_input = as_model_input(prompt, model, system)
    if on_token is None:
        return str(model.invoke(model_input)).strip()
    pieces = []
    for piece in model.stream(model_input):
        pieces.append(str(piece))
        on_token(str(piece))
    return "".join(pieces).strip()
