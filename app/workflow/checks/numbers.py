"""Numbers and named values in an answer that no context states (the number check), and the
identifier-like values a question names that no context has (``absent_value``); pure functions
over :mod:`app.text.normalize`."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from app.text.normalize import contains, is_stated, mentions, numbers
from app.workflow.checks.citations import CITATION


def unsupported_numbers(answer: str, contexts: Sequence[str], query: str = "") -> list[str]:
    """Numbers in ``answer`` (citations aside) found in no context and not in the question, as the
    answer writes them (``2027年6月31日``, ``2``), in answer order, each once.

    A small model that does not find the answer tends to invent one with a
    number in it (``駐車場は2台分あります``); a number the documents never state
    is the cheapest mechanical sign of that. Numbers are compared by their
    keys (app.text.normalize): ``1,200`` = ``1200``, ``９時`` = ``9時``, ``06`` = ``6``,
    ``2002年7月19日`` = ``平成14年7月19日`` = ``2002-07-19``, and a part of a stated
    date is stated (``6月30日``, ``6月`` and ``2027年`` by ``2027-06-30``), and so is a
    date whose year and month-day are stated apart (``2027年度`` … ``6月30日``); a
    different date is not (``2027年6月31日``), nor a number inside another (``12``
    in ``2012``).
    """
    stated = numbers(query).union(*(numbers(c) for c in contexts))
    unsupported: list[str] = []
    for mention in mentions(CITATION.sub(" ", answer or "")):
        if not is_stated(mention, stated) and mention.surface not in unsupported:
            unsupported.append(mention.surface)
    return unsupported


# A code or version the question names: letters with digits (E3010, s390, ISO27001) or a dotted number (3.0, 22.04).
_CODE = re.compile(r"[A-Za-z][A-Za-z_-]*\d[A-Za-z0-9_-]*|\d+(?:\.\d+)+")


def absent_values(query: str, texts: Sequence[str]) -> list[str]:
    """The values the question names that no text holds: codes and versions (``E3010``, ``s390``,
    ``3.0``) and numbers of two or more digits or with a date (``2027年``, ``26.04``), compared as the
    number check compares them (app.text.normalize). A question about Debian 15 when the documents stop at
    12 names a value no candidate holds: answering it from a neighbour's row invents the answer.

    Single digits are left out (``3文字のコード``, ``2つ``: counts the question asks for, not values
    it names).
    """
    body = unicodedata.normalize("NFKC", query or "")
    stated = set().union(*(numbers(t) for t in texts)) if texts else set()
    joined = "\n".join(texts)
    absent = [code for code in dict.fromkeys(_CODE.findall(body)) if not contains(joined, code)]
    for mention in mentions(body):
        significant = len(re.sub(r"\D", "", mention.surface)) >= 2 or "-" in mention.key
        if significant and not is_stated(mention, stated) and not any(mention.surface in a for a in absent):
            absent.append(mention.surface)
    return absent
