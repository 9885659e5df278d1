"""The table path end to end on real PostgreSQL with the real 0.5B model writing the SQL: the rows
read as the asker, the statement checked and run in DuckDB, the answer written from the result."""

from __future__ import annotations

import pytest

from app.graph import table_answerer
from app.permissions.principals import user_principals
from tests.integration.conftest import ROOT
from tests.integration.test_tables_store import tables_store  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration

QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


@pytest.fixture
def qwen_settings(tables_store):  # noqa: F811
    if not QWEN.is_file():
        pytest.fail(f"{QWEN} is missing: run `make test` (it runs `python -m app.models --offline --llm 0.5b`)")
    rs, _ = tables_store
    return rs, rs.settings.changed(llm={"model_path": str(QWEN), "model_path_is_default": False, "max_tokens": 80})


def test_the_model_writes_the_select_and_the_answer_comes_from_the_table(qwen_settings):
    from app.llm import get_llm

    rs, settings = qwen_settings
    bob = user_principals("bob_t", ["営業"])
    answerer = table_answerer(settings, rs, get_llm(settings), bob)
    cheapest = answerer.answer("一番安い製品はどれですか？")
    assert cheapest.sources == ["products.csv:r3"] and "ミナト勤怠" in cheapest.answer
    assert cheapest.sql.startswith("SELECT ") and cheapest.table == "products.csv"
    count = answerer.answer("製品はいくつありますか？")
    assert count.answer == "products.csv で条件に合う行は7件です。" and len(count.sources) == 7
    # bob may not read the bonus sheet: no table fits, the text path follows, the model is not asked
    asked: list[str] = []
    answerer.generate = lambda prompt: asked.append(prompt) or ""
    assert answerer.answer("賞与支給率の平均は？") is None and asked == []
