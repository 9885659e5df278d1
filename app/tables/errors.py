"""The table path's exceptions (app.tables): each message is one line, for the CLI and the logs."""

from __future__ import annotations

from app.errors import RagError


class TableQueryError(RagError):
    """A question could not be answered by computing over a table (the workflow falls back to text)."""


class StatementRefusedError(TableQueryError):
    """The model's SQL is not one SELECT over the chosen table's columns with allowed functions."""


class QueryTimeoutError(TableQueryError):
    """The statement ran past TABLE_QUERY_TIMEOUT_S and was interrupted."""


class QueryFailedError(TableQueryError):
    """DuckDB refused or failed to run the (checked) statement: a type error, an out-of-memory."""
