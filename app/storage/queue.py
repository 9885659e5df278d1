"""The ingest queue's rows: each queued file's outcome (:data:`SQL_CREATE_QUEUED_FILE_TABLE`, migration 17)
beside procrastinate's own tables (its jobs, leases, retries and worker heartbeats), which
:func:`ensure_queue_schema` creates once from the library's schema.

A queued file is keyed by its document and *generation* (bytes, settings, extractor: as its staged
batches are): ``queued`` until a worker begins it, ``running`` (with the worker's name), ``staged``
(its chunks are in the staging table, counted here) or back to ``queued`` with the reason of a failed
try. Whether a job ended for good (failed) is procrastinate's ``status``, read through the join. Only
the writer and the workers read these rows: the query role has no grant on them, nor on
procrastinate's tables (they name documents).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from app.storage.collection import collection_id, require_collection
from app.storage.tables import QUEUE_JOB_TABLE, QUEUED_FILE_TABLE, sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# --- schema (migration 17) -------------------------------------------------------------------
SQL_CREATE_QUEUED_FILE_TABLE = sql(
    "CREATE TABLE IF NOT EXISTS {queued_files} ("
    " collection_id uuid NOT NULL REFERENCES {collections}(uuid) ON DELETE CASCADE,"
    " doc_id text NOT NULL, generation text NOT NULL, job_id bigint,"
    " state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'staged')),"
    " worker text, attempts integer NOT NULL DEFAULT 0, error text,"
    " chunks integer, embedded integer, truncated integer, token_limit integer, page_words jsonb,"
    " queued_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),"
    " PRIMARY KEY (collection_id, doc_id, generation))"
)
MIGRATION_STATEMENTS = (SQL_CREATE_QUEUED_FILE_TABLE,)

SQL_QUEUE_SCHEMA_EXISTS = "SELECT to_regclass(CAST(:table AS text)) IS NOT NULL"

# one worker at a time gives back the jobs of dead workers (app.ingestion.queue_runner.requeue_stalled)
SWEEP_LOCK_KEY = 0x52414702
SQL_TRY_SWEEP_LOCK = "SELECT pg_try_advisory_lock(:key)"
SQL_SWEEP_UNLOCK = "SELECT pg_advisory_unlock(:key)"

# --- the writer: what is queued, queueing, reading the outcomes ---------------------------------
_JOB_STATUS = (
    "(SELECT j.status::text FROM " + QUEUE_JOB_TABLE + " j WHERE j.id = q.job_id)"
)  # NULL once procrastinate deleted a finished job
# whether the job's worker sent a heartbeat within the lease (a killed worker's row still says running)
_WORKER_ALIVE = (
    "(SELECT w.last_heartbeat > now() - make_interval(secs => CAST(:lease AS double precision)) FROM "
    + QUEUE_JOB_TABLE
    + " j JOIN procrastinate_workers w ON w.id = j.worker_id WHERE j.id = q.job_id)"
)
SQL_QUEUED_STATES = sql(
    "SELECT q.doc_id, q.generation, q.job_id, q.state, q.worker, q.attempts, q.error, q.chunks, q.embedded, "
    "q.truncated, q.token_limit, q.page_words, "
    + _JOB_STATUS
    + " AS job_status, "
    + _WORKER_ALIVE
    + " AS alive FROM {queued_files} q "
    "WHERE q.collection_id = :collection AND q.doc_id = ANY(CAST(:docs AS text[]))"
)
SQL_JOBS_OF_DOCUMENT = sql(
    "SELECT job_id FROM {queued_files} WHERE collection_id = :collection AND doc_id = :doc AND job_id IS NOT NULL"
)
SQL_FORGET_OTHER_GENERATIONS = sql(
    "DELETE FROM {queued_files} WHERE collection_id = :collection AND doc_id = :doc AND generation <> :generation"
)
SQL_RECORD_QUEUED = sql(
    "INSERT INTO {queued_files} (collection_id, doc_id, generation) VALUES (:collection, :doc, :generation) "
    "ON CONFLICT (collection_id, doc_id, generation) DO UPDATE SET job_id = NULL, state = 'queued', "
    "worker = NULL, attempts = 0, error = NULL, queued_at = now(), updated_at = now()"
)
# a worker may have begun the job already (and set it): the same job either way
SQL_SET_JOB = sql(
    "UPDATE {queued_files} SET job_id = :job WHERE collection_id = :collection AND doc_id = :doc "
    "AND generation = :generation AND job_id IS NULL"
)
SQL_CLAIM_GENERATION = sql(
    "UPDATE {staging} SET run = :run WHERE collection_id = :collection AND doc_id = :doc AND generation = :generation"
)
SQL_FORGET_QUEUED = sql(
    "DELETE FROM {queued_files} WHERE collection_id = :collection AND doc_id = :doc AND generation = :generation"
)
# a document switched over or removed (in that transaction): its queued rows go, a late job finds nothing
SQL_DELETE_DOC_QUEUED = sql("DELETE FROM {queued_files} WHERE collection_id = :collection AND doc_id = :doc")
# after a whole sync: rows of files no longer to be read with those bytes (removed, changed, stored by a
# plain sync), and the finished jobs that name them
SQL_FORGET_STALE = sql(
    "DELETE FROM {queued_files} q WHERE q.collection_id = :collection AND NOT EXISTS (SELECT 1 FROM "
    "unnest(CAST(:docs AS text[]), CAST(:generations AS text[])) AS k(doc, generation) "
    "WHERE k.doc = q.doc_id AND k.generation = q.generation) RETURNING q.job_id"
)
SQL_DELETE_FINISHED_JOBS = (
    "DELETE FROM " + QUEUE_JOB_TABLE + " WHERE id = ANY(CAST(:ids AS bigint[])) AND status NOT IN ('todo', 'doing')"
)
SQL_FAILED_QUEUED = sql(
    "SELECT q.doc_id, q.attempts, q.error, q.updated_at FROM {queued_files} q WHERE q.collection_id = :collection "
    "AND " + _JOB_STATUS + " = 'failed' ORDER BY q.doc_id"
)

# --- a worker: beginning, finishing and failing one file --------------------------------------
# A job begins its file only while the file is queued with these bytes and settings and not staged yet;
# it becomes the file's job (the writer may not have recorded the job's ID yet).
SQL_BEGIN_QUEUED = sql(
    "UPDATE {queued_files} SET state = 'running', job_id = :job, worker = :worker, attempts = attempts + 1, "
    "updated_at = now() WHERE collection_id = :collection AND doc_id = :doc AND generation = :generation "
    "AND state <> 'staged' RETURNING attempts"
)
SQL_FINISH_QUEUED = sql(
    "UPDATE {queued_files} SET state = 'staged', error = NULL, chunks = :chunks, embedded = :embedded, "
    "truncated = :truncated, token_limit = :token_limit, page_words = CAST(:page_words AS jsonb), updated_at = now() "
    "WHERE collection_id = :collection AND doc_id = :doc AND generation = :generation AND job_id = :job"
)
SQL_FAIL_QUEUED = sql(
    "UPDATE {queued_files} SET state = 'queued', error = :error, updated_at = now() "
    "WHERE collection_id = :collection AND doc_id = :doc AND generation = :generation AND job_id = :job "
    "AND state <> 'staged'"
)


def queue_conninfo(engine: Engine) -> str:
    """The libpq URI of ``engine``'s database (procrastinate connects with psycopg itself)."""
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def ensure_queue_schema(engine: Engine) -> bool:
    """Create procrastinate's tables, functions and triggers once (its schema for a new database, in
    one transaction); True when they were created now. The caller holds the writer lock."""
    from procrastinate.schema import SchemaManager
    from sqlalchemy import text

    with engine.connect() as conn:
        if conn.execute(text(SQL_QUEUE_SCHEMA_EXISTS), {"table": QUEUE_JOB_TABLE}).scalar():
            return False
    raw = engine.raw_connection()
    try:
        with raw.cursor() as cursor:
            cursor.execute(SchemaManager.get_schema())  # no parameters: psycopg sends the text as it is
        raw.commit()
    finally:
        raw.close()
    return True


