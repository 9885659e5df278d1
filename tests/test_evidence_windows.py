"""app.workflow.evidence.windows: sentence windows from every candidate, scored and cut to a budget (exact values)."""

from __future__ import annotations

import math

import pytest
from langchain_core.documents import Document

from app.text.windows import Window, candidate_windows, unit_spans
from app.workflow.evidence import windows
from app.workflow.evidence.windows import merge, rank_prior, select_evidence, term_scores

LONG = (
    "第1章は概要です。" * 20  # 180 characters of filler
    + "サポート窓口の受付時間は平日9時から18時までです。"
    + "土日祝日は休業です。"
    + "メールは24時間受け付けます。"
    + "以上です。" * 20
)


def doc(text: str, source: str, context: str = "") -> Document:
    return Document(page_content=text, metadata={"source": source, "context": context})


def test_a_short_chunk_is_one_unit_and_a_long_one_is_its_sentences():
    assert unit_spans("  店舗:本店\n電話:03-1234  ") == [(2, 18)]
    spans = unit_spans(LONG)
    assert len(spans) == 20 + 3 + 20
    assert LONG[spans[20][0] : spans[20][1]] == "サポート窓口の受付時間は平日9時から18時までです。"
    assert unit_spans("   ") == []


def test_windows_hold_a_sentence_with_its_neighbours_verbatim():
    found = candidate_windows([doc(LONG, "a.pdf:p1"), doc("店舗:本店", "b.csv:r1")])
    assert len(found) == 44
    centre = found[21]
    assert (centre.source, centre.candidate, centre.start, centre.end) == ("a.pdf:p1", 0, 20, 23)
    assert (
        centre.text
        == "サポート窓口の受付時間は平日9時から18時までです。土日祝日は休業です。メールは24時間受け付けます。"
    )
    assert found[0].text == "第1章は概要です。第1章は概要です。"
    assert found[-1] == Window("b.csv:r1", "店舗:本店", 1, 0, 1)


def test_term_scores_weigh_rare_tokens_by_idf():
    scores = term_scores("受付時間", ["受付時間は9時", "受付は9時", "休業日"])
    # tokens 受付, 付時, 時間; df 2, 1, 1 over 3 texts
    rare, common = math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5)
    total = common + 2 * rare
    assert scores == pytest.approx([1.0, common / total, 0.0])
    assert term_scores("", ["a"]) == [0.0]


def test_rank_prior():
    assert [round(rank_prior(r), 3) for r in (0, 1, 3, 9)] == [1.0, 0.75, 0.5, 0.25]


def test_the_best_window_comes_from_a_lower_candidate_when_it_holds_the_answer():
    filler = doc("会社概要のページです。" * 40, "a.pdf:p1")
    chosen = select_evidence("受付時間は何時までですか", [filler, doc(LONG, "b.pdf:p9")], budget=200)
    assert chosen[0].source == "b.pdf:p9"
    assert "平日9時から18時まで" in chosen[0].text
    assert sum(len(w.text) for w in chosen) <= 200


def test_touching_windows_of_one_chunk_become_one_passage():
    first, second = candidate_windows([doc(LONG, "a.pdf:p1")])[21:23]
    merged = merge(first, second, [doc(LONG, "a.pdf:p1")])
    assert (merged.start, merged.end) == (20, 24)
    assert merged.text.startswith("サポート窓口") and merged.text.endswith("以上です。")
    far = candidate_windows([doc(LONG, "a.pdf:p1")])[5]
    assert merge(first, far, [doc(LONG, "a.pdf:p1")]) is None


def test_the_budget_and_the_per_chunk_limit_hold():
    docs = [doc(LONG, f"d{i}.pdf:p1") for i in range(4)]
    chosen = select_evidence("受付時間", docs, budget=120)
    assert sum(len(w.text) for w in chosen) <= 120
    assert (
        len({w.candidate for w in chosen}) == len(chosen)
        or max(sum(w.candidate == c for w in chosen) for c in range(4)) <= windows.PER_CHUNK
    )
    one = select_evidence("受付時間", docs, budget=40)
    assert len(one) == 1 and len(one[0].text) == 40


def test_the_embedder_reorders_windows():
    class Fake:
        def embed_query(self, text):
            return [1.0, 0.0]

        def embed_documents(self, texts):
            return [[1.0, 0.0] if "休業" in t else [0.0, 1.0] for t in texts]

    short = [doc("受付は平日です", "a.csv:r1"), doc("土日は休業です", "a.csv:r2")]
    assert select_evidence("営業日", short, budget=10)[0].source == "a.csv:r1"
    assert select_evidence("営業日", short, budget=10, embeddings=Fake())[0].source == "a.csv:r2"
