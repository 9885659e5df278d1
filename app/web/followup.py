"""Follow-up questions: ``それは土日も？`` after ``サポート窓口の受付時間は？`` is searched as
``サポート窓口の受付時間は土日も？``. Rules, no model: a follow-up that points back (それ, その, では …)
or is too short to stand alone gets the previous question's topic; any other question stands alone.
The page shows what was searched, so a wrong guess is visible."""

from __future__ import annotations

from collections.abc import Sequence

# Words at the start of a follow-up that only join it to the previous question.
CONNECTIVES = ("それでは", "それなら", "じゃあ", "では", "じゃ", "あと", "また", "ちなみに", "なお", "では、", "で、")
# "It is …" forms whose subject is the previous question's topic, replaced by it.
PRONOUNS = ("それって", "それは", "これは", "あれは", "そこは", "そちらは")
# "That …" forms, replaced by "<topic>の".
DETERMINERS = ("その", "この", "あの")
# Words anywhere in a question that point back to an earlier one.
ANAPHORA = ("それ", "その", "これ", "この", "あれ", "あの", "そこ", "そちら", "同じ", "前の質問")
# Question endings stripped from the previous question to leave its topic (longest first).
ENDINGS = tuple(
    sorted(
        (
            "について教えてください",
            "を教えてください",
            "を教えて",
            "は何ですか",
            "はいつですか",
            "はどこですか",
            "はいくらですか",
            "はどれくらいですか",
            "ですか",
            "とは",
            "は",
            "が",
            "を",
        ),
        key=len,
        reverse=True,
    )
)
SHORT = 10  # characters: a question shorter than this rarely names its own topic ("土日は？")


def topic_of(question: str) -> str:
    """The previous question without its end punctuation and question ending:
    ``サポート窓口の受付時間は？`` → ``サポート窓口の受付時間``."""
    topic = question.strip().rstrip("？?。.！! 　")
    for ending in ENDINGS:
        if topic.endswith(ending) and len(topic) > len(ending):
            return topic[: -len(ending)]
    return topic


def standalone(question: str, history: Sequence[str]) -> str:
    """``question`` as a question that stands alone, given the earlier questions as searched
    (``history``, oldest first); unchanged when there is no history or it needs none."""
    asked = question.strip()
    if not history or not history[-1].strip():
        return asked
    topic = topic_of(history[-1])
    body = asked
    for connective in CONNECTIVES:
        if body.startswith(connective) and len(body) > len(connective):
            body = body[len(connective) :].lstrip("、, 　")
            break
    for pronoun in PRONOUNS:
        if body.startswith(pronoun):
            return f"{topic}は{body[len(pronoun) :]}"
    for determiner in DETERMINERS:
        if body.startswith(determiner):
            return f"{topic}の{body[len(determiner) :]}"
    if body != asked or len(body) < SHORT or any(word in body for word in ANAPHORA):
        return f"{topic}について、{body}"
    return asked
