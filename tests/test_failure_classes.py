"""scripts/failure_classes.py: issue 29's classes of an evaluation's questions, on exact values."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "failure_classes.py"
spec = importlib.util.spec_from_file_location("failure_classes", SCRIPT)
classes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(classes)

ANSWERABLE = {"answerable": True, "faithfulness": 0.0, "context_keywords": 1.0, "abstained": None}


@pytest.mark.parametrize(
    "result, expected",
    [
        ({**ANSWERABLE, "faithfulness": 1.0}, "right"),
        ({**ANSWERABLE, "context_keywords": 0.5}, "0 not in context"),
        (ANSWERABLE, "1 in context, answered wrong"),
        ({**ANSWERABLE, "abstained": "unstated"}, "1 in context, refused after the model"),
        (
            {**ANSWERABLE, "abstained": "low_coverage", "context_keywords": 0.0, "retrieval_hit": True},
            "3 refused before the model",
        ),
        (
            {**ANSWERABLE, "abstained": "low_coverage", "context_keywords": 0.0, "retrieval_hit": False},
            "0 not in context",
        ),
        ({"answerable": False, "abstained": None}, "4 unanswerable, answered"),
        ({"answerable": False, "abstained": "model"}, "unanswerable, refused"),
    ],
)
def test_classify(result, expected):
    assert classes.classify(result) == expected


def test_plain_contains_reads_no_date_forms():
    assert classes.plain_contains("設立は２００２年", "2002年") and not classes.plain_contains(
        "2002-07-19", "2002年7月"
    )


def test_main_prints_the_table(tmp_path, capsys):
    path = tmp_path / "run.json"
    results = [
        {**ANSWERABLE, "faithfulness": 1.0, "answer": "2002年7月19日です", "expected_keywords": ["2002-07-19"]},
        {"answerable": False, "abstained": None, "answer": "x", "expected_keywords": []},
    ]
    path.write_text(json.dumps({"results": results, "summary": {"first_token_median": 6.5}}), encoding="utf-8")
    assert classes.main([str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "4 unanswerable, answered                   1",
        "right                                      1",
        "2 right only in another form               1  (of the right ones)",
        "5 prompt: 0 context characters (mean), first token 6.50 s (median)",
    ]


JAPAN_ROW = "alpha_2:JP\nalpha_3:JPN\nnumeric:392\nname:Japan\nname_ja:日本"


@pytest.mark.parametrize(
    "result, expected",
    [
        ({**ANSWERABLE, "query": "キーは？", "answer": "表示を切り替えるキーは、[3]"}, "c1 cut short"),
        ({**ANSWERABLE, "query": "手順は？", "answer": "手順は以下の通りです。\n\n1. [2]"}, "c1 cut short"),
        (
            {**ANSWERABLE, "query": "契約は自動で更新されますか？", "answer": "契約は自動で更新されます。[1]"},
            "c2 question given back",
        ),
        (
            {
                **ANSWERABLE,
                "query": "契約は自動で更新されますか？",
                "answer": "資料の該当箇所: 「契約は自動で更新」[1]",
                "evidence_shown": "restated",
            },
            "1 in context, answered wrong",  # the passage shown: not the model's restatement
        ),
        (
            {
                **ANSWERABLE,
                "query": "日本の3文字の国コードは？",
                "answer": "JP[1]",
                "expected_source": "countries.csv:r116",
                "retrieved": ["countries.csv:r116"],
                "contexts": [JAPAN_ROW],
            },
            "c3 right row, wrong cell",
        ),
        (
            {
                "answerable": False,
                "abstained": None,
                "query": "Foo 20 のリリース日は？",
                "answer": "2005-06-06です[1]",
                "retrieved": ["products.csv:r1"],
                "contexts": ["product:Foo\nversion:2.0\nrelease:2005-06-06"],
            },
            "c4 value past the table's end",
        ),
        (
            {
                **ANSWERABLE,
                "query": "q",
                "answer": "x",
                "expected_source": "faq.pdf:p3",
                "retrieved": ["faq.pdf:p3", "g.pdf:p1"],
                "contexts": ["同じ頁の別の部分", "g"],
                "context_keywords": 0.0,
            },
            "c5 another chunk of the source",
        ),
        (
            {**ANSWERABLE, "query": "q", "answer": "別の事実[1]", "cited_sources": ["a.pdf:p1"]},
            "c6 neighbouring fact, cited",
        ),
        ({**ANSWERABLE, "query": "契約は？", "answer": "契約は自動で更新されます[1]", "faithfulness": 1.0}, "right"),
    ],
)
def test_classify_issue_39_reader_classes(result, expected):
    assert classes.classify(result) == expected
