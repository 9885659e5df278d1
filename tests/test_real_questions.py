"""The real-corpus question sets (data/real/): well-formed, disjoint, honest about paraphrases.

The corpus itself is fetched by `make real-corpus` (Debian packages, see scripts/real_corpus.py);
where it is present, every expected keyword must occur in its expected source (a check of the
data, so that a question can be answered at all)."""

import json
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETS = {name: ROOT / "data" / "real" / f"{name}_questions.json" for name in ("tuning", "report")}
CORPUS = ROOT / ".cache" / "real-corpus"


def load(name):
    return json.loads(SETS[name].read_text(encoding="utf-8"))


def norm(text):
    return "".join(unicodedata.normalize("NFKC", text).lower().split())


@pytest.mark.parametrize("name", SETS)
def test_question_set_is_well_formed_and_a_third_paraphrased(name):
    from app.evaluation.run import load_questions

    questions = [q for q in load_questions(SETS[name]) if q["expected_source"]]
    assert len(questions) >= 20
    assert sum(bool(q.get("paraphrased")) for q in questions) * 3 >= len(questions)
    assert any(q["expected_source"].startswith(("countries.csv", "currencies.csv")) for q in questions)


def test_report_set_has_at_least_eight_unanswerable_questions_and_tuning_some():
    assert sum(q["expected_source"] is None for q in load("report")) >= 8
    assert sum(q["expected_source"] is None for q in load("tuning")) >= 5


def test_sets_are_disjoint_and_together_at_least_40():
    tuning, report = load("tuning"), load("report")
    assert not {q["query"] for q in tuning} & {q["query"] for q in report}
    assert len([q for q in tuning + report if q["expected_source"]]) >= 40


@pytest.mark.skipif(not (CORPUS / "pdf").is_dir(), reason="the real corpus is not fetched (make real-corpus)")
def test_every_expected_keyword_is_in_its_source():
    from app.formats.csv_rows import csv_table
    from app.formats.pdf import pdf_document

    texts = {}
    for path in (CORPUS / "pdf").glob("*.pdf"):
        for text, source, _ in pdf_document(path)[1]:
            texts[source] = texts.get(source, "") + "\n" + text
    for path in (CORPUS / "csv").glob("*.csv"):
        texts.update({source: text for text, source in csv_table(path)[1]})
    corpus = norm("\n".join(texts.values()))
    for name in SETS:
        for q in load(name):
            if q["expected_source"] is None:  # unanswerable: no document mentions what it asks about
                assert q["absent_words"] and not [w for w in q["absent_words"] if norm(w) in corpus], q["query"]
                continue
            for keyword in q["expected_keywords"]:
                assert norm(keyword) in norm(texts[q["expected_source"]]), (q["query"], keyword)
