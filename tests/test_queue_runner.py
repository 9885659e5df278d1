"""A queue worker's life, the parts without a database (app.ingestion.queue_runner): the one line a lost
database is told in, which errors mean the database went away, and a worker without its data folder
refusing to start. tests/integration/test_queue.py runs the rest with real processes."""

from __future__ import annotations

import psycopg
import pytest
from procrastinate.exceptions import ConnectorException

from app.config import Settings
from app.errors import DatabaseUnavailableError
from app.ingestion.queue_runner import database_gone, root_line, serve
from app.ingestion.queue_worker import Misfit, WorkerContext


def test_the_line_told_is_the_innermost_reason():
    try:
        try:
            raise psycopg.OperationalError('connection to server on socket "/tmp/x/.s.PGSQL.5432" failed\nmore')
        except psycopg.OperationalError as inner:
            raise ConnectorException("\n    Database error.\n    ") from inner
    except ConnectorException as outer:
        assert root_line(outer) == 'connection to server on socket "/tmp/x/.s.PGSQL.5432" failed'
    assert root_line(ValueError()) == "ValueError"


@pytest.mark.parametrize(
    "exc,gone",
    [
        (ConnectorException(), True),
        (psycopg.OperationalError("server closed the connection"), True),
        (DatabaseUnavailableError("cannot connect"), True),
        (ValueError("a bug of ours"), False),
        (KeyError("file"), False),
    ],
)
def test_only_a_lost_database_makes_the_worker_connect_again(exc, gone):
    assert database_gone(exc) is gone


def test_a_worker_whose_data_folder_is_missing_does_not_start(tmp_path):
    ctx = WorkerContext(Settings(), tmp_path / "not-mounted", name="m:1")
    with pytest.raises(
        Misfit, match=r"^this worker's data folder .*not-mounted is not there \(is the share mounted\?\)$"
    ):
        serve(ctx)
