"""A queue worker's life, the parts without a database (app.ingestion.queue_runner): the one line a lost
database is told in, which errors mean the database went away, a worker without its data folder
refusing to start, and its waits that follow the lease (app.ingestion.queue). tests/integration/test_queue.py runs the rest with real processes."""

from __future__ import annotations

import psycopg
import pytest
from procrastinate.exceptions import ConnectorException
from sqlalchemy import create_engine

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


@pytest.mark.parametrize(
    "lease,timeout,beat,poll",
    [
        (30, 10, 7.5, 5.0),
        (60, 10, 15.0, 5.0),
        (12, 10, 3.0, 3.0),
        (8, 8, 2.0, 2.0),
        (5, 5, 1.25, 1.25),
        (2, 2, 1.0, 1.0),
    ],
)
def test_a_short_lease_makes_a_worker_quicker_to_say_the_database_is_gone_and_to_find_a_job_queued_again(
    lease, timeout, beat, poll
):
    """QUEUE_LEASE_S's default (30 s) keeps procrastinate's 5 s polling and a 10 s connection wait; a
    shorter lease shortens both (a quarter of it, 1 s at least, between looks for jobs)."""
    from app.ingestion.queue import connect_timeout_s, worker_options

    assert connect_timeout_s(lease) == timeout
    assert worker_options(lease) == {
        "update_heartbeat_interval": beat,
        "stalled_worker_timeout": lease,
        "fetch_job_polling_interval": poll,
    }


def test_the_worker_takes_every_pace_from_the_lease():
    """Each option is one procrastinate's Worker knows (a name it does not would fail at start)."""
    import inspect

    from procrastinate.worker import Worker

    from app.ingestion.queue import worker_options

    assert set(worker_options(30)) <= set(inspect.signature(Worker.__init__).parameters)


def test_the_worker_s_connector_waits_its_lease_when_that_is_shorter():
    from app.ingestion.queue import queue_app

    engine = create_engine("postgresql+psycopg://u@localhost/db")  # nothing is connected
    # the pool's arguments, as procrastinate keeps them until its pool opens
    assert queue_app(engine, asynchronous=True, lease_s=5).connector._pool_args["timeout"] == 5
    assert queue_app(engine, asynchronous=True).connector._pool_args["timeout"] == 10
