"""Shared fixtures (§12.3). Unit tests use fakes that are real LangChain subclasses
returning predictable values; nothing here needs a database or a model file."""

from __future__ import annotations

import os
from types import SimpleNamespace
from unittest.mock import MagicMock

import numpy as np
import pytest
from langchain_core.documents import Document

from app import reranker
from app.config import variables


def cores_per_test_process() -> int:
    """This test process's share of the cores: all of them alone, cores / N under ``pytest -n N``."""
    return max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def share_the_cores() -> None:
    """Under ``pytest -n N`` each process's OpenMP pools (torch, the embedder, llama.cpp's children)
    take its share of the cores: threads of two processes asking for every core spin against each
    other (the bench measured 58 -> 20 searches/s). Set before any test imports torch."""
    if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[name] = str(cores_per_test_process())


share_the_cores()


def clear_settings_env(monkeypatch) -> None:
    """Remove every variable the settings read (their own list, :func:`app.config.variables`)."""
    for name in variables():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def clean_env(monkeypatch):
    """An environment where every setting has its default, whatever the developer's shell holds."""
    clear_settings_env(monkeypatch)
    return monkeypatch


@pytest.fixture
def mock_db_connection():
    """A psycopg-style connection usable as a context manager (cursor().execute/fetchone)."""
    conn = MagicMock(name="connection")
    conn.__enter__.return_value = conn
    conn.__exit__.return_value = False
    cursor = MagicMock(name="cursor")
    cursor.fetchone.return_value = (1,)
    conn.cursor.return_value.__enter__.return_value = cursor
    conn.execute.return_value = cursor
    return conn


@pytest.fixture
def fake_embeddings():
    """Three 384-d unit vectors."""
    vectors = np.zeros((3, 384), dtype=np.float32)
    for i in range(3):
        vectors[i, i] = 1.0
    return vectors


@pytest.fixture
def mock_llm_response():
    """The dict llama-cpp-python returns for a completion."""
    return {
        "choices": [{"text": " サポート窓口の受付時間は平日9時から18時までです。 "}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 20},
    }


@pytest.fixture
def mock_documents():
    """Chunks with source/chunk_index metadata, as ingest stores them."""
    return [
        Document(
            page_content="サポート窓口の受付時間は平日9時から18時までです。",
            metadata={"source": "faq.csv:r2", "chunk_index": 0},
        ),
        Document(
            page_content="全サービスのデータは毎日午前2時に自動でバックアップされます。",
            metadata={"source": "technical_guide.pdf:p4", "chunk_index": 0},
        ),
        Document(
            page_content="資本金は4億5000万円、従業員数は286名です。",
            metadata={"source": "company_overview.pdf:p1", "chunk_index": 0},
        ),
        Document(
            page_content="エラーコードE3010は処理のタイムアウトを表します。",
            metadata={"source": "technical_guide.pdf:p3", "chunk_index": 0},
        ),
    ]


@pytest.fixture
def mock_vectorstore(mock_documents):
    """A vectorstore double: similarity_search_with_score and as_retriever return mock_documents."""
    from langchain_core.retrievers import BaseRetriever

    class ListRetriever(BaseRetriever):
        docs: list
        k: int = 10

        def _get_relevant_documents(self, query, *, run_manager=None):
            return list(self.docs[: self.k])

    store = MagicMock(name="vectorstore")
    store.similarity_search_with_score.side_effect = lambda q, k=4, principals=None: [
        (d, 0.1 * i) for i, d in enumerate(mock_documents[:k])
    ]
    store.as_retriever.side_effect = lambda search_kwargs=None, **kw: ListRetriever(
        docs=mock_documents, k=(search_kwargs or {}).get("k", 4)
    )
    return store


class OverlapCrossEncoder:
    """A cross-encoder double: the score is the number of query characters found in the passage."""

    def __init__(self):
        self.calls = []

    def score(self, pairs):
        self.calls.append(list(pairs))
        return [float(sum(ch in passage for ch in set(query))) for query, passage in pairs]


@pytest.fixture
def overlap_model():
    return OverlapCrossEncoder()


@pytest.fixture
def fake_reranker(overlap_model):
    """The real ScoringCrossEncoderReranker class around the deterministic overlap model."""
    from langchain_community.cross_encoders import BaseCrossEncoder

    class Model(BaseCrossEncoder):
        def score(self, text_pairs):
            return overlap_model.score(text_pairs)

    return reranker._scoring_reranker_class()(model=Model(), top_n=3)


def runtime(context):
    """What LangGraph passes a node as ``runtime``: here only ``.context`` is used."""
    return SimpleNamespace(context=context)


@pytest.fixture
def no_db(mocker):
    """RagStore without a database: no engine, no lock, no schema (the SQL functions are patched per test)."""
    from contextlib import contextmanager

    from app.store import RagStore

    @contextmanager
    def writing(self, wait=True):
        yield self

    mocker.patch.object(RagStore, "writing", writing)
    mocker.patch("app.storage.get_engine")  # the commands' own engines
    mocker.patch("app.storage.handle.get_engine")  # the store's (app.storage.handle)
    mocker.patch("app.storage.check_schema")
    mocker.patch("app.graphrag.index.needs_build", return_value=False)  # no graph to rebuild without a database
    return mocker


# The longest test files (pytest --durations, 2026-11-28, after the queue), started first: `make test` runs the suite in two
# processes (pytest-xdist, one file per process at a time), and a long file started last keeps one process
# busy alone at the end. Order only: every test runs the same, in one process or two.
LONGEST_FIRST = (
    "integration/test_bench.py",
    "integration/test_queue.py",
    "integration/test_hardening.py",
    "integration/test_web_browser.py",
    "integration/test_graph_search.py",
    "integration/test_mcp_server.py",
    "integration/test_big_files.py",
    "integration/test_sync.py",
    "integration/test_permissions_web.py",
    "integration/test_admin.py",
    "integration/test_pipeline.py",
    "integration/test_real_answers.py",
    "integration/test_any_size.py",
    "integration/test_workers.py",
    "integration/test_llm_server.py",
    "integration/test_permissions_mcp.py",
    "integration/test_database_url.py",
)


def longest_first(path: str) -> int:
    """A test file's place in LONGEST_FIRST (``tests/integration/test_bench.py`` or a node ID in it); the
    files not listed after them all."""
    name = path.split("::")[0].replace("\\", "/")
    for n, listed in enumerate(LONGEST_FIRST):
        if name.endswith(listed):
            return n
    return len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    """In one process: the files of LONGEST_FIRST first; the rest keep pytest's order."""
    items.sort(key=lambda item: longest_first(item.nodeid))  # stable


def pytest_xdist_make_scheduler(config, log):
    """In several processes (``-n``): one file per process at a time, as ``--dist loadfile``, handing out
    the files of LONGEST_FIRST first (loadfile alone starts the files with most tests first)."""
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        ordered = False

        def _assign_work_unit(self, node):
            if not self.ordered:
                files = sorted(self.workqueue.items(), key=lambda item: longest_first(item[0]))
                self.workqueue.clear()
                self.workqueue.update(files)
                self.ordered = True
            super()._assign_work_unit(node)

    return LongestFirst(config, log)
