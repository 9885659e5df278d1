"""The prompt that asks the model for one SELECT over a table, the prompt that asks again after a
failure, and the statement read out of the model's reply: pure."""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.tables.values import format_number, parse_cell, parse_number

__all__ = ["build_prompt", "extract_sql", "question_of", "retry_prompt", "spell_out_numbers"]

_PROMPT = """表 t から質問に答える DuckDB の SELECT 文を1つだけ書いてください。
列名は必ず二重引用符で囲み、下の列だけを使ってください。数値の列は数値、日付の列は日付です。
SQL だけを書き、説明は書かないでください。

例(列 "店舗" 文字列, "売上" 数値):
質問: 売上が一番多い店舗は？
SQL: SELECT "店舗", "売上" FROM t ORDER BY "売上" DESC LIMIT 1
質問: 店舗はいくつありますか？
SQL: SELECT COUNT(*) FROM t
質問: 売上が100以上の店舗は？
SQL: SELECT "店舗", "売上" FROM t WHERE "売上" >= 100
質問: 売上が100未満の店舗はいくつ？
SQL: SELECT COUNT(*) FROM t WHERE "売上" < 100

表 t の列:
{columns}

質問: {question}
SQL:"""
_KIND_WORDS = {"number": "数値", "date": "日付", "text": "文字列"}


_LARGE_NUMBER = re.compile(r"\d[\d,.]*(?:[万億千]\d*)+")


def spell_out_numbers(question: str) -> str:
    """The question with ``70万`` as ``700000`` and ``1億2000万`` as ``120000000`` (the model writes 7000000
    for 70万; the table holds the digits)."""

    def digits(m: re.Match) -> str:
        parsed = parse_number(m.group(0))
        return format_number(parsed[0]).replace(",", "") if parsed else m.group(0)

    return _LARGE_NUMBER.sub(digits, question)


def build_prompt(question: str, columns: Sequence[dict]) -> str:
    """The prompt asking for one SELECT over ``t``: each column with its kind, unit and sample values
    (a number column's samples as the numbers it holds), and the question with its 万 and 億 spelled out."""
    lines = []
    for c in columns:
        samples = c.get("samples") or []
        if c["kind"] == "number":
            samples = [format_number(v).replace(",", "") for s in samples if (v := parse_cell(s).value) is not None]
        unit = f"({c['unit']})" if c.get("unit") else ""
        example = f" 例: {', '.join(str(s) for s in samples)}" if samples else ""
        lines.append(f'"{c["name"]}" {_KIND_WORDS.get(c["kind"], "文字列")}{unit}{example}')
    return _PROMPT.format(columns="\n".join(lines), question=spell_out_numbers(question.strip()))


def retry_prompt(prompt: str, statement: str, error: Exception) -> str:
    """The prompt asked again after ``statement`` failed: the first prompt, then the statement and why
    it failed (one line), and a fresh ``SQL:``."""
    reason = " ".join(str(error).split())[:300]
    return (
        prompt
        + f" {statement or '(SQL なし)'}\n\nこの SQL は使えません: {reason}\n"
        + "質問に書かれた値だけを条件に使い、日付は '1800-01-01' の形で書いて、正しい SELECT 文を1つだけ書いてください。\n"
        + f"質問: {question_of(prompt)}\nSQL:"
    )


def question_of(prompt: str) -> str:
    """The question a table prompt asks (its last ``質問:`` line)."""
    return prompt.rsplit("質問: ", 1)[-1].split("\n", 1)[0]


def extract_sql(reply: str) -> str:
    """The SELECT in the model's reply: from its first SELECT to the first ``;``, blank line or code fence."""
    text = reply.replace("```sql", "```")
    m = re.search(r"\bSELECT\b", text, flags=re.IGNORECASE)
    if not m:
        return ""
    statement = re.split(r";|```|\n\s*\n", text[m.start() :], maxsplit=1)[0]
    return " ".join(statement.split())
