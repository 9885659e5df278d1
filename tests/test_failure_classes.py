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
