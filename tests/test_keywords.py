"""keywords.py: Japanese-aware tokens for the PostgreSQL keyword index (exact outputs)."""
import pytest

from app.keywords import normalize_text, query_tokens, to_document, to_tsquery, tokenize


@pytest.mark.parametrize("text,expected", [
    ("受付時間", ["受付", "付時", "時間"]),
    ("E3010", ["e3010"]),
    ("ＡＰＩキー", ["api", "キー"]),
    ("ISO/IEC 27001", ["iso", "iec", "27001"]),
    ("税", ["税"]),
    ("平日9時", ["平日", "9", "時"]),
    ("ﾐﾅﾄ", ["ミナ", "ナト"]),
    ("です。ます", []),
    ("", []),
    (None, []),
])
def test_tokenize(text, expected):
    assert tokenize(text) == expected


def test_tokenize_keeps_repeats_for_ranking():
    assert tokenize("時間 時間") == ["時間", "時間"]


def test_query_tokens_are_distinct_in_order():
    assert query_tokens("時間と時間") == ["時間", "間と", "と時"]


def test_normalize_text():
    assert normalize_text("ＡＢＣ１２３ｶﾅ") == "abc123カナ"


def test_to_document_joins_tokens_with_spaces():
    assert to_document("E3010のタイムアウト") == "e3010 のタ タイ イム ムア アウ ウト"


def test_to_tsquery_is_an_or_query():
    assert to_tsquery("E3010 タイム") == "'e3010' | 'タイ' | 'イム'"
    assert to_tsquery("。、") == ""