@contextmanager
def sweeping(engine: Engine) -> Iterator[bool]:
    """Hold the sweep lock for the block if no other worker does: True when it is this one's turn."""
    from sqlalchemy import text

    key = {"key": SWEEP_LOCK_KEY}
    with engine.connect() as conn:
        got = bool(conn.execute(text(SQL_TRY_SWEEP_LOCK), key).scalar())
        conn.commit()
        try:
            yield got
        finally:
            if got:
                conn.execute(text(SQL_SWEEP_UNLOCK), key)
                conn.commit()


def queue_ready(engine: Engine) -> bool:
    """Whether this database has the ingest queue: procrastinate's tables and the queued files' table
    (both made by the first ``make ingest QUEUE=1``)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        return all(
            conn.execute(text(SQL_QUEUE_SCHEMA_EXISTS), {"table": table}).scalar()
            for table in (QUEUE_JOB_TABLE, QUEUED_FILE_TABLE)
        )


def queued_states(engine: Engine, collection_name: str, doc_ids: Sequence[str], lease_s: float = 30) -> list[dict]:
    """The queued-file rows of ``doc_ids`` with their job's status (``job_status``: procrastinate's
    ``todo``/``doing``/``failed``…, None when the job is gone) and whether its worker is ``alive`` (a
    heartbeat within ``lease_s``)."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None or not doc_ids:
        return []
    with engine.connect() as conn:
        params = {"collection": collection, "docs": list(doc_ids), "lease": float(lease_s)}
        rows = conn.execute(text(SQL_QUEUED_STATES), params)
        return [dict(row) for row in rows.mappings()]


