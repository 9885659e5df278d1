"""Prompts, citations and abstention: pure functions over the answer text (no model, no I/O).

Two prompt styles (``PROMPT_STYLE``):

* ``cited`` (default): a system message asks for a short answer taken only from
  the documents, cited as ``[1]``, or ``資料に記載がありません``; the user message
  holds the numbered contexts (``[1]（出典: faq.csv:r2）`` …) and the question;
* ``spec``: the spec's template (§4.9), contexts separated by blank lines.

Citations in an answer are checked mechanically: numbers that name no context
are dropped (:func:`clean_citations`, and :class:`CitationFilter` while streaming).
The abstention signals (:func:`question_coverage`, :func:`says_not_in_documents`,
:func:`unsupported_numbers`) are used by the generate node in app.graph.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from app.config import PROMPT_STYLES
from app.keywords import sentences

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

# [1] [12] [1, 2] [1][2] ［１］ 【1】 — half- or full-width brackets and digits.
_CITATION = re.compile(r"[\[［【]\s*([0-9０-９]+(?:\s*[,，、]\s*[0-9０-９]+)*)\s*[\]］】]")
# The model's own ways of saying the documents do not hold the answer.
_ABSTAIN = re.compile(
    r"記載(が|は)(ありません|ない)|記載されていません|"
    r"(情報|記述|記載)(が|は)(見つかりません|ありません|含まれていません)"
)


def focus_context(text: str, query: str, max_chars: int) -> str:
    """The sentences of ``text`` that share the most keyword tokens with ``query``, plus their
    neighbours, in document order, at most ``max_chars`` characters (``text`` as it is when it
    already fits or ``max_chars`` is 0).

    Each sentence scores the number of distinct query tokens (app.keywords bigrams)
    it holds; the best sentences are taken first, each with the sentence before
    and after it while they fit.
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    from app.keywords import query_tokens, tokenize

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


def _numbers(group: str) -> list[int]:
    """The numbers in the inside of one citation, e.g. ``1, 2`` → [1, 2]."""
    return [int(unicodedata.normalize("NFKC", n)) for n in re.findall(r"[0-9０-９]+", group)]


def cited_numbers(answer: str, n_contexts: int) -> list[int]:
    """The context numbers (1..n_contexts) cited in ``answer``, in order of first citation, no repeats."""
    seen: dict[int, None] = {}
    for match in _CITATION.finditer(answer or ""):
        for n in _numbers(match.group(1)):
            if 1 <= n <= n_contexts:
                seen.setdefault(n, None)
    return list(seen)


def without_citations(answer: str) -> str:
    """``answer`` with every citation removed (what the model actually said)."""
    return _CITATION.sub("", answer or "").strip()


def clean_citations(answer: str, n_contexts: int) -> str:
    """``answer`` with every citation rewritten as ``[n]`` and numbers outside 1..n_contexts dropped."""

    def fix(match: re.Match) -> str:
        valid = [n for n in _numbers(match.group(1)) if 1 <= n <= n_contexts]
        return "".join(f"[{n}]" for n in dict.fromkeys(valid))

    cleaned = _CITATION.sub(fix, answer or "")
    return re.sub(r"[ \t]+([。．、,.])", r"\1", cleaned).strip()


def says_not_in_documents(answer: str) -> bool:
    """True if the model says the documents do not hold the answer (``資料に記載がありません`` and kin)."""
    return bool(_ABSTAIN.search(unicodedata.normalize("NFKC", answer or "")))


def unsupported_numbers(answer: str, contexts: Sequence[str], query: str = "") -> list[str]:
    """Numbers in ``answer`` (citations aside) found in no context and not in the question, as the
    answer writes them (``2027年6月31日``, ``2``), in answer order, each once.

    A small model that does not find the answer tends to invent one with a
    number in it (``駐車場は2台分あります``); a number the documents never state
    is the cheapest mechanical sign of that. Numbers are compared by their
    keys (app.normalize): ``1,200`` = ``1200``, ``９時`` = ``9時``, ``06`` = ``6``,
    ``2002年7月19日`` = ``平成14年7月19日`` = ``2002-07-19``, and a part of a stated
    date is stated (``6月30日``, ``6月`` and ``2027年`` by ``2027-06-30``), and so is a
    date whose year and month-day are stated apart (``2027年度`` … ``6月30日``); a
    different date is not (``2027年6月31日``), nor a number inside another (``12``
    in ``2012``).
    """
    from app.normalize import is_stated, mentions, numbers

    stated = numbers(query).union(*(numbers(c) for c in contexts))
    unsupported: list[str] = []
    for mention in mentions(_CITATION.sub(" ", answer or "")):
        if not is_stated(mention, stated) and mention.surface not in unsupported:
            unsupported.append(mention.surface)
    return unsupported


# A code or version the question names: letters with digits (E3010, s390, ISO27001) or a dotted number (3.0, 22.04).
_CODE = re.compile(r"[A-Za-z][A-Za-z_-]*\d[A-Za-z0-9_-]*|\d+(?:\.\d+)+")


