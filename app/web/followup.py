"""Follow-up questions: ``それは土日も？`` after ``サポート窓口の受付時間は？`` is searched as
``サポート窓口の受付時間は土日も？``. Rules, no model: a follow-up that points back (それ, その, では …)
or is too short to stand alone gets the previous question (its topic, or the whole of it); any other
question stands alone.
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


def split_topic(text: str) -> tuple[str, str] | None:
    """``(topic, rest)`` at the first topic marker は: not the は of には or では (``開くにはどのキー``
    names no topic), and ``XとはY`` gives X (``dpkg とは何ですか`` → ``dpkg``); None when there is none."""
    start = 0
    while (at := text.find("は", start)) > 0:
        before = text[at - 1]
        if before == "と" and at > 1:
            return text[: at - 1].rstrip(), text[at + 1 :]
        if before not in "にでと":
            return text[:at], text[at + 1 :]
        start = at + 1
    return None


def topic_of(question: str) -> str:
    """The previous question's topic: what stands before its topic marker は
    (``サポート窓口は何時まで受け付けていますか？`` → ``サポート窓口``), else the question without its
    end punctuation and question ending (``VPNの接続方法を教えてください`` → ``VPNの接続方法``)."""
    topic = question.strip().rstrip("？?。.！! 　")
    split = split_topic(topic)
    if split and all(split):
        return split[0]
    for ending in ENDINGS:
        if topic.endswith(ending) and len(topic) > len(ending):
            return topic[: -len(ending)]
    return topic


def strip_connective(question: str) -> str:
    """``question`` without a leading connective (``では、土日は？`` → ``土日は？``)."""
    for connective in CONNECTIVES:
        if question.startswith(connective) and len(question) > len(connective):
            return question[len(connective) :].lstrip("、, 　")
    return question


def leans_on_previous(question: str) -> bool:
    """Whether ``question`` needs the previous one to be understood: it starts with a connective,
    points back (それ, その, 同じ …), or is too short to name its own topic."""
    asked = question.strip()
    body = strip_connective(asked)
    return body != asked or len(body) < SHORT or any(word in body for word in ANAPHORA)


def standalone(question: str, history: Sequence[str]) -> str:
    """``question`` as a question that stands alone, given the earlier questions as searched
    (``history``, oldest first); unchanged when there is no history or it needs none.

    When the previous question says something about its topic (``サポート窓口は何時まで…ますか``),
    a follow-up that refers back is searched after the whole of it (``…ますか。土日も？``), so
    nothing it asked is lost; when it only names its topic (``サポート窓口の受付時間は？``), the
    topic takes the place of それ (``サポート窓口の受付時間は土日も？``)."""
    asked = question.strip()
    if not history or not history[-1].strip():
        return asked
    previous = history[-1].strip().rstrip("？?。.！! 　")
    split = split_topic(previous)
    predicate = bool(split and all(split))
    topic = topic_of(previous)
    body = strip_connective(asked)
    for determiner in DETERMINERS:
        if body.startswith(determiner):
            return f"{topic}の{body[len(determiner) :]}"
    for pronoun in PRONOUNS:
        if body.startswith(pronoun):
            remainder = body[len(pronoun) :]
            return f"{previous}。{remainder}" if predicate else f"{topic}は{remainder}"
    if leans_on_previous(asked):
        return f"{previous}。{body}" if predicate else f"{topic}について、{body}"
    return asked
