"""The table path's pure parts (app.tables.answer) with exact values, and TableAnswerer over real DuckDB
with a scripted model (the real model runs in tests/integration/test_tables_answers.py)."""

from dataclasses import dataclass
from pathlib import Path

import pytest

from app.config import TableSettings
from app.tables.answer import (
    NOT_FOUND,
    TableAnswerer,
    asked_noun,
    asks_for_column,
    choose_table,
    decimal_places,
    format_value,
    lookup_rows,
    question_intent,
    table_holds,
)
from app.tables.extract import csv_tables
from app.tables.prompt import build_prompt, extract_sql, spell_out_numbers

PRODUCTS = Path(__file__).parents[1] / "data" / "csv" / "products.csv"


@dataclass(frozen=True)
class Table:
    """A stored table as app.storage.table_rows.StoredTable gives it (the attributes the path reads)."""

    id: int
    source_file: str
    sheet: str
    columns: list

    def cite(self, n: int) -> str:
        return f"{self.source_file}:{self.sheet}!r{n}" if self.sheet else f"{self.source_file}:r{n}"


def stored(path: Path, table_id: int = 1):
    """A CSV as the store keeps it: the table's columns (3 samples) and its rows as [[text, value], …]."""
    (table,) = csv_tables(path)
    columns = []
    for i, (name, kind, unit) in enumerate(zip(table.columns, table.kinds, table.units)):
        samples = list(dict.fromkeys(c[i].text for _, c in table.rows if c[i].text))[:3]
        columns.append({"name": name, "kind": kind, "unit": unit, "samples": samples})
    rows = [
        (n, [[c.text, c.value if c.kind in ("number", "date") else None] for c in cells]) for n, cells in table.rows
    ]
    return Table(table_id, path.name, "", columns), rows


FAQ = Table(
    2, "faq.csv", "", [{"name": "質問", "kind": "text", "unit": ""}, {"name": "回答", "kind": "text", "unit": ""}]
)


@pytest.mark.parametrize(
    "question, intent",
    [
        ("一番安い製品はどれですか？", "min"),
        ("最も高い製品は？", "max"),
        ("製品はいくつありますか？", "count"),
        ("製品は何件ありますか", "count"),
        ("価格の合計は？", "total"),
        ("価格の平均はいくらですか", "average"),
        ("最新の改定日は？", "latest"),
        ("価格が5000円以上の製品は？", "filter"),
        ("ミナトBIの価格はいくらですか？", None),
        ("有給休暇は何日ですか", None),
    ],
)
def test_question_intent(question, intent):
    assert question_intent(question) == intent


def test_choose_table_takes_the_one_whose_columns_the_question_names():
    products, _ = stored(PRODUCTS)
    assert choose_table("一番安い製品はどれですか？", [FAQ, products], "min") is products
    assert choose_table("よくある質問は何件？", [FAQ, products], "count") is FAQ
    assert choose_table("一番安い製品は？", [FAQ], "min") is None  # no number column
    assert choose_table("有給休暇は何日ですか", [products], None) is None  # shares no word


def test_lookup_rows_and_asked_columns():
    products, rows = stored(PRODUCTS)
    kinds = [c["kind"] for c in products.columns]
    assert lookup_rows("ミナトBIの価格はいくらですか？", rows, kinds) == [4]
    assert lookup_rows("ミナトXYZの価格は？", rows, kinds) == []
    assert asks_for_column("ミナトXYZの価格は？", products.columns) is True
    assert asks_for_column("ミナトXYZについて", products.columns) is False


def test_build_prompt_lists_columns_with_kinds_units_and_numbers():
    products, _ = stored(PRODUCTS)
    prompt = build_prompt(" 一番安い製品はどれですか？ ", products.columns)
    assert '"価格" 数値(円) 例: 9800, 500, 300\n' in prompt
    assert '"製品名" 文字列 例: ミナトクラウド会計, ミナト経費精算, ミナト勤怠\n' in prompt
    assert prompt.endswith("質問: 一番安い製品はどれですか？\nSQL:")


