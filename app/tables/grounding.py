"""The values a statement's conditions compare with must come from the question: pure, with sqlglot.

A small model copies the prompt's sample values into its WHERE (``"元号" LIKE '慶長%'`` beside the
condition the question asked for), writes a name in another script (``'轮島市'`` for 輪島市), or
invents a row the question never named (``'鹿児島県'`` for 輪島市). Each equality, IN or LIKE
condition of a checked statement's WHERE is looked at (ranges — ``>``, ``<``, BETWEEN — are left as
they are: ``1800年代`` is written ``BETWEEN 1800 AND 1899``):

* a value the question holds (NFKC, case folded; a LIKE's ``%`` aside) stands;
* a value like a stretch of the question (two thirds of its characters in order) stands when the
  table holds it (``東京都`` for 東京), and is replaced by that stretch when the table holds the
  stretch instead (``轮島市`` → ``輪島市``);
* a value the prompt showed as a sample, in a condition joined by AND, is dropped (the condition
  becomes TRUE);
* any other value: the question named no such row, or the model guessed it —
  :class:`UngroundedValueError` (the text path answers instead).
"""

from __future__ import annotations

import difflib
import logging
import unicodedata
from collections.abc import Collection, Sequence

from sqlglot import exp

from app.tables.errors import TableQueryError
from app.tables.prompt import spell_out_numbers
from app.tables.values import format_number, parse_cell

__all__ = [
    "UngroundedValueError",
    "fold",
    "ground_conditions",
    "ground_statement",
    "missing_values",
    "similar_stretches",
]

log = logging.getLogger(__name__)

SIMILAR = 2 / 3  # the share of characters a value and a stretch of the question have in common, in order


class UngroundedValueError(TableQueryError):
    """A condition compares with a value the question does not hold nor resemble."""


def fold(text: str) -> str:
    """NFKC, case folded, without whitespace: how values and the question are compared."""
    return "".join(unicodedata.normalize("NFKC", str(text)).casefold().split())


def similar_stretches(value: str, question: str) -> list[str]:
    """The stretches of ``question`` (as long as ``value``, or one character shorter or longer) that
    share at least :data:`SIMILAR` of their characters with ``value``, in order, most alike first."""
    scored: dict[str, float] = {}
    for size in {max(len(value) - 1, 2), len(value), len(value) + 1}:
        for start in range(0, max(len(question) - size + 1, 0)):
            stretch = question[start : start + size]
            ratio = difflib.SequenceMatcher(None, value, stretch).ratio()
            if ratio >= SIMILAR - 1e-9:
                scored[stretch] = max(ratio, scored.get(stretch, 0.0))
    return sorted(scored, key=lambda stretch: -scored[stretch])


def _literals(condition: exp.Expression) -> list[exp.Literal]:
    """The literal values a condition compares with."""
    return [node for node in condition.find_all(exp.Literal)]


def _joined_by_and(node: exp.Expression, where: exp.Expression) -> bool:
    """Whether ``node`` sits under the WHERE through ANDs (and parentheses) only."""
    parent = node.parent
    while parent is not None and parent is not where:
        if not isinstance(parent, (exp.And, exp.Paren)):
            return False
        parent = parent.parent
    return parent is where


def ground_conditions(tree: exp.Select, question: str, values: Collection[str], samples: Collection[str]) -> list[str]:
    """Ground the WHERE of a checked statement ``tree`` (changed in place) in ``question``: ``values``
    are the table's cell texts and ``samples`` the prompt's sample values, both folded (:func:`fold`).
    Returns what was changed, one line each (for the log); raises UngroundedValueError."""
    where = tree.args.get("where")
    if where is None:
        return []
    asked = fold(question)
    changes: list[str] = []
    for condition in list(where.find_all(exp.EQ, exp.In, exp.Like, exp.ILike)):
        for literal in _literals(condition):
            text = fold(literal.this)
            core = text.strip("%")
            if not core or core in asked:
                continue
            stretches = similar_stretches(core, asked)
            if stretches and core in values:
                continue
            stretch = next((s for s in stretches if s in values), None)
            if stretch is not None:
                literal.replace(exp.Literal.string(text.replace(core, stretch)))
                changes.append(f"{literal.this!r} read as {stretch!r}")
                continue
            if core in samples and _joined_by_and(condition, where):
                changes.append(f"dropped {condition.sql(dialect='duckdb')} (a sample value)")
                condition.replace(exp.true())
                break
            raise UngroundedValueError(f"the question names no {literal.this!r}")
    return changes


def missing_values(sql: str, values: Collection[str]) -> list[str]:
    """The texts a statement's equality or IN conditions ask for that no cell of the table holds
    (``"都道府県名" = '滋賀県'`` over a table of Hokuriku's towns), in order: a count of 0 or an empty
    result then means the table does not name them, not that none exist."""
    from sqlglot import parse_one

    where = parse_one(sql, read="duckdb").args.get("where")
    if where is None:
        return []
    found = [
        literal.this
        for condition in where.find_all(exp.EQ, exp.In)
        for literal in condition.find_all(exp.Literal)
        if literal.is_string and fold(literal.this) and fold(literal.this) not in values
    ]
    return list(dict.fromkeys(found))


def ground_statement(sql: str, question: str, values: set[str], columns: Sequence[dict]) -> str:
    """A checked statement with its conditions' values grounded in the question
    (:func:`ground_conditions`; ``values`` the table's folded cell texts): a sample value copied from the
    prompt dropped, a name in another script read as the question's; UngroundedValueError for a value
    the question does not name."""
    from sqlglot import parse_one

    tree = parse_one(sql, read="duckdb")
    samples = {fold(sample) for c in columns for sample in c.get("samples") or []}
    samples |= {
        fold(format_number(v).replace(",", "")) for c in columns for s in c.get("samples") or []
        if c["kind"] == "number" and (v := parse_cell(s).value) is not None
    }  # fmt: skip
    for change in ground_conditions(tree, question + " " + spell_out_numbers(question), values, samples):
        log.info("table SQL: %s", change)
    return tree.sql(dialect="duckdb")
