"""keywords.py: Japanese-aware tokens for the PostgreSQL keyword index (exact outputs)."""

import pytest

from app.text.keywords import normalize_text, query_tokens, sentences, to_document, to_tsquery, tokenize


@pytest.mark.parametrize(
    "text,expected",
    [
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
    ],
)
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


def test_bm25_idf_exact_values():
    import math

    from app.text.keywords import bm25_idf

    assert bm25_idf(3, 1) == math.log(1 + 2.5 / 1.5)
    assert bm25_idf(3, 3) == math.log(1 + 0.5 / 3.5)
    assert bm25_idf(10, 0) == math.log(1 + 10.5 / 0.5)


def test_bm25_term_score_exact_value_and_length_normalization():
    from app.text.keywords import bm25_term_score

    # idf 1, tf 2, a document of average length: 2 * 2.2 / (2 + 1.2) = 1.375
    assert bm25_term_score(2, 1.0, 10, 10) == 2 * 2.2 / (2 + 1.2)
    assert bm25_term_score(1, 1.0, 5, 10) > bm25_term_score(1, 1.0, 40, 10)  # shorter chunk, higher score


def test_candidate_terms_drop_frequent_terms_but_keep_the_rarest_if_all_are_frequent():
    from app.text.keywords import candidate_terms

    dfs = {"サー": 80, "ーバ": 70, "芝浦": 1, "信用": 3, "なし": 0}
    assert candidate_terms(["サー", "ーバ", "芝浦", "信用", "なし"], dfs, 100) == ["芝浦", "信用"]
    assert candidate_terms(["サー", "ーバ"], dfs, 100, keep=1) == ["ーバ"]
    assert candidate_terms(["なし"], dfs, 100) == []


def test_candidate_terms_fit_a_postings_budget_rarest_first():
    from app.text.keywords import candidate_terms

    dfs = {"a": 3000, "b": 500, "c": 1000, "d": 2000}
    # 500 + 1000 + 2000 = 3500 fit in 4000; "a" would make 6500. Query order is kept.
    assert candidate_terms(["a", "b", "c", "d"], dfs, 100_000, budget=4000) == ["b", "c", "d"]
    assert candidate_terms(["a", "b", "c", "d"], dfs, 100_000, budget=1000) == ["b"]
    # the rarest term selects even when it alone is over the budget
    assert candidate_terms(["a", "d"], dfs, 100_000, budget=100) == ["d"]
    # a budget that does not bind changes nothing
    assert candidate_terms(["a", "b", "c", "d"], dfs, 100_000, budget=10**9) == ["a", "b", "c", "d"]


def test_to_tsquery_terms():
    from app.text.keywords import to_tsquery_terms

    assert to_tsquery_terms(["e3010", "受付"]) == "'e3010' | '受付'"


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "会社概要です。受付時間は平日9時から18時です！土日は？\n料金は月額です",
            ["会社概要です。", "受付時間は平日9時から18時です！", "土日は？", "料金は月額です"],
        ),
        ("  \n\n", []),
        ("Is it open? Yes.", ["Is it open?", "Yes."]),
    ],
)
def test_sentences_split_after_end_marks_and_line_breaks(text, expected):
    assert sentences(text) == expected


def test_sentence_spans_are_the_offsets_of_the_sentences():
    from app.text.keywords import sentence_spans, sentences

    text = "  受付は平日です。\n\n土日は休み！ 詳細は窓口へ  "
    spans = sentence_spans(text)
    assert spans == [(2, 10), (12, 18), (19, 25)]
    assert [text[a:b] for a, b in spans] == sentences(text)
    assert sentence_spans("") == []
