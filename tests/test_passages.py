"""app.workflow.passages (the sentence windows shown first) and app.serving.answers (which earlier
answer a question may be given again): exact values."""

from langchain_core.documents import Document

from app.config import Settings
from app.serving.answers import cache_key, question_key
from app.text.keywords import query_tokens
from app.text.windows import widened
from app.workflow.passages import best_window, merged, passage, passages, term_hits

TEXT = "会社概要です。サポート窓口の受付時間は平日9時から18時です。土日は休みです。"
QUESTION = "サポート窓口の受付時間は？"


def test_the_window_is_the_sentence_holding_the_most_terms():
    assert best_window(TEXT, query_tokens(QUESTION), 240) == ((7, 31), 11)
    assert TEXT[7:31] == "サポート窓口の受付時間は平日9時から18時です。"
    assert best_window(TEXT, ["休み", "土日"], 240) == ((31, 39), 2)
    assert best_window(TEXT, [], 240) == ((0, 7), 0)  # no term anywhere: the first sentence


def test_a_sentence_longer_than_the_width_is_cut_around_its_terms():
    text = "あ" * 100 + "受付時間" + "い" * 100
    (start, end), score = best_window(text, ["受付", "時間"], 40)
    assert (start, end, score) == (90, 130, 2) and "受付時間" in text[start:end]


def test_the_window_grows_over_what_follows_then_what_precedes():
    assert widened(TEXT, (7, 31), 240) == (0, 39)
    assert widened(TEXT, (7, 31), 32) == (7, 39)  # the next sentence fits, the one before does not
    assert widened(TEXT, (7, 31), 24) == (7, 31)  # nothing more fits
    assert widened(TEXT, (0, 7), 30) == (0, 7)  # the next sentence would pass the width


def test_a_faq_row_shows_its_answer_not_only_the_question_it_repeats():
    row = "質問:パスワードを忘れた場合はどうすればよいですか？\n回答:ログイン画面の「パスワードを忘れた方」から再設定してください。"
    doc = Document(page_content=row, metadata={"source": "faq.csv:r1"})
    shown, _ = passage(doc, "パスワードを忘れたときはどうすればいいですか？")
    assert shown["text"] == row


def test_terms_are_found_in_normalized_text_and_marked_in_the_original():
    assert term_hits("ＶＰＮの受付", ["vpn", "受付"]) == [(0, 3, "vpn"), (4, 6, "受付")]
    assert merged([(0, 2), (1, 3), (5, 6), (3, 4)]) == [[0, 4], [5, 6]]


def test_one_passage_per_top_source_the_best_of_its_chunks():
    docs = [
        Document(page_content="土日は休みです。", metadata={"source": "faq.csv:r2", "doc_id": "csv/faq.csv"}),
        Document(page_content="受付時間外はメールで。", metadata={"source": "faq.csv:r3", "doc_id": "csv/faq.csv"}),
        Document(page_content=TEXT, metadata={"source": "faq.csv:r2", "doc_id": "csv/faq.csv"}),
        Document(page_content="受付", metadata={"source": "guide.md#a", "superseded_by": "guide_2024.md"}),
    ]
    shown = passages(QUESTION, docs, n_sources=2, width=60)
    assert shown == [
        {
            "source": "faq.csv:r2",
            "doc_id": "csv/faq.csv",
            "title": "",
            "text": TEXT,  # the best sentence, grown over the others (39 characters, within 60)
            "marks": [[7, 19]],
            "superseded_by": None,
            "effective": None,
        },
        {
            "source": "faq.csv:r3",
            "doc_id": "csv/faq.csv",
            "title": "",
            "text": "受付時間外はメールで。",
            "marks": [[0, 4]],
            "superseded_by": None,
            "effective": None,
        },
    ]
    assert passages(QUESTION, docs, n_sources=3)[2]["superseded_by"] == "guide_2024.md"


def test_one_question_however_it_is_typed():
    assert question_key("  「受付時間は？」") == question_key("受付時間は ?") == "受付時間は"
    assert question_key("ＡＢＣ　受付") == "abc受付"
    assert question_key("受付期間は？") != question_key("受付時間は？")


def test_the_key_names_the_mode_the_readers_and_the_settings():
    settings = Settings()
    key = cache_key("受付時間は？", "hybrid", ["everyone", "経理"], settings)
    assert key == cache_key("受付時間は?", "hybrid", ["経理", "everyone", "経理"], settings)
    assert len(key) == 64
    assert key != cache_key("受付時間は？", "keyword", ["everyone", "経理"], settings)
    assert key != cache_key("受付時間は？", "hybrid", ["everyone"], settings)
    other = settings.changed(answers={"prompt_style": "evidence"})
    assert key != cache_key("受付時間は？", "hybrid", ["everyone", "経理"], other)


def test_the_key_names_the_scope_and_no_scope_keeps_the_key_it_had():
    from app.storage.scope import Scope

    settings, who = Settings(), ["everyone"]
    plain = cache_key("受付時間は？", "hybrid", who, settings)
    assert cache_key("受付時間は？", "hybrid", who, settings, None) == plain
    assert cache_key("受付時間は？", "hybrid", who, settings, Scope()) == plain  # empty: the key kept before scopes
    in_rules = cache_key("受付時間は？", "hybrid", who, settings, Scope(folders=("docs/規程",)))
    assert in_rules != plain
    assert in_rules == cache_key("受付時間は？", "hybrid", who, settings, Scope(folders=("./docs/規程/",)))
    assert in_rules != cache_key("受付時間は？", "hybrid", who, settings, Scope(folders=("docs/",)))
    assert plain != cache_key("受付時間は？", "hybrid", who, settings, Scope(formats=("pdf",)))
    assert plain != cache_key("受付時間は？", "hybrid", who, settings, Scope(since="2025-04-01"))
