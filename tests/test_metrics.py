"""metrics.py: exact values, including Japanese normalization."""

import pytest
from langchain_core.documents import Document

from app.metrics import (
    exact_match,
    faithfulness,
    found_keywords,
    mean,
    measure_latency,
    normalize,
    percentile,
    retrieval_at_k,
)


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("ＡＰＩキー", "apiキー"),
        ("９時", "9時"),
        ("ｶﾀｶﾅ", "カタカナ"),
        ("Android 12", "android12"),
        ("平日　9時", "平日9時"),
        ("①", "1"),
        ("", ""),
        (None, ""),
    ],
)
def test_normalize(raw, expected):
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    "results,expected",
    [
        ([{"source": "faq.csv:r1"}, {"source": "faq.csv:r2"}], True),
        ([{"source": "faq.csv:r20"}], False),
        ([{"source": "faq.csv:r2 "}], False),
        ([{"source": "FAQ.csv:r2"}], False),
        (["faq.csv:r2"], True),
        ([Document(page_content="x", metadata={"source": "faq.csv:r2"})], True),
        ([{"content": "no source"}], False),
        ([], False),
        (None, False),
    ],
)
def test_retrieval_at_k_exact_source_match(results, expected):
    assert retrieval_at_k(results, "faq.csv:r2") is expected


def test_retrieval_at_k_is_exact_not_prefix():
    assert retrieval_at_k([{"source": "faq.csv:r10"}], "faq.csv:r1") is False


@pytest.mark.parametrize(
    "answer,keywords,expected",
    [
        ("平日9時から18時までです。", ["平日9時", "18時"], 1.0),
        ("平日9時からです。", ["平日9時", "18時"], 0.5),
        ("わかりません", ["平日9時", "18時"], 0.0),
        ("平日９時から１８時", ["平日9時", "18時"], 1.0),
        ("ＩＯＳ　１６以上", ["iOS 16"], 1.0),
        ("何でも", [], 1.0),
        ("何でも", None, 1.0),
        (None, ["a"], 0.0),
        ("", ["a", "b", "c"], 0.0),
        ("a b", ["A", "B", "C"], 2 / 3),
    ],
)
def test_faithfulness(answer, keywords, expected):
    assert faithfulness(answer, keywords) == pytest.approx(expected)


@pytest.mark.parametrize(
    "answer,keywords,expected",
    [
        ("平日9時から18時までです。", ["平日9時", "18時"], True),
        ("平日9時からです。", ["平日9時", "18時"], False),
        ("ミナトゲートウェイ", ["ﾐﾅﾄｹﾞｰﾄｳｪｲ"], True),
        ("x", [], True),
        ("x", None, True),
        (None, ["x"], False),
    ],
)
def test_exact_match(answer, keywords, expected):
    assert exact_match(answer, keywords) is expected


def test_found_keywords_ignores_blank_keywords():
    assert found_keywords("abc", ["a", "", "  ", "z"]) == ["a"]


@pytest.mark.parametrize(
    "answer,keywords,expected",
    [
        ("設立は2002年7月19日です。", ["2002-07-19"], ["2002-07-19"]),
        (
            "設立は2002-07-19です。",
            ["2002年7月19日", "平成14年7月19日", "2002/7/19", "7月19日"],
            ["2002年7月19日", "平成14年7月19日", "2002/7/19", "7月19日"],
        ),
        ("期限は2027年６月３０日です。", ["2027-06-30", "6月30日"], ["2027-06-30", "6月30日"]),
        ("料金は1,200円です。", ["1200円"], ["1200円"]),
        ("受付は9時から18時です。", ["9時〜18時"], ["9時〜18時"]),
        ("返信は3営業日以内です。", ["三営業日"], ["三営業日"]),
        ("設立は2002-07-19です。", ["2002年7月19日", "2002-07-20", "7月1日"], ["2002年7月19日"]),
        ("有効期限は24時間です。", ["4時間"], []),
        ("2012年設立", ["12"], []),
    ],
)
def test_found_keywords_across_number_and_date_forms(answer, keywords, expected):
    assert found_keywords(answer, keywords) == expected


def test_measure_latency_returns_result_and_seconds():
    result, seconds = measure_latency(lambda x, y=1: x + y, 2, y=3)
    assert result == 5 and isinstance(seconds, float) and seconds >= 0


def test_measure_latency_propagates_exceptions():
    with pytest.raises(ZeroDivisionError):
        measure_latency(lambda: 1 / 0)


@pytest.mark.parametrize(
    "values,q,expected",
    [
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        ([1.0, 2.0, 3.0, 4.0], 100, 4.0),
        ([1.0, 2.0, 3.0, 4.0], 0, 1.0),
        ([10.0], 95, 10.0),
        ([3.0, 1.0, 2.0], 95, 2.9),
        ([], 95, 0.0),
        ([1, 2, 3, 4, 5], 40, 2.6),  # the community graph's edge floor (app.graphrag.communities)
        ([5, 1], 0, 1.0),
        ([5, 1], 100, 5.0),
    ],
)
def test_percentile(values, q, expected):
    assert percentile(values, q) == pytest.approx(expected)


def test_mean():
    assert mean([1.0, 2.0, 6.0]) == 3.0 and mean([]) == 0.0


def test_coverage_is_the_share_of_expected_keywords():
    from app.metrics import coverage

    assert coverage("ミナト勤怠とミナトBIがあります", ["ミナト勤怠", "ミナトBI", "ミナト給与", "ミナト請求書"]) == 0.5
    assert coverage("", []) == 1.0


def test_source_recall_matches_files_of_row_page_and_section_sources():
    from app.metrics import source_recall

    sources = ["products.csv:r3", "it_helpdesk.md#vpn接続", "company_overview.pdf:p2"]
    assert source_recall(sources, ["products.csv", "it_helpdesk.md", "work_rules.pdf"]) == 2 / 3
    assert source_recall([], ["faq.csv"]) == 0.0 and source_recall(sources, []) == 1.0
