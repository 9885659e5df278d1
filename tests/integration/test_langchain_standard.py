"""LangChain's own standard retriever suite (langchain-tests) against ``RagStore.as_retriever()`` on the
real embedded PostgreSQL with the sample corpus: the retriever behaves as LangChain's conventions say
(``k`` in the constructor and in ``invoke``, sync and async, Documents out)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

pytestmark = pytest.mark.integration


class _Modes(RetrieversIntegrationTests):
    mode = "hybrid"
    store: Any = None

    @pytest.fixture(autouse=True)
    def _store(self, rag_store, ingested):
        type(self).store = rag_store

    @property
    def retriever_constructor(self):
        mode = self.mode
        return lambda **params: type(self).store.as_retriever(search_mode=mode, **params)

    @property
    def retriever_constructor_params(self) -> dict:
        return {"k": 3}

    @property
    def retriever_query_example(self) -> str:
        return "サポート窓口の受付時間を教えてください。"


class TestHybridRetrieverStandard(_Modes):
    mode = "hybrid"


class TestVectorRetrieverStandard(_Modes):
    mode = "vector"


class TestKeywordRetrieverStandard(_Modes):
    mode = "keyword"
