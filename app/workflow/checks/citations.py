"""Citations in an answer's text: the ``[n]`` it cites, cleaned of numbers no context has, the
refusal sentence recognized, the sources ordered cited first, an echoed prompt removed, and the
streaming filter that holds back a half-written citation (pure functions)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

# [1] [12] [1, 2] [1][2] ［１］ 【1】 — half- or full-width brackets and digits.
CITATION = re.compile(r"[\[［【]\s*([0-9０-９]+(?:\s*[,，、]\s*[0-9０-９]+)*)\s*[\]］】]")


# The model's own ways of saying the documents do not hold the answer.
_ABSTAIN = re.compile(
    r"記載(が|は)(ありません|ない)|記載されていません|"
    r"(情報|記述|記載)(が|は)(見つかりません|ありません|含まれていません)"
)


# A source named inline, as the numbered contexts' headers name theirs (``[3]（出典: aptitude.pdf:p11）``):
# the model copies the header's form; the citation says the same, so the mention is dropped.
SOURCE_MENTION = re.compile(r"\s*[（(]\s*出典\s*[:：][^）)\n]*[）)]")


def _numbers(group: str) -> list[int]:
    """The numbers in the inside of one citation, e.g. ``1, 2`` → [1, 2]."""
    return [int(unicodedata.normalize("NFKC", n)) for n in re.findall(r"[0-9０-９]+", group)]


def cited_numbers(answer: str, n_contexts: int) -> list[int]:
    """The context numbers (1..n_contexts) cited in ``answer``, in order of first citation, no repeats."""
    seen: dict[int, None] = {}
    for match in CITATION.finditer(answer or ""):
        for n in _numbers(match.group(1)):
            if 1 <= n <= n_contexts:
                seen.setdefault(n, None)
    return list(seen)


def without_citations(answer: str) -> str:
    """``answer`` with every citation removed (what the model actually said)."""
    return CITATION.sub("", answer or "").strip()


def clean_citations(answer: str, n_contexts: int) -> str:
    """``answer`` with every citation rewritten as ``[n]``, numbers outside 1..n_contexts dropped, a
    source named inline (``（出典: faq.csv:r2）``) removed, and citations alone on the last line joined to
    the sentence before them."""

    def fix(match: re.Match) -> str:
        valid = [n for n in _numbers(match.group(1)) if 1 <= n <= n_contexts]
        return "".join(f"[{n}]" for n in dict.fromkeys(valid))

    cleaned = CITATION.sub(fix, SOURCE_MENTION.sub("", answer or ""))
    cleaned = re.sub(r"[ \t]+([。．、,.])", r"\1", cleaned).strip()
    return _TRAILING_CITATION.sub(r"\1", cleaned)  # ``…休業です。\n\n[1]`` → ``…休業です。[1]``


# Citations alone on the answer's last line: they belong to the sentence before them.
_TRAILING_CITATION = re.compile(r"(?<=[^\s\]])\s*\n\s*((?:\[\d+\]\s*)+)$")


def says_not_in_documents(answer: str) -> bool:
    """True if the model says the documents do not hold the answer (``資料に記載がありません`` and kin)."""
    return bool(_ABSTAIN.search(unicodedata.normalize("NFKC", answer or "")))


def ordered_sources(sources: Sequence[str], cited: Sequence[int]) -> list[tuple[str, bool]]:
    """``(source, cited)`` for each context source: the cited ones first (in citation order), then the rest."""
    first = [sources[n - 1] for n in cited if 0 < n <= len(sources)]
    rest = [s for s in sources if s not in first]
    return [(s, True) for s in dict.fromkeys(first)] + [(s, False) for s in dict.fromkeys(rest)]


_ECHO = re.compile(r"^\s*質問\s*[:：].*?回答\s*[:：]\s*", re.DOTALL)


def strip_echo(answer: str) -> str:
    """``answer`` without a leading echo of the prompt (``質問: …\n回答: ``), which small models write."""
    return _ECHO.sub("", answer or "", count=1)


def _may_become_mention(text: str, limit: int) -> bool:
    """Whether ``text`` (starting with an opening parenthesis) may still grow into a SOURCE_MENTION."""
    head = re.sub(r"\s", "", text[1:])
    if len(text) >= limit or re.search(r"[）)\n]", text):
        return False
    return "出典".startswith(head[:2]) and (len(head) <= 2 or head[2] in ":：")


class CitationFilter:
    """Streams answer text through :func:`clean_citations`: text that may be a citation (from an
    opening bracket to its closing one, at most 16 characters) is held back until it is complete."""

    OPEN, MAX_HELD = "[［【（(", 16
    MAX_SOURCE = 80  # a source named inline (``（出典: …）``) is held back until it closes, at most this long

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
            if rest[0] in "（(":
                mention = SOURCE_MENTION.match(rest)
                if mention:  # dropped, as clean_citations drops it
                    text = rest[mention.end() :]
                    continue
                if _may_become_mention(rest, self.MAX_SOURCE):
                    self.held = rest
                    break
                out.append(rest[0])
                text = rest[1:]
                continue
            match = CITATION.match(rest)
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
