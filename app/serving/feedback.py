"""The askers' 👍/👎 on answers, for the page (``POST /api/feedback``) and MCP (``feedback``) alike.

An answer is named by the ``answer_id`` its ``done`` event (or MCP ``ask`` result) carried
(app.storage.answers). Only who received it may give feedback on it (the same principals), or an
administrator; anyone else is told there is no such answer, as for an unknown ID, so an ID says nothing
about someone else's question. A 👎 may name the right source, which must be one of the answer's, or say
that none of them was (``none_right``), and carry a comment of at most :data:`MAX_COMMENT_CHARS`.

The checks are pure functions (exact tests in tests/test_feedback.py); :func:`give_feedback` looks the
answer up and stores the row through the functions it is handed, :func:`feedback_on` with a service's
(its kept answers, app.storage.feedback on its engine). FEEDBACK=0 turns it off (:class:`FeedbackOffError`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import TypedDict

from app.config import Settings
from app.errors import RagError
from app.storage.feedback import MAX_COMMENT_CHARS
from app.text.storable import check_fields
from app.users.identity import Identity

MAX_ANSWER_ID_CHARS = 100
FLAGGED_SHOWN = 20  # questions on the administrator's list
NAMED_KINDS = ("user", "proxy")  # identities whose name is kept with their feedback (a person)

AnswerLookup = Callable[[str], "dict | None"]  # answer_id -> the kept answer (RagService.answer_record)
FeedbackSaver = Callable[[Mapping[str, Any]], bool]  # the row -> stored (False: no such collection)


class FeedbackOffError(RagError):
    """Feedback is turned off (FEEDBACK=0)."""


class AnswerNotFoundError(RagError):
    """No answer with this ID that the asker received (unknown, forgotten, or someone else's)."""


@dataclass(frozen=True)
class Feedback:
    """One asker's word on one answer, checked (:func:`read_feedback`)."""

    answer_id: str
    helpful: bool
    source: str | None = None  # 👎: the source that was the right one
    none_right: bool = False  # 👎: none of the sources shown was
    comment: str = ""


class FeedbackReceipt(TypedDict):
    """What the page and the MCP tool answer once feedback is stored."""

    answer_id: str
    helpful: bool
    source: str | None
    none_right: bool


def read_feedback(body: Any) -> Feedback:
    """The feedback in a request's JSON (or the MCP tool's arguments): ``answer_id`` (a string),
    ``helpful`` (true/false), with ``helpful: false`` a ``source`` (a string or null) or ``none_right``
    (not both), and a ``comment``; ValueError with a one-line reason otherwise, also for a character
    that cannot be stored (app.text.storable) in any of them, before the answer is looked up."""
    if not isinstance(body, Mapping):
        raise ValueError("feedback must be a JSON object")
    check_fields({name: body.get(name) for name in ("answer_id", "source", "comment")})
    answer_id = body.get("answer_id")
    if not isinstance(answer_id, str) or not answer_id.strip() or len(answer_id) > MAX_ANSWER_ID_CHARS:
        raise ValueError(f"answer_id must be the answer's ID (a string of 1 to {MAX_ANSWER_ID_CHARS} characters)")
    helpful = body.get("helpful")
    if not isinstance(helpful, bool):
        raise ValueError(f"helpful must be true or false, got {helpful!r}")
    source = body.get("source")
    if source is not None and (not isinstance(source, str) or not source.strip()):
        raise ValueError("source must be one of the answer's sources, or null")
    none_right = body.get("none_right", False)
    if not isinstance(none_right, bool):
        raise ValueError(f"none_right must be true or false, got {none_right!r}")
    if helpful and (source is not None or none_right):
        raise ValueError("source and none_right go with helpful: false only")
    if source is not None and none_right:
        raise ValueError("give a source or none_right, not both")
    comment = body.get("comment")
    comment = "" if comment is None else comment
    if not isinstance(comment, str):
        raise ValueError("comment must be a string")
    comment = comment.strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise ValueError(f"comment is too long ({len(comment)} characters; at most {MAX_COMMENT_CHARS})")
    return Feedback(answer_id.strip(), helpful, source, none_right, comment)


def received(who: Identity, principals: Sequence[str]) -> bool:
    """Whether ``who`` received an answer given to ``principals``: the same set, or an administrator."""
    return who.admin or sorted(set(who.principals)) == sorted(set(principals))


def check_source(feedback: Feedback, sources: Sequence[str]) -> None:
    """ValueError unless the chosen source (if any) is one of the answer's ``sources``."""
    if feedback.source is not None and feedback.source not in sources:
        raise ValueError(f"source {feedback.source!r} is not one of the answer's sources")


def asker_name(who: Identity) -> str | None:
    """What is kept about the asker: a named user's name, else nothing (this machine, a shared secret)."""
    return who.name if who.kind in NAMED_KINDS else None


def feedback_row(feedback: Feedback, answer: Mapping[str, Any], who: Identity) -> dict[str, Any]:
    """The stored row: the answer's question, mode and sources, the asker's name (or None), the feedback."""
    return {
        "answer_id": feedback.answer_id,
        "question": answer["question"],
        "mode": answer["mode"],
        "sources": list(answer["sources"]),
        "asker": asker_name(who),
        "helpful": feedback.helpful,
        "chosen_source": feedback.source,
        "none_right": feedback.none_right,
        "comment": feedback.comment,
    }


def give_feedback(
    settings: Settings, body: Any, who: Identity, lookup: AnswerLookup, save: FeedbackSaver
) -> FeedbackReceipt:
    """Check and store ``who``'s feedback ``body`` on one of their answers (``lookup`` finds it, ``save``
    stores the row): FeedbackOffError when FEEDBACK=0, ValueError for a bad body or a source the answer
    did not have, AnswerNotFoundError for an answer that is not theirs (or unknown, or forgotten)."""
    if not settings.memory.feedback:
        raise FeedbackOffError("feedback is off (FEEDBACK=0)")
    feedback = read_feedback(body)
    answer = lookup(feedback.answer_id)
    if answer is None or not received(who, answer["principals"]) or not _checked(feedback, answer, who, save):
        raise AnswerNotFoundError(f"no answer {feedback.answer_id!r} of yours is kept (unknown, or forgotten)")
    return {
        "answer_id": feedback.answer_id,
        "helpful": feedback.helpful,
        "source": feedback.source,
        "none_right": feedback.none_right,
    }


def _checked(feedback: Feedback, answer: Mapping[str, Any], who: Identity, save: FeedbackSaver) -> bool:
    """Store the row once the chosen source is the answer's (ValueError otherwise); whether it was stored."""
    check_source(feedback, answer["sources"])
    return save(feedback_row(feedback, answer, who))


def feedback_on(service: Any, body: Any, who: Identity) -> FeedbackReceipt:
    """:func:`give_feedback` on a :class:`~app.serving.service.RagService`'s answers: its kept answers
    (``answer_record``), the rows stored on its store's engine, in its collection."""
    from app.storage.feedback import save_feedback

    settings = service.settings
    collection = settings.retrieval.collection_name
    return give_feedback(
        settings,
        body,
        who,
        lambda answer_id: service.answer_record(answer_id),
        lambda row: save_feedback(service.store.engine, collection, row),
    )


def flagged_for_json(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The most-flagged rows as JSON-friendly dicts (times as ISO 8601 strings, to the second)."""
    return [
        {k: (v.isoformat(timespec="seconds") if hasattr(v, "isoformat") else v) for k, v in row.items()} for row in rows
    ]


def flagged_questions(settings: Settings, engine: Any, limit: int = FLAGGED_SHOWN) -> list[dict[str, Any]]:
    """The questions most often flagged 👎 in this collection (the administrator's list; the caller
    checks who asks): question, flagged, helpful, none_right, chosen_sources, comments, last_flagged."""
    from app.storage.feedback import most_flagged

    return flagged_for_json(most_flagged(engine, settings.retrieval.collection_name, limit))


def evaluation_questions(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Flagged questions with a chosen source as an evaluation set (app.evaluation's format:
    ``query``, ``expected_source``, ``expected_keywords``); no keywords are known, so the answer's
    wording is not scored, only whether the chosen source is found. One entry per question."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in rows:
        if row["question"] in seen or not row.get("chosen_source"):
            continue
        seen.add(row["question"])
        out.append({"query": row["question"], "expected_source": row["chosen_source"], "expected_keywords": []})
    return out
