"""What the administrator's usage view reads: the answers recorded in the audit log (AUDIT_LOG=1) with
their outcome and timings (migration 14), and which answers were flagged 👎.

The audit and feedback tables are the owner's (the query role may not read them), and every statement
here also names the caller's principals: it returns rows only to principals that hold ``admin``, so a
caller that forgot its check still reads nothing. The question text is in a row only when
AUDIT_LOG_QUESTIONS allowed storing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.storage.collection import collection_id
from app.storage.readers import principals_param
from app.storage.tables import sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

MAX_ROWS = 200_000  # a bound on one summary's read: 90 days of a busy office stays far below it

# --- schema (migration 14, app.storage.schema) -----------------------------------------------
# an answer's audit row says which kept answer it was, whether it abstained (資料に記載がありません or
# withdrawn: the reason), whether it was an earlier answer given again, its cited sources and the
# milliseconds from the start of its turn to the passages, to the first token and to the whole answer
MIGRATION_STATEMENTS = (
    sql(
        "ALTER TABLE {audit} ADD COLUMN IF NOT EXISTS answer_id text, ADD COLUMN IF NOT EXISTS abstained text, "
        "ADD COLUMN IF NOT EXISTS cached boolean, ADD COLUMN IF NOT EXISTS cited text[], "
        "ADD COLUMN IF NOT EXISTS passages_ms integer, ADD COLUMN IF NOT EXISTS first_token_ms integer, "
        "ADD COLUMN IF NOT EXISTS total_ms integer"
    ),
)

ADMIN_ONLY = "CAST(:principals AS text[]) @> ARRAY['admin']"
SQL_ANSWERS = sql(
    "SELECT at, surface, answer_id, abstained, cached, cited, sources, passages_ms, first_token_ms, total_ms, "
    "question FROM {audit} WHERE action = 'ask' AND at >= now() - make_interval(days => :days) AND "
    + ADMIN_ONLY
    + " ORDER BY at, id LIMIT :limit"
)
SQL_FLAGGED_ANSWERS = sql(
    "SELECT answer_id FROM {feedback} WHERE collection_id = :collection AND NOT helpful "
    "AND created_at >= now() - make_interval(days => :days) AND " + ADMIN_ONLY
)


def answer_rows(engine: Engine, principals: Sequence[str], days: int) -> list[dict]:
    """The audit log's answers (action ``ask``) of the last ``days`` days, oldest first: at, surface,
    answer_id, abstained, cached, cited, sources, passages_ms, first_token_ms, total_ms, question (None
    unless AUDIT_LOG_QUESTIONS stored it). Nothing unless ``principals`` hold ``admin``."""
    from sqlalchemy import text

    params = {"days": days, "limit": MAX_ROWS, "principals": principals_param(principals)}
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(SQL_ANSWERS), params)]


def flagged_answer_ids(engine: Engine, collection_name: str, principals: Sequence[str], days: int) -> set[str]:
    """The IDs of the answers flagged 👎 in the last ``days`` days (each asker's latest word counts).
    Empty unless ``principals`` hold ``admin``, or when the collection does not exist."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return set()
    params = {"collection": collection, "days": days, "principals": principals_param(principals)}
    with engine.connect() as conn:
        return {row.answer_id for row in conn.execute(text(SQL_FLAGGED_ANSWERS), params)}
