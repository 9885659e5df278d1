"""The values a statement's conditions compare with, grounded in the question (app.tables.grounding):
the model's copied samples dropped, a name in another script read as the question's, a guessed row refused."""

import pytest
from sqlglot import parse_one

from app.tables.grounding import UngroundedValueError, fold, ground_conditions, similar_stretches
from app.tables.statement import check_statement

VALUES = {fold(v) for v in ("輪島市", "珠洲市", "東京都", "慶長", "寛政", "かんせい", "北海道", "青森県", "岩手県")}
SAMPLES = {fold(v) for v in ("慶長", "北海道", "青森県", "岩手県", "16")}


def grounded(sql: str, question: str) -> tuple[str, list[str]]:
    tree = parse_one(sql, read="duckdb")
    changes = ground_conditions(tree, question, VALUES, SAMPLES)
    return tree.sql(dialect="duckdb"), changes


@pytest.mark.parametrize(
    "sql, question, expected",
    [
        # a value the question holds stands, as does a range and a number the question names
        (
            "SELECT a FROM t WHERE \"読み\" = 'かんせい'",
            "読みが「かんせい」の元号は？",
            "SELECT a FROM t WHERE \"読み\" = 'かんせい'",
        ),
        (
            "SELECT a FROM t WHERE y = 2020 AND v > 9",
            "2020年の人口が9人を超える県",
            "SELECT a FROM t WHERE y = 2020 AND v > 9",
        ),
        # a name in another script is read as the question's
        (
            "SELECT a FROM t WHERE \"市区町村名\" = '轮島市'",
            "輪島市のコードは？",
            "SELECT a FROM t WHERE \"市区町村名\" = '輪島市'",
        ),
        # the table's fuller name of what the question names stands
        ("SELECT a FROM t WHERE p = '東京都'", "東京の人口は？", "SELECT a FROM t WHERE p = '東京都'"),
        # a sample copied from the prompt, joined by AND, is dropped
        (
            "SELECT a FROM t WHERE \"読み\" = 'かんせい' AND \"元号\" LIKE '慶長%'",
            "読みが「かんせい」の元号は？",
            "SELECT a FROM t WHERE \"読み\" = 'かんせい' AND TRUE",
        ),
        ("SELECT MAX(x) FROM t WHERE id = 16", "北陸で一番北は？", "SELECT MAX(x) FROM t WHERE TRUE"),
        (
            "SELECT SUM(v) FROM t WHERE p IN ('北海道', '青森県') AND y = 2020",
            "2020年の人口の合計は？",
            "SELECT SUM(v) FROM t WHERE TRUE AND y = 2020",
        ),
    ],
)
def test_conditions_are_grounded_in_the_question(sql, question, expected):
    assert grounded(sql, question)[0] == expected


@pytest.mark.parametrize(
    "sql, question",
    [
        ("SELECT v FROM t WHERE p = '鹿児島県'", "輪島市の人口は何人ですか？"),  # a row the question never named
        ("SELECT v FROM t WHERE p = '北海道' OR q = 1", "人口の合計は？"),  # a sample under OR is not dropped
        ("SELECT v FROM t WHERE NOT p = '北海道'", "人口の合計は？"),
    ],
)
def test_a_value_the_question_does_not_name_is_refused(sql, question):
    with pytest.raises(UngroundedValueError, match="the question names no"):
        grounded(sql, question)


def test_changes_are_said_one_line_each():
    _, changes = grounded("SELECT a FROM t WHERE c = '轮島市' AND id = 16", "輪島市のコードは？")
    assert changes == ["'轮島市' read as '輪島市'", "dropped id = 16 (a sample value)"]


def test_similar_stretches_most_alike_first():
    assert similar_stretches("轮島市", "輪島市のコード")[:2] == ["島市", "輪島市"]
    assert similar_stretches("鹿児島県", "輪島市の人口") == []


def test_a_double_quoted_value_is_read_as_a_string_not_a_column():
    sql = check_statement('SELECT "市" FROM t WHERE "標語" LIKE "%都市%"', "t", ["市", "標語"], 50, 4000)
    assert sql == 'SELECT "市" FROM t WHERE "標語" LIKE \'%都市%\' LIMIT 50'
    with pytest.raises(Exception, match="no column"):  # a name outside a comparison is still a column
        check_statement('SELECT "面積" FROM t', "t", ["市", "標語"], 50, 4000)


def test_missing_values_are_the_asked_texts_no_cell_holds():
    from app.tables.grounding import missing_values

    sql = "SELECT COUNT(*) FROM t WHERE \"県\" = '滋賀県' AND \"市\" IN ('輪島市', '大津市') AND y = 2020 AND n LIKE '%x%'"
    assert missing_values(sql, VALUES) == ["滋賀県", "大津市"]
    assert missing_values("SELECT COUNT(*) FROM t", VALUES) == []
