"""Why an answer the model gave is withdrawn, and how each face says so: the one home of the reasons
and their Japanese wording (the command line's note, the page's and MCP's status line).

A withdrawn answer's ``abstained`` is one of :data:`WITHDRAWN`: a number (``unsupported``) or words
(``unstated``) no context states, or an answer that says nothing the question asked
(:data:`NOT_ANSWERING`: it restates the question, stops midway, or cites a passage off the question).
``wrong_cell`` is the passage shown instead of another cell of the cited table row. Pure: no imports
beyond the standard library.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NOT_ANSWERING", "WITHDRAWN", "status_line", "streamed_note"]

NOT_ANSWERING = ("restated", "incomplete", "off_topic")
WITHDRAWN = ("unsupported", "unstated", *NOT_ANSWERING)

# the page's and MCP's words for an answer that said nothing the question asked
_NOT_ANSWERING_WORDS = {
    "restated": "回答が質問の繰り返しだったため取り消しました。",
    "incomplete": "回答が途中で切れていたため取り消しました。",
    "off_topic": "回答の出典が質問とずれていたため取り消しました。",
}


def status_line(abstained: str | None, withdrawn: Sequence[str] = ()) -> str | None:
    """The one line the page and MCP show above an answer that is not the model's (None when it is):
    the words no document holds, the reason it said nothing the question asked, or no answer found."""
    if not abstained:
        return None
    if withdrawn:
        named = "".join(f"「{w}」" for w in withdrawn)
        return f"回答に資料にない{named}が含まれていたため取り消しました。近い出典を示します。"
    if abstained in _NOT_ANSWERING_WORDS:
        return _NOT_ANSWERING_WORDS[abstained] + "資料の該当箇所を示します。"
    return "資料に答えが見つかりませんでした。近い出典を示します。"


def streamed_note(unstated: Sequence[str], answer: str, kind: str = "unsupported") -> str:
    """The command line's note after a streamed answer that was withdrawn: why, naming the numbers or
    words no document holds, then the answer given instead."""
    if kind in NOT_ANSWERING:
        return f"（取り消し: 上の回答は質問に答えていません）\n{answer}"
    if kind == "wrong_cell":
        return f"（取り消し: 上の回答は質問された列の値ではありません）\n{answer}"
    if kind == "unstated":
        named = "、".join(f"「{w}」" for w in unstated)
        return f"（取り消し: 上の回答の{named or '内容'}はどの資料にも書かれていません）\n{answer}"
    return f"（取り消し: 上の回答の数値 {'、'.join(unstated)} はどの資料にも書かれていません）\n{answer}"
