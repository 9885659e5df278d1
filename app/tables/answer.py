"""A question about a table answered by computing over it: which kind of question it is, which table
it is about, the prompt that asks the model for one SELECT, and the answer written from the result.

:class:`TableAnswerer` runs the path with what it is given (the asker's tables and rows, read by
PostgreSQL with the asker's principals; the model; the settings): intent → table → prompt → the
model's SQL → :func:`app.tables.statement.check_statement` → :func:`app.tables.runner.run_query` →
an answer written here, never by the model. It returns None — the workflow then takes the text path —
when the question is no table question, no table fits, the model writes no acceptable SQL, the query
fails, or a non-lookup finds nothing. A lookup that finds no row is answered ``資料に記載がありません``
with the table searched.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from app.tables.errors import TableQueryError
from app.tables.grounding import fold, ground_statement, missing_values
from app.tables.prompt import build_prompt, extract_sql, retry_prompt
from app.tables.runner import ROW_COLUMN, TABLE_NAME, QueryResult, TableData, run_query
from app.tables.statement import aggregated_column, check_statement, is_aggregate, source_statement
from app.tables.values import format_number

log = logging.getLogger(__name__)

NOT_FOUND = "資料に記載がありません"
SOURCE_ROWS = 20  # rows cited for an aggregate (the rows its WHERE keeps)
# What a question asks for, by the words that say so (first match wins, in this order).
INTENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("average", ("平均",)),
    ("total", ("合計", "総額", "総計", "合わせて")),
    ("count", ("何件", "何個", "何社", "何人", "何名", "何種類", "いくつ", "件数", "数は")),
    (
        "max",
        (
            "一番高い",
            "最も高い",
            "最高",
            "最大",
            "一番多い",
            "最も多い",
            "一番大きい",
            "最も大きい",
            "一番長い",
            "最も長い",
        ),
    ),
    (
        "min",
        (
            "一番安い",
            "最も安い",
            "最安",
            "最小",
            "最低",
            "一番少ない",
            "最も少ない",
            "一番小さい",
            "最も小さい",
            "一番短い",
            "最も短い",
        ),
    ),
    ("latest", ("最新", "一番新しい", "最も新しい", "直近", "一番遅い", "最後")),
    ("earliest", ("一番古い", "最も古い", "一番早い", "最も早い", "最初")),
    ("extreme", ("一番", "最も")),  # いちばん東, 最も北: an extreme the model's ORDER BY picks
    (
        "filter",
        (
            "以上",
            "以下",
            "未満",
            "超え",
            "を超",
            "上回",
            "下回",
            "以降",
            "以前",
            "より前",
            "より後",
            "より高い",
            "より安い",
            "より多い",
            "より少ない",
            "一覧",
        ),
    ),
)
_SPELLINGS = (("いちばん", "一番"), ("もっとも", "最も"))  # a word's kana spelling, as the intents spell it
_NEEDS = {"average": "number", "total": "number", "latest": "date", "earliest": "date"}
_EXTREMES = ("max", "min", "extreme")  # need a number or a date column
_CODE_COLUMN = re.compile(r"(?i)(id|コード|code|番号|no\.?)$")  # summing or averaging one is never an answer
_SAMPLE_CHARS = 8  # a sample this short names something (富山県, 人口); a longer one is prose
_AGGREGATE_WORDS = {"average": "平均", "total": "合計", "max": "最大", "min": "最小"}


@dataclass(frozen=True)
class TableAnswer:
    """What the table path answered: the answer, the rows used (citations), the SQL run, the table."""

    answer: str
    sources: list[str]
    sql: str
    table: str
    rows: list[dict] = field(default_factory=list)  # the result as {column: value} (for --json)
    found: bool = True  # False: a lookup that found no row


def question_intent(question: str) -> str | None:
    """The kind of table question ``question`` asks (``count``, ``total``, ``average``, ``max``, ``min``,
    ``latest``, ``earliest``, ``extreme`` (一番/最も with another word), ``filter``), or None (a lookup, or
    no table question)."""
    folded = fold(question)
    for kana, kanji in _SPELLINGS:
        folded = folded.replace(kana, kanji)
    return next((intent for intent, words in INTENTS if any(w in folded for w in words)), None)


def table_label(table) -> str:
    """A table as answers name it: ``products.csv``, ``名簿.xlsx の 社員名簿``."""
    return f"{table.source_file} の {table.sheet}" if table.sheet else table.source_file


def _bigrams(text: str) -> set[str]:
    """The folded text's character pairs without a digit (``2020年`` says nothing about which table)."""
    folded = fold(text)
    return {folded[i : i + 2] for i in range(len(folded) - 1) if not any(ch.isdigit() for ch in folded[i : i + 2])}


