"""Exceptions the library raises; the CLIs turn them into one-line messages."""


class RagError(Exception):
    """Base class of the errors a user can fix (bad input, missing model, unreachable DB)."""


class ModelNotFoundError(RagError):
    """A model is not available locally; the message says which and what to run."""


class DatabaseUnavailableError(RagError):
    """PostgreSQL cannot be reached or started; the message names host:port or the data dir."""


class DataSourceError(RagError):
    """An input file or folder cannot be read (missing, corrupt, encrypted, bad encoding)."""


class StoreNotReadyError(RagError):
    """Nothing has been ingested yet, or the schema is older than this version (run ingest/db init)."""


class WriterBusyError(RagError):
    """Another process holds the writer lock and the caller asked not to wait."""


class QuestionTooLongError(RagError):
    """The question alone does not fit the LLM's context window."""


class LLMUnavailableError(RagError):
    """The LLM server (LLM_BASE_URL) is down, timed out, refused the request or broke off an answer."""


class EmbeddingServerError(RagError):
    """The embedding server (EMBED_BASE_URL) is down, refused the request, or returns vectors of the
    wrong dimension for the store."""


class GraphNotReadyError(StoreNotReadyError):
    """Graph search was asked for, but the collection's graph has not been built (run `make graph`)."""


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 200 characters; never a traceback), for a warning."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:200]}" if text else type(exc).__name__


class AnswerStoppedError(Exception):
    """The asker went away (closed the page, cancelled the tool call): the answer's work stops at its
    next check, between model calls or at the next generated piece. Not a :class:`RagError`: nobody is
    left to read a message."""
