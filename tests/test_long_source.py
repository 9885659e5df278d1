"""app.workflow.long_source: the window of the top source's other chunks added to context [1], and its
place in the prompt (app.workflow.generate.prepare_prompt)."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from app.text.windows import sentence_windows
from app.workflow.generate import prepare_prompt
from app.workflow.long_source import (
    best_window_elsewhere,
    other_text,
    overlap,
    same_document,
    top_source_window,
    with_window,
)
from app.workflow.state import RAGContext

QUESTION = "自分のマシンで動いている OS の配布元と版数を確かめるには何を実行しますか？"
RELEASE = "Debian のリリースには版数が付きます。"
BASE_FILES = "base-files パッケージが /etc/debian_version に版数を書きます。"
SUPPORT = "古い版のサポートは次の安定版の公開後およそ一年で終わります。"
ANSWER = "自分のマシンで動いている配布元と版数を確かめるには lsb_release -a を実行します。"
PACKAGE = "このコマンドは lsb-release パッケージに入っています。"
# one PDF page cut into three chunks, each repeating the last sentence of the one before (the overlap)
PAGE = [RELEASE + BASE_FILES, BASE_FILES + SUPPORT, SUPPORT + ANSWER + PACKAGE]
SIBLINGS = [{"text": text, "chunk_index": i, "doc_id": "pdf/debian-faq.pdf"} for i, text in enumerate(PAGE)]


def page_doc(text: str = PAGE[0], source: str = "debian-faq.pdf:p21", **meta) -> Document:
    return Document(page_content=text, metadata={"source": source, "doc_id": "pdf/debian-faq.pdf", **meta})


class FakeEmbeddings:
    """Vectors that put the question next to any text naming ``サポート``."""

    def embed_query(self, text):
        return [1.0, 0.0]

    def embed_documents(self, texts):
        return [[1.0, 0.0] if "サポート" in t else [0.0, 1.0] for t in texts]


def test_overlap_is_the_longest_end_the_next_chunk_starts_with():
    assert overlap(PAGE[0], PAGE[1]) == len(BASE_FILES)
    assert overlap(PAGE[1], PAGE[2]) == len(SUPPORT)
    assert overlap("前の文です。共有する", "共有する次の文です。") == 0  # 4 characters: below MIN_OVERLAP
    assert overlap("前の文です。共有する", "共有する次の文です。", min_chars=4) == 4


def test_other_text_keeps_shared_text_once_and_leaves_the_chosen_chunk_out():
    assert other_text([PAGE[0]], SIBLINGS) == [SUPPORT + ANSWER + PACKAGE]
    # the chosen chunk in the middle: its neighbours lose what they share with it
    assert other_text([PAGE[1]], SIBLINGS) == [RELEASE, ANSWER + PACKAGE]
    assert other_text([PAGE[2]], SIBLINGS) == [RELEASE + BASE_FILES]
    assert other_text([PAGE[0], PAGE[2]], SIBLINGS) == []  # every other chunk is in the prompt already


def test_other_text_joins_chunks_without_overlap_by_a_line_break_in_chunk_order():
    paragraphs = [
        {"text": "三つ目。", "chunk_index": 2},
        {"text": "一つ目。", "chunk_index": 0},
        {"text": "二つ目。", "chunk_index": 1},
    ]
    assert other_text(["一つ目。"], paragraphs) == ["二つ目。\n三つ目。"]
    assert other_text(["一つ目。"], paragraphs[1:2]) == []


def test_sentence_windows_take_the_widest_span_that_fits():
    run = SUPPORT + ANSWER + PACKAGE
    wide = sentence_windows([run], 1000)
    assert [(w.start, w.end) for w, _ in wide] == [(0, 2), (0, 3), (1, 3)]
    assert [sentence for _, sentence in wide] == [SUPPORT, ANSWER, PACKAGE]
    narrow = sentence_windows([run], len(ANSWER))
    assert [w.text for w, _ in narrow] == [SUPPORT, ANSWER, PACKAGE]
    assert sentence_windows([run], len(SUPPORT) - 1) == []  # the shortest sentence


def test_the_answer_sentence_in_another_chunk_is_found():
    assert best_window_elsewhere(QUESTION, PAGE[0], SIBLINGS, 240) == SUPPORT + ANSWER + PACKAGE
    # the answer with the sentence after it fits, not with both: the one after is taken
    assert best_window_elsewhere(QUESTION, PAGE[0], SIBLINGS, len(ANSWER + PACKAGE)) == ANSWER + PACKAGE
    assert best_window_elsewhere(QUESTION, PAGE[0], SIBLINGS, len(ANSWER)) == ANSWER
    assert best_window_elsewhere(QUESTION, PAGE[1], SIBLINGS, len(ANSWER)) == ANSWER  # overlap left out: not SUPPORT


def test_a_chunk_another_context_shows_is_not_read_again():
    assert best_window_elsewhere(QUESTION, PAGE[0], SIBLINGS, 240, also_shown=[PAGE[2]]) is None
    assert best_window_elsewhere(QUESTION, PAGE[0], SIBLINGS, 240, also_shown=[PAGE[1]]) == ANSWER + PACKAGE


@pytest.mark.parametrize(
    "query, chosen, siblings, max_chars",
    [
        (QUESTION, PAGE[0], SIBLINGS[:1], 240),  # a source of one chunk
        (QUESTION, PAGE[0], [], 240),  # nothing read
        ("社員食堂の今週のメニューは？", PAGE[0], SIBLINGS, 240),  # no window shares a question term
        (QUESTION, PAGE[0], SIBLINGS, 10),  # no sentence fits
        (QUESTION, PAGE[0], SIBLINGS, 0),
    ],
)
def test_no_window_when_nothing_elsewhere_answers(query, chosen, siblings, max_chars):
    assert best_window_elsewhere(query, chosen, siblings, max_chars) is None


def test_the_embedder_picks_a_window_even_without_a_shared_term():
    query = "社員食堂の今週のメニューは？"
    assert best_window_elsewhere(query, PAGE[0], SIBLINGS, len(SUPPORT), FakeEmbeddings()) == SUPPORT


def test_same_document_keeps_the_chosen_files_chunks():
    other = {"text": "経理の規程です。", "chunk_index": 0, "doc_id": "docs/経理/faq.pdf"}
    assert same_document([*SIBLINGS, other], "pdf/debian-faq.pdf") == SIBLINGS
    assert same_document([*SIBLINGS, other], "") == [*SIBLINGS, other]


def test_top_source_window_reads_the_top_source_and_skips_table_rows():
    asked = []

    def read_source(source):
        asked.append(source)
        return SIBLINGS

    assert top_source_window(QUESTION, [page_doc()], read_source, 60) == ANSWER
    assert top_source_window(QUESTION, [page_doc(), page_doc(PAGE[2])], read_source, 60) is None  # shown as [2]
    row = page_doc("question: 受付時間は？\nanswer: 9時から", source="faq.csv:r2")
    assert top_source_window(QUESTION, [row, page_doc()], read_source, 60) is None
    assert top_source_window(QUESTION, [], read_source, 60) is None
    assert asked == ["debian-faq.pdf:p21"] * 2


def test_an_error_reading_the_source_is_raised():
    def broken(source):
        raise RuntimeError("database gone")

    with pytest.raises(RuntimeError, match="database gone"):
        top_source_window(QUESTION, [page_doc()], broken, 60)


def test_with_window_marks_where_the_window_comes_from():
    assert with_window("選ばれた塊。\n", ANSWER) == "選ばれた塊。\n…" + ANSWER
    assert with_window("選ばれた塊。", None) == "選ばれた塊。"


def context(**kw) -> RAGContext:
    """A context reading the page of SIBLINGS for any source (``read_source=None``: none)."""
    return RAGContext(search=lambda q, k: [], llm=None, **{"read_source": lambda source: SIBLINGS, **kw})


def test_context_one_gains_the_window_of_its_source_in_the_prompt():
    docs = [page_doc(), page_doc("プロキシの設定は管理者に依頼します。", source="it_helpdesk.md#プロキシ")]
    system, prompt, contexts = prepare_prompt(context(top_source_chars=60), QUESTION, docs)
    assert contexts == [PAGE[0] + "\n…" + ANSWER, docs[1].page_content]
    assert f"[1]（出典: debian-faq.pdf:p21）\n{PAGE[0]}\n…{ANSWER}\n\n[2]（出典: it_helpdesk.md#プロキシ）" in prompt
    spec = prepare_prompt(context(top_source_chars=60, prompt_style="spec"), QUESTION, docs)[2]
    assert spec == contexts


@pytest.mark.parametrize(
    "kw, preamble",
    [
        ({"top_source_chars": 0}, ""),  # TOP_SOURCE_CHARS=0: off
        ({"read_source": None}, ""),  # no way to read a source: off
        ({}, "| entity | VPN |"),  # local search's graph tables: off
    ],
)
def test_context_one_is_left_alone_when_off(kw, preamble):
    assert prepare_prompt(context(**kw), QUESTION, [page_doc()], preamble)[2] == [PAGE[0]]


def test_the_window_is_trimmed_to_the_token_budget_with_the_rest():
    ctx = context(top_source_chars=60, count_tokens=len)
    system, whole, _ = prepare_prompt(ctx, QUESTION, [page_doc()])
    ctx.token_budget = len(f"{system}\n{whole}") - 1  # one character too many: context [1] is cut by a quarter
    contexts = prepare_prompt(ctx, QUESTION, [page_doc()])[2]
    with_answer = PAGE[0] + "\n…" + ANSWER
    assert contexts == [with_answer[: int(len(with_answer) * 0.75)]]


def test_the_embedder_adds_nothing_when_the_chosen_chunk_is_nearer():
    chosen = "サポート窓口の受付時間は平日9時から18時までです。"  # the fake puts it next to the question
    siblings = [{"text": chosen, "chunk_index": 0}, {"text": "社員食堂は12時から開きます。", "chunk_index": 1}]
    assert best_window_elsewhere("受付時間は？", chosen, siblings, 240, FakeEmbeddings()) is None


def test_nearest_chunks_keep_the_shown_and_the_nearest_by_stored_vector():
    from app.workflow.long_source import nearest_chunks

    chunks = [
        {"text": "A", "chunk_index": 0, "vector": [1.0, 0.0]},
        {"text": "B", "chunk_index": 1, "vector": [0.0, 1.0]},
        {"text": "C", "chunk_index": 2, "vector": [0.6, 0.8]},
        {"text": "D", "chunk_index": 3, "vector": [0.8, 0.6]},
    ]
    assert [c["text"] for c in nearest_chunks([1.0, 0.0], ["B"], chunks)] == ["A", "B"]
    assert [c["text"] for c in nearest_chunks([0.0, 1.0], ["B"], chunks)] == ["B", "C"]
    plain = [{"text": t, "chunk_index": i} for i, t in enumerate("ABC")]
    assert nearest_chunks([1.0, 0.0], ["A"], plain) == plain  # no stored vectors: all of them
    assert nearest_chunks([1.0, 0.0, 0.0], ["B"], chunks) == chunks  # another model's vectors: all of them


def test_a_source_of_one_chunk_is_not_embedded():
    class Refusing:
        def embed_query(self, text):
            raise AssertionError("nothing to compare: the question must not be embedded")

        embed_documents = embed_query

    chosen = "サポート窓口の受付時間は平日9時から18時までです。"
    assert best_window_elsewhere("受付時間は？", chosen, [{"text": chosen, "chunk_index": 0}], 240, Refusing()) is None
