"""Ingestion: keeping the store in step with the data dir (``make ingest`` is a sync, :mod:`app.ingest` its face).

* :mod:`app.ingestion.datadir` — walking the data dir under the policy for links;
* :mod:`app.ingestion.scan` — which files a sync reads and as which documents (IDs, size limits);
* :mod:`app.ingestion.reading` — one file as chunks, through its format's reader (:mod:`app.formats`);
* :mod:`app.ingestion.staging` — one file's chunks embedded and staged in batches;
* :mod:`app.ingestion.workers` — files staged in this process or in worker processes;
* :mod:`app.ingestion.sync` — the plan and the sync itself (added, changed, deleted files);
* :mod:`app.ingestion.documents` — a Document given to the Python API, through the same staging;
* :mod:`app.ingestion.watch` — a sync per burst of file changes.

May import :mod:`app.formats`, :mod:`app.text`, :mod:`app.storage`, :mod:`app.graphrag`,
:mod:`app.tables` (the tables files hold), :mod:`app.versions`, :mod:`app.permissions`, :mod:`app.chunking`
and the model faces (:mod:`app.embeddings`, :mod:`app.llm`); never serving, the workflow or the CLI.
"""
