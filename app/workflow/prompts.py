"""Prompts (§4.9): the spec's template, the cited style's system text and user turn, the numbered
contexts and the refusal sentence (pure functions, no model, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence

from app.config import PROMPT_STYLES
from app.text.keywords import query_tokens, sentences, tokenize

ABSTAIN_ANSWER = "資料に記載がありません"


SPEC_TEMPLATE = "以下の情報を基に回答してください:\n\n{contexts}\n\n質問:{query}\n回答:"


# The cited style is a chat: the instructions as the system message, the numbered contexts and the
# question as the user message (app.llm.as_model_input). Measured on Qwen2.5-Coder-1.5B: one user turn
# holding everything made it echo the prompt or answer "[1]"; this split answered 9 of 9 answerable trial
# questions correctly (README, "Answers").
CITED_SYSTEM = (
    "あなたは社内資料に基づいて質問に答えるアシスタントです。"
    "ユーザーが示す資料だけを根拠に、質問に日本語の1〜2文で具体的に答えてください。"
    "数値や名称は資料の表記のまま書き、文の最後に根拠の資料番号を [1] のように付けてください。"
    "資料に答えがない場合は「" + ABSTAIN_ANSWER + "」とだけ答えてください。"
)


CITED_TEMPLATE = "資料:\n{contexts}\n\n質問: {query}"


# Local graph search: the entity, relationship and report tables (drawn from the same documents) before them.
GRAPH_PREAMBLE = "知識グラフ（資料から抽出したエンティティ・関係・要約）:\n{tables}\n\n"


def focus_context(text: str, query: str, max_chars: int) -> str:
    """The sentences of ``text`` that share the most keyword tokens with ``query``, plus their
    neighbours, in document order, at most ``max_chars`` characters (``text`` as it is when it
    already fits or ``max_chars`` is 0).

    Each sentence scores the number of distinct query tokens (app.text.keywords bigrams)
    it holds; the best sentences are taken first, each with the sentence before
    and after it while they fit.
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text

    parts = sentences(text)
    wanted = set(query_tokens(query))
    scores = [len(wanted & set(tokenize(part))) for part in parts]
    chosen: set[int] = set()
    used = 0
    for best in sorted(range(len(parts)), key=lambda i: (-scores[i], i)):
        for i in (best, best - 1, best + 1):
            if 0 <= i < len(parts) and i not in chosen and used + len(parts[i]) <= max_chars:
                chosen.add(i)
                used += len(parts[i])
        if used >= max_chars:
            break
    return (
        "".join(parts[i] if i - 1 in chosen or i == min(chosen) else "…" + parts[i] for i in sorted(chosen))
        if chosen
        else text[:max_chars]
    )


def numbered_context(number: int, source: str, text: str) -> str:
    """One context block of the cited prompt: ``[n]（出典: source）`` then the text."""
    return f"[{number}]（出典: {source}）\n{text.strip()}"


def system_prompt(style: str) -> str | None:
    """The system message of ``style`` (``cited``, ``evidence``: the instructions), or None (``spec``: one prompt)."""
    return CITED_SYSTEM if style in ("cited", "evidence") else None


def build_prompt(
    query: str, contexts: Sequence[str], sources: Sequence[str] | None = None, style: str = "cited", preamble: str = ""
) -> str:
    """The prompt (user message) for ``style``; ``cited`` numbers the contexts with their sources
    (``unknown`` if absent) and goes with :func:`system_prompt`. ``preamble`` (local graph search's
    tables) comes first, under GRAPH_PREAMBLE."""
    head = GRAPH_PREAMBLE.format(tables=preamble.strip()) if preamble.strip() else ""
    if style == "spec":
        return head + SPEC_TEMPLATE.format(contexts="\n\n".join(contexts), query=query)
    if style not in ("cited", "evidence"):
        raise ValueError(f"prompt style must be one of {', '.join(PROMPT_STYLES)}, got {style!r}")
    sources = list(sources or [])
    blocks = [
        numbered_context(i, sources[i - 1] if i <= len(sources) else "unknown", text)
        for i, text in enumerate(contexts, start=1)
    ]
    return head + CITED_TEMPLATE.format(contexts="\n\n".join(blocks), query=query)
