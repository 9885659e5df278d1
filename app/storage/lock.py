"""The database-wide writer lock: one writer (sync, remove, schema creation) at a time, readers never wait.

A PostgreSQL session advisory lock (the key fits in objid, classid 0): it goes away with the holder's
connection, so a killed writer never leaves it behind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from app.errors import WriterBusyError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

WRITER_LOCK_KEY = 0x52414701
SQL_TRY_WRITER_LOCK = "SELECT pg_try_advisory_lock(:key)"
SQL_WRITER_LOCK = "SELECT pg_advisory_lock(:key)"
SQL_WRITER_UNLOCK = "SELECT pg_advisory_unlock(:key)"
SQL_WRITER_LOCK_HOLDER = (
    "SELECT coalesce(nullif(a.application_name, ''), 'backend ' || l.pid) FROM pg_locks l "
    "JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.classid = 0 AND l.objid = :key AND l.granted LIMIT 1"
)


@contextmanager
def writer_lock(engine: Engine, wait: bool = True) -> Iterator[None]:
    """Hold the database-wide writer lock (a PostgreSQL session advisory lock) for the block.

    Writers (sync, remove, schema creation) take it; readers never do. When another
    process holds it: wait (one warning line says so) or, with ``wait=False``, raise
    WriterBusyError. The lock goes away with the holder's connection, so a killed
    writer never leaves it behind.
    """
    from sqlalchemy import text

    key = {"key": WRITER_LOCK_KEY}
    conn = engine.connect()
    try:
        got = conn.execute(text(SQL_TRY_WRITER_LOCK), key).scalar()
        conn.commit()
        if not got:
            holder = conn.execute(text(SQL_WRITER_LOCK_HOLDER), key).scalar() or "another process"
            conn.commit()
            if not wait:
                raise WriterBusyError(f"another writer is running ({holder}); try again when it is done")
            log.warning("waiting for another writer (%s) to finish ...", holder)
            conn.execute(text(SQL_WRITER_LOCK), key)
            conn.commit()
        try:
            yield
        finally:
            conn.execute(text(SQL_WRITER_UNLOCK), key)
            conn.commit()
    except BaseException:
        conn.invalidate()  # a broken or interrupted session must not go back to the pool holding the lock
        raise
    finally:
        conn.close()
