"""Storage: every SQL statement of the app and the code that runs it (PostgreSQL + pgvector).

One module per job, each importing only what it needs (this package's ``__init__`` imports nothing):

* :mod:`app.storage.tables` — every table, index and function name, and :func:`~app.storage.tables.sql`,
  the one way a statement names them (quoted identifiers; values are always bound parameters);
* :mod:`app.storage.engine` — the SQLAlchemy engine (one per target, the embedded server started
  first), per-connection settings, connection errors as ``DatabaseUnavailableError``, the server check;
* :mod:`app.storage.provision` — the embedded server's app role, database and extension;
* :mod:`app.storage.schema` — schema creation as numbered, re-runnable migrations, the version check;
* :mod:`app.storage.lock` — the database-wide writer lock;
* :mod:`app.storage.collection` — a collection's id and size;
* :mod:`app.storage.chunks` — documents and their chunk rows, written in one transaction;
* :mod:`app.storage.staging` — batches of an unfinished ingest and the switch that moves them in;
* :mod:`app.storage.keywords` — the keyword index, its BM25 statistics and the BM25 query;
* :mod:`app.storage.graph` — the graph's tables (app.graphrag.store keeps the graph's Python logic);
* :mod:`app.storage.bulk` — bulk loading, index rebuilds and sizes (used by ``make bench``).

``app.db`` re-exports the public functions, so callers written against it keep working.
"""