def absent_values(query: str, texts: Sequence[str]) -> list[str]:
    """The values the question names that no text holds: codes and versions (``E3010``, ``s390``,
    ``3.0``) and numbers of two or more digits or with a date (``2027年``, ``26.04``), compared as the
    number check compares them (app.normalize). A question about Debian 15 when the documents stop at
    12 names a value no candidate holds: answering it from a neighbour's row invents the answer.

    Single digits are left out (``3文字のコード``, ``2つ``: counts the question asks for, not values
    it names).
    """
    from app.normalize import contains, is_stated, mentions, numbers

    body = unicodedata.normalize("NFKC", query or "")
    stated = set().union(*(numbers(t) for t in texts)) if texts else set()
    joined = "\n".join(texts)
    absent = [code for code in dict.fromkeys(_CODE.findall(body)) if not contains(joined, code)]
    for mention in mentions(body):
        significant = len(re.sub(r"\D", "", mention.surface)) >= 2 or "-" in mention.key
        if significant and not is_stated(mention, stated) and not any(mention.surface in a for a in absent):
            absent.append(mention.surface)
    return absent


def question_coverage(query: str, contexts: Sequence[str]) -> float:
    """Share of the question's keyword tokens (app.keywords bigrams) that occur in at least one context.

    A question about something no retrieved chunk mentions (``退職金`` when no
    document has the word) scores low; a paraphrased question scores low too,
    which is why the threshold that uses it is set low (README, "Abstention").
    1.0 for a question without tokens.
    """
    from app.keywords import query_tokens, tokenize

    wanted = set(query_tokens(query))
    if not wanted:
        return 1.0
    found = set().union(*(tokenize(c) for c in contexts)) if contexts else set()
    return len(wanted & found) / len(wanted)


def best_matching_context(answer: str, contexts: Sequence[str], min_share: float = 0.5) -> int | None:
    """The number (1-based) of the context that shares the most keyword tokens with ``answer``, if it holds
    at least ``min_share`` of the answer's distinct tokens; None otherwise (or for an empty answer).

    Used when the model cites nothing: small models often copy the sentence
    they answer from, and this finds where it came from.
    """
    from app.keywords import tokenize

    tokens = set(tokenize(_CITATION.sub(" ", answer or "")))
    if not tokens or not contexts:
        return None
    shares = [len(tokens & set(tokenize(c))) / len(tokens) for c in contexts]
    best = max(range(len(contexts)), key=lambda i: (shares[i], -i))
    return best + 1 if shares[best] >= min_share else None


def ordered_sources(sources: Sequence[str], cited: Sequence[int]) -> list[tuple[str, bool]]:
    """``(source, cited)`` for each context source: the cited ones first (in citation order), then the rest."""
    first = [sources[n - 1] for n in cited if 0 < n <= len(sources)]
    rest = [s for s in sources if s not in first]
    return [(s, True) for s in dict.fromkeys(first)] + [(s, False) for s in dict.fromkeys(rest)]


_ECHO = re.compile(r"^\s*質問\s*[:：].*?回答\s*[:：]\s*", re.DOTALL)


def strip_echo(answer: str) -> str:
    """``answer`` without a leading echo of the prompt (``質問: …\n回答: ``), which small models write."""
    return _ECHO.sub("", answer or "", count=1)


class CitationFilter:
    """Streams answer text through :func:`clean_citations`: text that may be a citation (from an
    opening bracket to its closing one, at most 16 characters) is held back until it is complete."""

    OPEN, MAX_HELD = "[［【", 16

    ECHO_LIMIT = 400  # an echo of the question longer than this is shown as it is

    def __init__(self, n_contexts: int):
        self.n_contexts, self.held, self.started, self.space = n_contexts, "", False, ""

    def feed(self, piece: str) -> str:
        """Return the text of ``piece`` (plus what was held) that can be shown now; trailing
        whitespace waits for more text (the answer is stripped at the end)."""
        text = self.space + self._feed(piece)
        body = text.rstrip()
        self.space = text[len(body) :]
        return body

    def _feed(self, piece: str) -> str:
        """``feed`` before the trailing-whitespace rule."""
        text, out = self.held + piece, []
        self.held = ""
        if not self.started:  # a leading "質問: …回答:" echo is held back, then dropped
            head = text.lstrip()
            if len(head) < 2 or (head.startswith("質問") and not _ECHO.match(text) and len(text) < self.ECHO_LIMIT):
                self.held = text
                return ""
            self.started, text = True, strip_echo(text)
        while text:
            start = min((i for i in (text.find(c) for c in self.OPEN) if i >= 0), default=-1)
            if start < 0:
                out.append(text)
                break
            out.append(text[:start])
            rest = text[start:]
            match = _CITATION.match(rest)
            if match:
                out.append(clean_citations(match.group(0), self.n_contexts))
                text = rest[match.end() :]
            elif len(rest) < self.MAX_HELD and not re.search(r"[\]］】]", rest):
                self.held = rest  # may still become a citation
                break
            else:
                out.append(rest[0])
                text = rest[1:]
        return "".join(out)

    def flush(self) -> str:
        """Whatever is still held back (an unfinished bracket is shown as it is)."""
        held, self.held = self.held, ""
        rest = held if self.started else strip_echo(held)
        text, self.space = (self.space + rest).rstrip(), ""
        return text