def record_queued(engine: Engine, collection_name: str, files: Sequence[tuple[str, str]]) -> None:
    """Record ``(doc_id, generation)`` as queued, before its job is deferred (a new try: attempts and
    reason reset), forget the document's rows of other generations (a job of one finds nothing to do),
    and delete the finished jobs of its earlier tries. Needs procrastinate's tables (the writer made them)."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        earlier: list[int] = []
        for doc_id, generation in files:
            key = {"collection": collection, "doc": doc_id, "generation": generation}
            earlier += conn.execute(text(SQL_JOBS_OF_DOCUMENT), key).scalars()
            conn.execute(text(SQL_FORGET_OTHER_GENERATIONS), key)
            conn.execute(text(SQL_RECORD_QUEUED), key)
        if earlier:  # the finished jobs of earlier tries (their arguments name the files) go
            conn.execute(text(SQL_DELETE_FINISHED_JOBS), {"ids": earlier})


def set_jobs(engine: Engine, collection_name: str, jobs: Sequence[tuple[str, str, int]]) -> None:
    """Record the job deferred for each ``(doc_id, generation, job_id)``."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        for doc_id, generation, job in jobs:
            conn.execute(
                text(SQL_SET_JOB), {"collection": collection, "doc": doc_id, "generation": generation, "job": job}
            )


def claim_generation(engine: Engine, collection_name: str, doc_id: str, generation: str, run: str) -> int:
    """Claim every staged row of ``doc_id``'s ``generation`` for the writer's ``run`` (a worker staged
    them under its job); how many there are."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        params = {"collection": collection, "doc": doc_id, "generation": generation, "run": run}
        return conn.execute(text(SQL_CLAIM_GENERATION), params).rowcount or 0


def forget_stale(engine: Engine, collection_name: str, current: dict[str, str]) -> int:
    """After a whole sync: drop the queued rows not in ``current`` (document ID -> the generation this
    sync reads), with their finished jobs (whose arguments name the files); how many rows."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return 0
    docs = list(current)
    params = {"collection": collection, "docs": docs, "generations": [current[d] for d in docs]}
    with engine.begin() as conn:
        jobs = [job for job in conn.execute(text(SQL_FORGET_STALE), params).scalars() if job is not None]
        if jobs and conn.execute(text(SQL_QUEUE_SCHEMA_EXISTS), {"table": QUEUE_JOB_TABLE}).scalar():
            conn.execute(text(SQL_DELETE_FINISHED_JOBS), {"ids": jobs})
    return len(jobs)


def forget_queued(engine: Engine, collection_name: str, doc_id: str, generation: str) -> None:
    """Drop a queued file's row (its document was switched over)."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        conn.execute(text(SQL_FORGET_QUEUED), {"collection": collection, "doc": doc_id, "generation": generation})


def failed_queued(engine: Engine, collection_name: str) -> list[dict]:
    """Queued files whose job failed for good, with their tries and one-line reason (the writer's view:
    ``python -m app.docs``); ``[]`` when the queue was never used."""
    from sqlalchemy import text

    with engine.connect() as conn:  # first: a database nothing was ingested into has no tables at all
        if not conn.execute(text(SQL_QUEUE_SCHEMA_EXISTS), {"table": QUEUE_JOB_TABLE}).scalar():
            return []
    collection = collection_id(engine, collection_name)
    if collection is None:
        return []
    with engine.connect() as conn:
        return [dict(row) for row in conn.execute(text(SQL_FAILED_QUEUED), {"collection": collection}).mappings()]


def begin_queued(engine: Engine, collection_name: str, doc_id: str, generation: str, job: int, worker: str):
    """Mark a queued file as run by ``worker``: its try count now, or None when the file is no longer
    queued under this job (switched over already, or queued again with other bytes)."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        params = {"collection": collection, "doc": doc_id, "generation": generation, "job": job, "worker": worker}
        return conn.execute(text(SQL_BEGIN_QUEUED), params).scalar()


def finish_queued(engine: Engine, collection_name: str, doc_id: str, generation: str, job: int, staged: dict) -> None:
    """Mark a queued file as staged, with its counts (``chunks``, ``embedded``, ``truncated``, ``token_limit``)
    and its OCR'd pages' words (``page_words``: JSON text, or None; they hold the document's text, so
    only the writer and the workers read these rows)."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        params = {"collection": collection, "doc": doc_id, "generation": generation, "job": job, **staged}
        conn.execute(text(SQL_FINISH_QUEUED), params)


def fail_queued(engine: Engine, collection_name: str, doc_id: str, generation: str, job: int, error: str) -> None:
    """Record the one-line reason a try of a queued file failed (it is queued again, or failed for good)."""
    from sqlalchemy import text

    collection = require_collection(engine, collection_name)
    with engine.begin() as conn:
        params = {"collection": collection, "doc": doc_id, "generation": generation, "job": job, "error": error}
        conn.execute(text(SQL_FAIL_QUEUED), params)
