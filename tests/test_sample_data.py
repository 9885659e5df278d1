"""The committed sample corpus: PDFs extract as the expected Japanese text, and every
evaluation keyword really occurs in its expected source."""
import json
from pathlib import Path

import pytest

from app.ingest import load_csvs, load_pdfs
from app.metrics import normalize

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def texts():
    return {source: text for text, source in load_pdfs(DATA / "pdf") + load_csvs(DATA / "csv")}


@pytest.mark.parametrize("source,expected", [
    ("company_overview.pdf:p1", "本社は東京都港区芝浦3-4-1に置いています。"),
    ("company_overview.pdf:p2", "2021年2月、情報セキュリティマネジメントシステムの国際規格ISO/IEC 27001の認証を取得しました。"),
    ("company_overview.pdf:p3", "企業理念は「データで働く人を自由にする」です。"),
    ("technical_guide.pdf:p1", "推奨ブラウザはGoogle Chromeの最新版とMicrosoft Edgeの最新版です。"),
    ("technical_guide.pdf:p2", "レート制限は1つのAPIキーにつき1分あたり600リクエストです。"),
    ("technical_guide.pdf:p3", "エラーコードE3010は処理のタイムアウトを表します。"),
    ("technical_guide.pdf:p4", "保持期間は35日間です。"),
])
def test_pdf_pages_extract_expected_japanese(texts, source, expected):
    assert expected in texts[source]


def test_sample_corpus_has_the_expected_sources(texts):
    assert len([s for s in texts if s.startswith("faq.csv")]) == 10
    assert len([s for s in texts if s.startswith("products.csv")]) == 5
    assert len([s for s in texts if ".pdf:" in s]) == 7


QUESTIONS = json.loads((DATA / "eval_questions.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("question", QUESTIONS, ids=[q["expected_source"] for q in QUESTIONS])
def test_every_expected_keyword_is_in_its_source(texts, question):
    source_text = normalize(texts[question["expected_source"]])
    missing = [k for k in question["expected_keywords"] if normalize(k) not in source_text]
    assert not missing, f"{question['expected_source']} lacks {missing}"


def test_questions_cover_all_four_documents():
    files = {q["expected_source"].split(":")[0] for q in QUESTIONS}
    assert files == {"faq.csv", "products.csv", "company_overview.pdf", "technical_guide.pdf"}
