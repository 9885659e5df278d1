"""Answers that say nothing the question did not: the question given back (``契約は自動で更新されます``
to ``契約は自動で更新されますか？``), and answers that stop before their value (``…を表示するキーは、[3]``,
``以下の通りです。`` with nothing after it, ``勤務時間と休憩は、[1]の通りです``). Pure functions over
the content terms of :mod:`app.workflow.checks.support` (numbers and dates in one form, katakana/kanji
pairs, Latin words and numbers).

Such an answer is withdrawn (issue 39): the passage it cites is shown instead when it holds enough of the
question (:func:`app.workflow.checks.quote.evidence_instead`), and the answer is ``資料に記載がありません``
otherwise.
"""

from __future__ import annotations

import re
import unicodedata

from app.workflow.checks.citations import CITATION, without_citations
from app.workflow.checks.support import content_terms

# The end of a sentence that stops before its value: a particle or comma before it, a colon, or "as follows"
# with nothing following.
_CUT_END = re.compile(
    r"(?:[、，,:：]|(?<=[^\s])[はがを]|(?:以下|次|下記)の(?:通り|とおり)(?:です|となります|になります)?)$"
)
# A list's marker with nothing after it (``1.``, ``-``): the list was cut before its first item.
_MARKER = re.compile(r"^\s*(?:\d+[.)．]?|[-・*•])\s*$")
# A citation standing in for the value: ``[1]の通りです``, ``[2]に記載されています``.
_POINTER = re.compile(r"[\[［【]\s*[0-9０-９]+\s*[\]］】]\s*(?:の(?:通り|とおり|内容)|に(?:記載|示|書か|あ))")
# Sentences (and lines) of an answer.
_SENTENCES = re.compile(r"[。．!?！？\n]+")
# Words of a sentence that points at what follows instead of stating it.
_POINTING = {"以下", "下記"}


def adds_nothing(answer: str, query: str) -> bool:
    """True when every content term of ``answer`` (citations aside) is a term of ``query``, the answer
    having at least one: the question given back as its own answer. An answer with no content term
    (``はい``) is not judged here."""
    terms = content_terms(answer)
    return bool(terms) and not (terms - content_terms(query))


def stops_before_value(answer: str, query: str = "") -> bool:
    """True when ``answer`` ends where its value should begin (``…キーは、[3]``, ``以下の通りです。``,
    ``手順は次の通りです:\\n1.``) or points at a context instead of stating it (``[1]の通りです``), and no
    other sentence of it states something the question did not (``18時までです。詳しくは`` has its value)."""
    parts = [p for p in _SENTENCES.split(unicodedata.normalize("NFKC", answer or "")) if CITATION.sub("", p).strip()]

    def cut(i: int, part: str) -> bool:
        plain = CITATION.sub("", part).rstrip(" \t.")
        return bool(_POINTER.search(part) or _CUT_END.search(plain) or (i > 0 and _MARKER.match(plain)))

    cuts = [cut(i, p) for i, p in enumerate(parts)]
    if not any(cuts):
        return False
    asked = content_terms(query) | _POINTING
    return not any(content_terms(p) - asked for p, is_cut in zip(parts, cuts, strict=True) if not is_cut)


def restated(answer: str, query: str) -> str | None:
    """Why ``answer`` says nothing the question did not: ``restated`` (only the question's own terms),
    ``incomplete`` (it stops before its value, or points at a context instead), or None."""
    if not without_citations(answer).strip():
        return None  # nothing but citations: the model check's case
    if stops_before_value(answer, query):
        return "incomplete"
    if adds_nothing(answer, query):
        return "restated"
    return None