@pytest.mark.parametrize(
    "reply, sql",
    [
        (
            '```sql\nSELECT "製品名"\nFROM t ORDER BY "価格" LIMIT 1;\n```',
            'SELECT "製品名" FROM t ORDER BY "価格" LIMIT 1',
        ),
        ("SQL: select count(*) from t\n\n説明: 行数です", "select count(*) from t"),
        ("わかりません", ""),
    ],
)
def test_extract_sql(reply, sql):
    assert extract_sql(reply) == sql


def answerer(reply: str, tables=None, rows=None) -> tuple[TableAnswerer, list[str]]:
    """A TableAnswerer over products.csv whose model always replies ``reply`` (prompts recorded)."""
    products, product_rows = stored(PRODUCTS)
    prompts: list[str] = []

    def generate(prompt: str) -> str:
        prompts.append(prompt)
        return reply

    loaded = {products.id: product_rows, FAQ.id: rows or []}
    made = TableAnswerer(lambda: tables or [FAQ, products], loaded.__getitem__, generate, TableSettings())
    return made, prompts


def test_the_cheapest_product_is_answered_from_its_row_with_its_citation():
    made, prompts = answerer('SELECT "製品名", "価格" FROM t ORDER BY "価格" ASC LIMIT 1')
    found = made.answer("一番安い製品はどれですか？")
    assert found.answer == (
        "products.csv から該当する行です。\n"
        "・製品名: ミナト勤怠、価格: 1ユーザーあたり月額300円（税別）、仕様: 打刻、シフト管理、残業時間の自動集計、"
        "有給休暇の管理、対象: シフト勤務のある店舗や工場 [products.csv:r3]"
    )
    assert found.sources == ["products.csv:r3"]
    assert found.sql == 'SELECT "製品名", "価格" FROM t ORDER BY "価格" ASC LIMIT 1'
    assert found.rows == [{"製品名": "ミナト勤怠", "価格": "300"}]
    assert len(prompts) == 1


@pytest.mark.parametrize(
    "question, sql, answer, sources",
    [
        ("製品はいくつありますか？", "SELECT COUNT(*) FROM t", "products.csv で条件に合う行は7件です。", 7),
        ("価格の合計は？", 'SELECT SUM("価格") FROM t', "products.csv の「価格」の合計は1,262,000円です。", 7),
        (
            "価格が5000円以上の製品はいくつ？",
            'SELECT COUNT(*) FROM t WHERE "価格" >= 5000',
            "products.csv で条件に合う行は3件です。",
            3,
        ),
        ("価格の平均は？", 'SELECT AVG("価格") FROM t', "products.csv の「価格」の平均は約180,286円です。", 7),
    ],
)
def test_counts_and_aggregates_are_written_with_the_columns_unit(question, sql, answer, sources):
    made, _ = answerer(sql)
    found = made.answer(question)
    assert found.answer == answer and len(found.sources) == sources


def test_a_lookup_that_finds_no_row_says_so_and_names_the_table():
    made, _ = answerer('SELECT "価格" FROM t WHERE "製品名" = \'ミナトXYZ\'')
    found = made.answer("ミナトXYZの価格は？")
    assert (found.answer, found.found, found.sources) == (
        f"{NOT_FOUND}（products.csv に「ミナトXYZ」はありません）",
        False,
        [],
    )


def test_a_count_of_what_the_table_does_not_name_is_not_zero_but_absent():
    made, _ = answerer("SELECT COUNT(*) FROM t WHERE \"対象\" = '官公庁'")
    found = made.answer("対象が官公庁の製品はいくつありますか？")
    assert (found.answer, found.found) == (f"{NOT_FOUND}（products.csv に「官公庁」はありません）", False)


def test_a_named_row_whose_asked_cell_is_empty_is_not_stated():
    # the row is found, its cell holds nothing (令和の終了日): not stated, rather than the row quoted
    made, _ = answerer('SELECT CAST(NULL AS VARCHAR) AS "終了日" FROM t WHERE "製品名" = \'ミナト勤怠\'')
    found = made.answer("ミナト勤怠の仕様は？")  # a named row: the lookup is taken
    assert (found.answer, found.found) == (f"{NOT_FOUND}（products.csv を検索しました）", False)