def table_words(table) -> set[str]:
    """What a table is called and holds, as character pairs: its file stem, sheet, column names and
    short sample values (``人口``, ``富山県``; a long sample is prose and would match anything)."""
    texts = [table.source_file.rsplit(".", 1)[0], table.sheet or ""]
    for c in table.columns:
        texts.append(c["name"])
        texts += [s for s in c.get("samples") or [] if len(s) <= _SAMPLE_CHARS]
    return set().union(*(_bigrams(t) for t in texts))


def choose_table(question: str, tables: Sequence, intent: str | None):
    """The table ``question`` is about: the one whose name, sheet, column names and short sample values
    share the most character pairs with it (on a tie, the one whose file or sheet name shares more), among
    those with a column of the kind the intent needs; None when none shares one."""
    best, best_score = None, (0, 0)
    asked = _bigrams(question)
    for table in tables:
        kinds = {c["kind"] for c in table.columns}
        need = _NEEDS.get(intent or "")
        if need and need not in kinds or intent in _EXTREMES and not kinds & {"number", "date"}:
            continue
        named = _bigrams(table.source_file.rsplit(".", 1)[0] + (table.sheet or ""))
        score = (len(asked & table_words(table)), len(asked & named))
        if score[0] and score > best_score:
            best, best_score = table, score
    return best


def lookup_rows(question: str, rows: Sequence[tuple[int, list]], kinds: Sequence[str]) -> list[int]:
    """The rows a lookup names: those with a text or date cell (3+ characters) that occurs in the question
    (``1864年3月27日に始まった元号は``), or that holds a quoted stretch of it of 4+ characters
    (``「豊かな自然と共生する…」を掲げている市``)."""
    folded = fold(question)
    quoted = [fold(q) for q in re.findall(r"[「『]([^」』]{4,})[」』]", question)]
    named = []
    for n, cells in rows:
        for (text, _), kind in zip(cells, kinds):
            cell = fold(text)
            if kind in ("text", "date") and len(cell) >= 3 and (cell in folded or any(q in cell for q in quoted)):
                named.append(n)
                break
    return named


def asks_for_column(question: str, columns: Sequence[dict]) -> bool:
    """Whether ``question`` asks for a column's value of something (``ミナトBIの価格は``): ``の`` then a
    column name of two or more characters."""
    folded = fold(question)
    return any(len(c["name"]) >= 2 and "の" + fold(c["name"]) in folded for c in columns)


def asked_noun(question: str) -> str | None:
    """What a lookup asks for: the words between the last ``の`` and ``は``/``を``/``って``
    (``福井市の面積は何平方キロメートル`` asks for 面積), or None."""
    found = re.findall(r"の([^の、。?？「」]{2,12}?)(?:は|を|って)", fold(question))
    return found[-1] if found else None


def table_holds(noun: str, table) -> bool:
    """Whether a table's names or short samples share a character pair with ``noun`` (a column the
    question asks for: 人口 is in 都道府県別人口; 面積 is in no table of places)."""
    return bool(_bigrams(noun) & table_words(table)) or not _bigrams(noun)


def format_value(value: Any, unit: str = "", places: int | None = None) -> str:
    """A result value as the answer writes it: a number with its column's unit (rounded to ``places``
    decimals, ``約`` before it when that changed it), a date in Japanese."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, (int, float)) and places is not None and round(value, places) != value:
        return "約" + format_number(round(value, places) if places else round(value)) + unit
    if isinstance(value, (int, float)):
        return format_number(value) + unit
    if isinstance(value, date):
        return f"{value.year}年{value.month}月{value.day}日"
    return str(value)


def _aggregate_column(sql: str, columns: Sequence[dict]) -> dict | None:
    """The table column an aggregate's projected value is computed from (its unit), if one."""
    name = aggregated_column(sql)
    return next((c for c in columns if c["name"] == name), None)


def decimal_places(rows: Sequence[tuple[int, list]], index: int) -> int:
    """The most decimals a number column's stored values have (0 for a column of whole numbers)."""
    places = 0
    for _, cells in rows:
        value = cells[index][1] if index < len(cells) else None
        if isinstance(value, float) and not value.is_integer():
            places = max(places, len(repr(value).split(".")[1]))
    return places


def write_answer(
    intent: str | None,
    table,
    sql: str,
    result: QueryResult,
    cited: dict[int, list],
    columns: Sequence[dict],
    places: int | None = None,
) -> str:
    """The answer written from the result (never the model's words): a count, an aggregate with its
    unit (an average rounded to ``places``, the decimals its column's values have), or the rows
    returned quoted from their cells with their citations."""
    label = table_label(table)
    if is_aggregate(sql) and len(result.rows) == 1 and len(result.columns) == 1:
        value = result.rows[0][0]
        if re.match(r"(?i)count", result.columns[0]):
            return f"{label} で条件に合う行は{format_value(value)}件です。"
        column = _aggregate_column(sql, columns)
        word = _AGGREGATE_WORDS.get(intent or "", "計算結果")
        unit = column["unit"] if column and column["kind"] == "number" else ""
        name = column["name"] if column else result.columns[0]
        shown = format_value(value, unit, places if re.match(r"(?i)avg", result.columns[0]) else None)
        return f"{label} の「{name}」の{word}は{shown}です。"
    lines = [f"{label} から該当する行です。"]
    names = [c["name"] for c in columns]
    for n, cells in cited.items():
        quoted = "、".join(f"{name}: {text}" for name, (text, _) in zip(names, cells) if text)
        lines.append(f"・{quoted} [{table.cite(n)}]")
    return "\n".join(lines)


