"""The askers' feedback on answers (👍/👎, the source they say was the right one, a comment).

One row per answer (``answer_id``, from app.storage.answers): the asker's latest word on it counts, so
one person cannot flag a question twice with one answer. The row copies what the answer was (question,
mode, sources), so it outlives the kept answer; about the asker it holds the user's name, or nothing
(this machine's user, a shared secret). The rows are read by the owner's connection only (the
administrator's list, ``python -m app.feedback``): the query role may not read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from app.storage.collection import collection_id
from app.storage.tables import sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

MAX_COMMENT_CHARS = 1000  # the table's own limit as well (app.serving.feedback checks it first)

# --- schema (migration 9, app.storage.schema) ------------------------------------------------
MIGRATION_STATEMENTS = (
    sql(
        "CREATE TABLE IF NOT EXISTS {feedback} ("
        "collection_id uuid NOT NULL REFERENCES {collections}(uuid) ON DELETE CASCADE, "
        "answer_id text NOT NULL, question text NOT NULL, mode text NOT NULL, sources text[] NOT NULL, "
        "asker text, helpful boolean NOT NULL, chosen_source text, none_right boolean NOT NULL DEFAULT false, "
        "comment text NOT NULL DEFAULT '' CHECK (char_length(comment) <= " + str(MAX_COMMENT_CHARS) + "), "
        "created_at timestamptz NOT NULL DEFAULT now(), "
        "PRIMARY KEY (collection_id, answer_id), "
        "CHECK (NOT (none_right AND chosen_source IS NOT NULL)), "
        "CHECK (helpful = false OR (chosen_source IS NULL AND NOT none_right)))"
    ),
)

SQL_SAVE = sql(
    "INSERT INTO {feedback} (collection_id, answer_id, question, mode, sources, asker, helpful, chosen_source, "
    "none_right, comment) VALUES (:collection, :answer_id, :question, :mode, CAST(:sources AS text[]), :asker, "
    ":helpful, :chosen_source, :none_right, :comment) "
    "ON CONFLICT (collection_id, answer_id) DO UPDATE SET asker = EXCLUDED.asker, helpful = EXCLUDED.helpful, "
    "chosen_source = EXCLUDED.chosen_source, none_right = EXCLUDED.none_right, comment = EXCLUDED.comment, "
    "created_at = now()"
)
# per question: how often flagged (and liked), the sources the askers chose, the latest comments
SQL_MOST_FLAGGED = sql(
    "SELECT question, count(*) FILTER (WHERE NOT helpful) AS flagged, count(*) FILTER (WHERE helpful) AS helpful, "
    "count(*) FILTER (WHERE none_right) AS none_right, "
    "array_remove(array_agg(DISTINCT chosen_source), NULL) AS chosen_sources, "
    "(array_remove(array_agg(nullif(comment, '') ORDER BY created_at DESC), NULL))[1:3] AS comments, "
    "max(created_at) FILTER (WHERE NOT helpful) AS last_flagged "
    "FROM {feedback} WHERE collection_id = :collection GROUP BY question "
    "HAVING count(*) FILTER (WHERE NOT helpful) > 0 "
    "ORDER BY flagged DESC, last_flagged DESC, question LIMIT :limit"
)
# per question flagged with a chosen source: the latest such row, oldest question first
SQL_CHOSEN = sql(
    "SELECT question, chosen_source, mode, answer_id, created_at FROM ("
    "SELECT DISTINCT ON (question) question, chosen_source, mode, answer_id, created_at FROM {feedback} "
    "WHERE collection_id = :collection AND NOT helpful AND chosen_source IS NOT NULL "
    "ORDER BY question, created_at DESC) latest ORDER BY created_at, question"
)


def save_feedback(engine: Engine, collection_name: str, row: Mapping[str, Any]) -> bool:
    """Store one answer's feedback (``row``: answer_id, question, mode, sources, asker, helpful,
    chosen_source, none_right, comment), replacing the asker's earlier word on the same answer;
    False when the collection does not exist."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return False
    params = {**row, "collection": collection, "sources": [str(s) for s in row["sources"]]}
    with engine.begin() as conn:
        conn.execute(text(SQL_SAVE), params)
    return True


def _rows(engine: Engine, collection_name: str, statement: str, params: dict) -> list[dict]:
    """The rows of one read statement on a collection, as dicts ([] when the collection does not exist)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(statement), {**params, "collection": collection})]


def most_flagged(engine: Engine, collection_name: str, limit: int = 20) -> list[dict]:
    """The questions most often flagged 👎, most first: question, flagged, helpful, none_right,
    chosen_sources, comments (the latest three), last_flagged."""
    return _rows(engine, collection_name, SQL_MOST_FLAGGED, {"limit": limit})


def chosen_sources(engine: Engine, collection_name: str) -> list[dict]:
    """Every question flagged 👎 with a source chosen as the right one (the latest choice per question),
    oldest latest choice first: question, chosen_source, mode, answer_id, created_at."""
    return _rows(engine, collection_name, SQL_CHOSEN, {})
