"""Whether an answer's own words come from the documents: the check that catches a name the model
made up (``ブラジルの首都はシカゴです``) the way the number check catches a made-up number.

The words an answer adds to its question are read as content terms: keyword bigrams (app.text.keywords)
made only of katakana or kanji, and Latin words and numbers; bigrams with a kana particle in them
(``都は``, ``ゴで``) say nothing about where a fact came from and are left out. The **support** of an
answer is the share of those terms that the documents given to the model (the prompt) state. An answer
whose support is below ``ABSTAIN_MIN_SUPPORT`` (0.5) is withdrawn as ``unstated``: most of what it
adds is in no document. Numbers and dates are compared in one form first (app.text.normalize).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from app.text.keywords import KANJI, KATAKANA, tokenize
from app.text.normalize import canonical, short_decimals
from app.workflow.checks.citations import without_citations

_CONTENT = re.compile(rf"^[a-z0-9]+$|^[{KATAKANA}{KANJI}]{{2}}$")
# The words shown when an answer is withdrawn: runs of katakana, of kanji, of Latin letters and digits.
_LATIN = "A-Za-z0-9\u00c0-\u024f"
_WORDS = re.compile(rf"[{_LATIN}](?:[{_LATIN}._+-]*[{_LATIN}+])?|[{KATAKANA}]{{2,}}|[{KANJI}]{{2,}}")


def content_terms(text: str | None) -> set[str]:
    """The content terms of ``text`` (citations aside, numbers and dates in one form): katakana/kanji
    bigrams and Latin words or numbers, lower-cased."""
    plain = short_decimals(canonical(without_citations(text or "")))  # 0.250 and 0.25 are one number
    return {t for t in tokenize(plain) if _CONTENT.match(t)}


def added_terms(answer: str, query: str = "") -> set[str]:
    """The content terms of ``answer`` that ``query`` does not hold: what the answer adds."""
    return content_terms(answer) - content_terms(query)


def support(answer: str, stated: Sequence[str], query: str = "") -> float | None:
    """The share (0–1) of the terms ``answer`` adds to ``query`` that occur in ``stated`` (the prompt);
    None when it adds none (an answer that only restates the question, or says nothing)."""
    added = added_terms(answer, query)
    if not added:
        return None
    known = content_terms("\n".join(stated))
    return len(added & known) / len(added)


def unstated_words(answer: str, stated: Sequence[str], query: str = "") -> list[str]:
    """The words of ``answer`` (katakana, kanji or Latin runs) with a content term that neither
    ``stated`` nor ``query`` holds, as the answer writes them, in order, each once: what to name
    when the answer is withdrawn (``シカゴ``)."""
    known = content_terms("\n".join(stated)) | content_terms(query)
    text = unicodedata.normalize("NFKC", without_citations(answer or ""))
    words = [w for w in _WORDS.findall(text) if content_terms(w) - known]
    return list(dict.fromkeys(words))