@pytest.mark.parametrize(
    "question, reply",
    [
        ("有給休暇は何日ですか", "SELECT COUNT(*) FROM t"),  # no table fits: the model is not asked
        ("一番安い製品はどれですか？", "DROP TABLE t"),  # refused
        ("一番安い製品はどれですか？", "わかりません"),  # no SQL
        ("価格が10000000円以上の製品は？", 'SELECT "製品名" FROM t WHERE "価格" >= 10000000'),  # empty, not a lookup
        ("一番安い製品はどれですか？", 'SELECT "製品名" FROM t WHERE "製品名" > 1'),  # DuckDB refuses the comparison
    ],
)
def test_the_text_path_follows_when_the_table_path_cannot_answer(question, reply):
    made, _ = answerer(reply)
    assert made.answer(question) is None


def test_a_named_row_is_looked_up_by_its_text_and_quoted():
    made, _ = answerer('SELECT "価格" FROM t WHERE "製品名" = \'ミナトBI\'')
    found = made.answer("ミナトBIの価格はいくらですか？")
    assert found.sources == ["products.csv:r4"] and found.rows == [{"価格": "48,000"}]
    assert "・製品名: ミナトBI、価格: 月額48000円（税別）" in found.answer


def test_the_workflow_answers_a_table_question_without_searching_and_falls_back_otherwise():
    from app import graph
    from app.workflow.state import RAGContext

    searched: list[str] = []

    def search(query: str, k: int) -> list:
        searched.append(query)
        return []

    made, _ = answerer("SELECT COUNT(*) FROM t")
    ctx = RAGContext(search=search, llm=None, tables=made)
    state = graph.run_rag("製品はいくつありますか？", ctx, graph.build_rag_graph())
    assert (state["answer"], state["sources"][:2]) == (
        "products.csv で条件に合う行は7件です。",
        ["products.csv:r1", "products.csv:r2"],
    )
    assert state["table"] == {
        "table": "products.csv",
        "sql": "SELECT COUNT(*) FROM t LIMIT 50",
        "rows": [{"count_star()": "7"}],
    }
    assert searched == []
    state = graph.run_rag("有給休暇は何日ですか", ctx, graph.build_rag_graph())
    assert searched == ["有給休暇は何日ですか"] and "table" not in state


@pytest.mark.parametrize(
    "question, intent",
    [
        ("県庁がいちばん東にある都道府県はどこ？", "extreme"),  # 一番 spelled in kana, no max/min word
        ("経度が最も小さい市町村は？", "min"),
        ("期間が最も長い元号は？", "max"),
        ("この一覧でいちばん最初に始まった元号は？", "earliest"),  # not a filter for 一覧
        ("2020年に人口70万人を下回っていた県は？", "filter"),
        ("開始日が1900年1月1日以降の元号は？", "filter"),
    ],
)
def test_question_intent_reads_kana_spellings_and_more_conditions(question, intent):
    assert question_intent(question) == intent


def place_table(table_id: int, file: str, columns: list[tuple[str, str, list[str]]]) -> Table:
    return Table(table_id, file, "", [{"name": n, "kind": k, "unit": "", "samples": s} for n, k, s in columns])


CODES = place_table(3, "都道府県コード一覧.csv", [("都道府県名", "text", ["北海道"]), ("緯度", "number", ["43.06"])])
TOWNS = place_table(4, "北陸の市町村一覧.csv", [("都道府県名", "text", ["富山県"]), ("市区町村名", "text", ["富山市"]),
                                            ("緯度", "number", ["36.69"])])  # fmt: skip
PEOPLE = place_table(5, "都道府県別人口.csv", [("地域", "text", ["北海道"]), ("表章項目", "text", ["人口"]),
                                          ("value", "number", ["5683062"])])  # fmt: skip