def _typed_cells(cells: Sequence, kinds: Sequence[str]) -> list:
    """A stored row's values as the runner loads them: a text column's text, another column's typed value."""
    return [text if kind == "text" else value for (text, value), kind in zip(cells, kinds)]


@dataclass
class TableAnswerer:
    """The table path for one asker: ``list_tables()`` gives the tables they may read
    (app.storage.table_rows.readable_tables), ``load_rows(table_id)`` a table's rows they may read;
    ``generate(prompt)`` is the model's completion; ``settings`` the TableSettings."""

    list_tables: Callable[[], Sequence]
    load_rows: Callable[[int], list[tuple[int, list]]]
    generate: Callable[[str], str]
    settings: Any

    def answer(self, question: str) -> TableAnswer | None:
        """The table path's answer to ``question``, or None to take the text path (see the module docstring)."""
        intent = question_intent(question)
        table = choose_table(question, self.list_tables(), intent)
        if table is None:
            return None
        rows = self.load_rows(table.id)
        kinds = [c["kind"] for c in table.columns]
        if intent is None and not (lookup_rows(question, rows, kinds) or asks_for_column(question, table.columns)):
            return None  # neither an aggregate, an extreme, a filter nor a named row or column
        noun = asked_noun(question) if intent is None else None
        if noun and not table_holds(noun, table):
            return None  # a named row, but asked for what the table does not hold (the text path answers)
        try:
            return self._run(question, intent, table, rows, kinds)
        except TableQueryError as exc:
            log.info("table path not taken for %s: %s", table_label(table), exc)
            return None

    def _run(self, question: str, intent: str | None, table, rows, kinds) -> TableAnswer | None:
        prompt = build_prompt(question, table.columns)
        reply = self.generate(prompt)
        for retry in range(self.settings.sql_retries + 1):
            try:
                return self._compute(extract_sql(reply), question, intent, table, rows, kinds)
            except TableQueryError as exc:
                if retry == self.settings.sql_retries:
                    raise
                log.info("table SQL asked again (%s)", exc)
                reply = self.generate(retry_prompt(prompt, extract_sql(reply), exc))
        return None

    def _compute(self, statement: str, question: str, intent: str | None, table, rows, kinds) -> TableAnswer | None:
        """The answer computed by the model's ``statement``, checked, grounded and run (TableQueryError
        when any of these fails)."""
        names = [c["name"] for c in table.columns]
        sql = check_statement(statement, TABLE_NAME, names, self.settings.result_rows, self.settings.sql_max_chars)
        values = {fold(text) for _, cells in rows for text, _ in cells if text}
        sql = ground_statement(sql, question, values, table.columns)
        data = TableData(names, kinds, [(n, _typed_cells(cells, kinds)) for n, cells in rows])
        column = _aggregate_column(sql, table.columns) if is_aggregate(sql) else None
        if column and _CODE_COLUMN.search(column["name"]) and re.search(r"(?i)\b(sum|avg)\(", sql):
            raise TableQueryError(f"SQL refused: a sum or average of the code column {column['name']}")
        result = run_query(sql, data, self.settings)
        by_number = dict(rows)
        used = source_statement(sql, ROW_COLUMN, SOURCE_ROWS)
        numbers = [int(r[-1]) for r in run_query(used, data, self.settings).rows] if used else []
        cited = {n: by_number[n] for n in numbers if n in by_number}
        empty = not result.rows or all(v is None for row in result.rows for v in row)
        label = table_label(table)
        missing = missing_values(sql, values)
        counted_none = is_aggregate(sql) and len(result.rows) == 1 and result.rows[0][0] in (0, None)
        if missing and (empty or counted_none):  # 滋賀県の市町村はいくつ: no row is named so
            return TableAnswer(
                f"{NOT_FOUND}（{label} に「{missing[0]}」はありません）", [], sql, label, [], found=False
            )
        if empty and intent is None:
            return TableAnswer(f"{NOT_FOUND}（{label} を検索しました）", [], sql, label, [], found=False)
        if empty:
            return None
        places = decimal_places(rows, names.index(column["name"])) if column else None
        answer = write_answer(intent, table, sql, result, cited, table.columns, places)
        shown = [dict(zip(result.columns, (format_value(v) for v in row))) for row in result.rows]
        sources = list(dict.fromkeys(table.cite(n) for n in cited))  # a document's rows share their section
        return TableAnswer(answer, sources, sql, label, shown)
