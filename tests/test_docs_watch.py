"""docs.py table and watch.py's filter."""

from datetime import UTC, datetime

import pytest

from app.docs import format_documents
from app.ingestion.watch import relevant


def test_format_documents_table():
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    out = format_documents(
        [
            {"doc_id": "csv/faq.csv", "chunks": 10, "ingested_at": when},
            {"doc_id": "pdf/company_overview.pdf", "chunks": 3, "ingested_at": when},
        ]
    )
    lines = out.splitlines()
    assert lines[0] == "document                  chunks  ingested at"
    assert lines[1].startswith("csv/faq.csv                   10  ")
    assert lines[-1] == "2 documents, 13 chunks"


def test_format_documents_empty():
    assert format_documents([]) == "No documents (run `make ingest`)."


@pytest.mark.parametrize(
    "path,expected",
    [
        ("/d/csv/a.csv", True),
        ("/d/pdf/B.PDF", True),
        ("/d/csv/.~lock.a.csv#", False),
        ("/d/csv/a.csv.swp", False),
        ("/d/access.toml", True),  # who may read what changed: applied at once
        ("/d/other.toml", False),
    ],
)
def test_watch_relevant(path, expected):
    assert relevant(path) is expected