def test_choose_table_counts_shared_character_pairs_with_names_and_short_samples():
    # 人口 is only in the population table's name and samples; a tie goes to the table the file name names
    assert choose_table("2020年の人口が100万人未満の都道府県はいくつ？", [TOWNS, CODES, PEOPLE], "count") is PEOPLE
    assert choose_table("緯度が40以上の都道府県は？", [TOWNS, CODES], "filter") is CODES
    products, _ = stored(PRODUCTS)  # a long sample (有給休暇の管理 in a product's spec) names nothing
    assert choose_table("有給休暇は何日ですか", [products], None) is None


def test_a_date_cell_named_in_the_question_is_a_lookup():
    rows = [
        (1, [["元治", None], ["1864年3月27日", "1864-03-27"]]),
        (2, [["慶応", None], ["1865年5月1日", "1865-05-01"]]),
    ]
    assert lookup_rows("1864年3月27日に始まった元号は？", rows, ["text", "date"]) == [1]


@pytest.mark.parametrize(
    "question, noun, held",
    [("福井市の面積は何平方キロメートルですか？", "面積", False), ("2000年の秋田県の人口は何人ですか？", "人口", True)],
)
def test_a_lookup_asking_for_what_no_column_holds_is_not_taken(question, noun, held):
    assert asked_noun(question) == noun and table_holds(noun, PEOPLE) is held


def test_a_sum_of_a_code_column_is_refused_and_an_average_is_rounded_to_the_columns_precision():
    made, _ = answerer('SELECT SUM("価格") FROM t')
    assert made.answer("価格の合計は？") is not None
    code = place_table(1, "codes.csv", [("市区町村ID", "number", ["16201"]), ("市区町村名", "text", ["富山市"])])
    rows = [(1, [["16201", 16201], ["富山市", None]]), (2, [["16202", 16202], ["高岡市", None]])]
    made = TableAnswerer(
        lambda: [code], {1: rows}.__getitem__, lambda p: 'SELECT SUM("市区町村ID") FROM t', TableSettings()
    )
    assert made.answer("市区町村IDの合計は？") is None
    assert decimal_places([(1, [["1.25", 1.25]]), (2, [["3", 3]])], 0) == 2
    assert format_value(1394735.6, "人", 0) == "約1,394,736人" and format_value(2.5, "", 1) == "2.5"


def test_spell_out_numbers_writes_man_and_oku_as_digits():
    assert spell_out_numbers("人口70万人を下回る県は？") == "人口700000人を下回る県は？"
    assert spell_out_numbers("1億2000万円以上、2024年4月1日") == "120000000円以上、2024年4月1日"


def test_a_failed_statement_is_asked_again_once_with_its_reason():
    replies = iter(['SELECT "価格" FROM t WHERE "製品名" = \'鹿児島\'', "SELECT COUNT(*) FROM t"])
    prompts: list[str] = []
    products, product_rows = stored(PRODUCTS)
    made = TableAnswerer(
        lambda: [products], {products.id: product_rows}.__getitem__,
        lambda prompt: prompts.append(prompt) or next(replies), TableSettings(),
    )  # fmt: skip
    found = made.answer("製品はいくつありますか？")
    assert found.answer == "products.csv で条件に合う行は7件です。" and len(prompts) == 2
    assert prompts[1].startswith(prompts[0] + ' SELECT "価格" FROM t WHERE "製品名" = \'鹿児島\'\n\n')
    assert "この SQL は使えません: the question names no '鹿児島'" in prompts[1]
    assert prompts[1].endswith("質問: 製品はいくつありますか？\nSQL:")


def test_without_retries_the_model_is_asked_once():
    made, prompts = answerer("DROP TABLE t")
    made.settings = TableSettings(sql_retries=0)
    assert made.answer("一番安い製品はどれですか？") is None and len(prompts) == 1
    made, prompts = answerer("DROP TABLE t")  # the default: asked again once, refused again
    assert made.answer("一番安い製品はどれですか？") is None and len(prompts) == 2
