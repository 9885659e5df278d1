"""``python -m app.worker``: a worker of the ingest queue, on this machine or any other with the data folder
mounted and ``DATABASE_URL`` set (``make ingest QUEUE=1`` queues the files; docs/scaling.md).

A face only: the work is :mod:`app.ingestion.queue_worker`, the command line :mod:`app.cli.worker`
(``__main__`` runs it). Imports nothing itself.
"""
