"""Follow-up questions rewritten by the loaded LLM (``FOLLOWUP_REWRITE=llm``): ``それはいつまでに？``
after ``ノートPCをなくしたら誰に知らせればいいですか？`` becomes one question that stands alone.

The model is asked only when the rules (:mod:`app.web.followup`) see that a question leans on the
previous one; its one-line answer is taken when it looks like a question about the same thing, and
the rules' version otherwise (an empty line, an answer instead of a question, a runaway line).
The rules against the model on two follow-up sets: docs/web.md."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from app.web.followup import leans_on_previous, standalone

log = logging.getLogger(__name__)

SYSTEM = (
    "あなたは社内文書の検索を手伝います。会話の最後の質問を、前の質問を読まなくても意味が通じる"
    "一つの質問に書き換えてください。前の質問から話題（製品名・手続き・対象など）を補い、"
    "「それ」「その」などの指示語は具体的な言葉に置き換えます。質問の答えや説明は書かず、"
    "書き換えた質問を1行だけ出力してください。"
)
# Two worked examples (not drawn from any evaluation set): an ellipsis and a pronoun.
EXAMPLES = (
    ("経費精算の締め日はいつですか？", "交通費は？", "交通費の経費精算の締め日はいつですか？"),
    ("健康診断はいつ受けられますか？", "その費用は会社が出しますか？", "健康診断の費用は会社が出しますか？"),
)
LONGEST = 3  # a rewrite longer than this many times the two questions together is a runaway


def rewrite_prompt(question: str, previous: str) -> str:
    """The user message: the examples, then the previous and the last question."""
    shown = [f"前の質問: {before}\n最後の質問: {after}\n書き換え: {rewritten}" for before, after, rewritten in EXAMPLES]
    shown.append(f"前の質問: {previous}\n最後の質問: {question}\n書き換え:")
    return "\n\n".join(shown)


def read_rewrite(text: str, question: str, previous: str) -> str | None:
    """The model's rewrite from its reply (first line, a ``書き換え:`` label and quotes removed);
    None when it is empty, runs away, repeats the previous question or an example (a small model
    copies what it was shown), or reads as a statement rather than a question."""
    line = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    line = line.removeprefix("書き換え:").strip().strip("「」\"'").strip()
    if not line or len(line) > LONGEST * (len(question) + len(previous)):
        return None
    shown = {previous, *(text for example in EXAMPLES for text in example)}
    if line.rstrip("？?。") in {text.rstrip("？?。") for text in shown}:
        return None
    if not line.rstrip("。").endswith(("？", "?", "か")):  # an answer (``…は4桁です。``), not a question
        return None
    return line


def llm_standalone(question: str, history: Sequence[str], complete: Callable[[str, str], str]) -> str:
    """``question`` made to stand alone after ``history`` by the model (``complete(prompt, system)``
    returns its reply); unchanged when the rules see no need, the rules' version when the reply is
    unusable or the model fails."""
    asked = question.strip()
    if not history or not history[-1].strip() or not leans_on_previous(asked):
        return asked
    previous = history[-1].strip()
    try:
        reply = complete(rewrite_prompt(asked, previous), SYSTEM)
    except Exception as exc:  # the rewrite is a nicety: the rules' version is searched instead
        log.warning("the follow-up rewrite failed (%s); searching the rules' version", type(exc).__name__)
        reply = ""
    return read_rewrite(reply, asked, previous) or standalone(asked, history)
