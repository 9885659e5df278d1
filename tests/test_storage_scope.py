"""A question's scope (app.storage.scope): what people type becomes exact prefixes, extensions and a day;
ambiguous input fails in one line; the SQL is the same text for every scope and binds every value."""

from datetime import date

import pytest

from app.storage import scope as sc
from app.storage.scope import Scope, parse_folder, parse_formats, parse_scope, parse_since, scope_params


@pytest.mark.parametrize(
    "typed, prefix",
    [
        ("docs/規程", "docs/規程/"),
        ("docs/規程/", "docs/規程/"),
        ("./docs/規程", "docs/規程/"),
        ("  docs//規程/  ", "docs/規程/"),
        ("docs\\規程", "docs/規程/"),
        ("docs/./規程", "docs/規程/"),
        ("csv", "csv/"),
        ("ホ\u3099ーナス", "ボーナス/"),  # NFD (macOS) as NFC, as document IDs are stored
    ],
)
def test_a_folder_becomes_a_document_id_prefix_ending_in_a_slash(typed, prefix):
    assert parse_folder(typed) == prefix


@pytest.mark.parametrize(
    "typed, message",
    [
        ("../secret", "a folder may not contain '..', got '../secret'"),
        ("docs/../hr", "a folder may not contain '..', got 'docs/../hr'"),
        ("/etc", "a folder is a path inside the data folder, not an absolute one, got '/etc'"),
        ("C:/data", "a folder is a path inside the data folder, not an absolute one, got 'C:/data'"),
        ("~/docs", "a folder is a path inside the data folder, not an absolute one, got '~/docs'"),
        ("docs/*", "a folder is a plain path without * ? or [ (no patterns), got 'docs/*'"),
        ("doc?", "a folder is a plain path without * ? or [ (no patterns), got 'doc?'"),
        ("[ab]", "a folder is a plain path without * ? or [ (no patterns), got '[ab]'"),
        ("", "a folder names a folder inside the data folder, got ''"),
        ("./", "a folder names a folder inside the data folder, got './'"),
    ],
)
def test_ambiguous_folders_fail_in_one_line(typed, message):
    with pytest.raises(ValueError) as raised:
        parse_folder(typed)
    assert str(raised.value) == message


def test_formats_are_lower_case_extensions_without_the_dot():
    assert parse_formats("pdf,docx") == ("pdf", "docx")
    assert parse_formats(" .PDF , Docx,pdf,") == ("pdf", "docx")
    assert parse_formats(["pdf", "xlsx,csv"]) == ("pdf", "xlsx", "csv")
    assert parse_formats("ＰＤＦ") == ("pdf",)  # full-width, as a Japanese keyboard may type it


@pytest.mark.parametrize(
    "typed, message",
    [
        ("", "no format given (a list such as pdf,docx), got ''"),
        (",", "no format given (a list such as pdf,docx), got ','"),
        ("p*f", "a format is a file extension such as pdf or docx, got 'p*f'"),
        ("tar.gz", "a format is a file extension such as pdf or docx, got 'tar.gz'"),
        ("'pdf'", "a format is a file extension such as pdf or docx, got \"'pdf'\""),
    ],
)
def test_bad_formats_fail_in_one_line(typed, message):
    with pytest.raises(ValueError) as raised:
        parse_formats(typed)
    assert str(raised.value) == message


def test_since_is_an_iso_day():
    assert parse_since("2025-04-01") == date(2025, 4, 1)
    assert parse_since(" 2025-04-01 ") == date(2025, 4, 1)
    assert parse_since(date(2024, 1, 31)) == date(2024, 1, 31)
    for bad in ("2025-13-01", "昨日", "2025/04/01", "", None, 20250401.0):
        with pytest.raises(ValueError) as raised:
            parse_since(bad)
        assert str(raised.value) == f"since takes a day as YYYY-MM-DD (2025-04-01), got {bad!r}"
        assert "\n" not in str(raised.value)


def test_a_scope_is_normalised_when_made_and_falsy_when_empty():
    assert not Scope() and Scope().is_empty
    scope = Scope(folders=("./docs/規程", "docs/規程/"), formats=("PDF,docx",), since="2025-04-01")
    assert scope == Scope(folders=("docs/規程/",), formats=("pdf", "docx"), since=date(2025, 4, 1))
    assert scope and not scope.is_empty
    assert Scope(folders="docs").folders == ("docs/",)  # one string is one folder, not its letters
    assert Scope(since="2025-04-01").as_dict() == {"folders": [], "formats": [], "since": "2025-04-01"}
    assert scope.as_dict() == {"folders": ["docs/規程/"], "formats": ["pdf", "docx"], "since": "2025-04-01"}
    with pytest.raises(ValueError):
        Scope(folders=("docs/規程", "../hr"))  # one bad folder fails the whole scope: it never widens


def test_parse_scope_takes_what_the_command_line_gives():
    assert parse_scope() == Scope()
    assert parse_scope(None, None, None) == Scope()
    assert parse_scope(["docs/規程", "csv"], ["pdf,docx", "csv"], "2025-04-01") == Scope(
        folders=("docs/規程/", "csv/"), formats=("pdf", "docx", "csv"), since=date(2025, 4, 1)
    )
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_scope(since="April")


def test_the_params_bind_every_value_and_an_empty_scope_passes_everything():
    assert scope_params(None) == {"scope_folders": [], "scope_formats": [], "scope_since": None}
    assert scope_params(Scope()) == scope_params(None)
    assert scope_params(Scope(folders=("docs/規程",), formats=("pdf",), since="2025-04-01")) == {
        "scope_folders": ["docs/規程/"],
        "scope_formats": ["pdf"],
        "scope_since": date(2025, 4, 1),
    }


def test_the_predicate_is_one_text_with_bound_names_only():
    predicate = sc.scope_predicate("e")
    assert predicate.count(":scope_folders") == 2 and predicate.count(":scope_formats") == 2
    assert predicate.count(":scope_since") == 2
    assert "starts_with(e.cmetadata->>'doc_id', scope_folder.prefix)" in predicate
    assert "scope_doc.collection_id = e.collection_id AND scope_doc.doc_id = e.cmetadata->>'doc_id'" in predicate
    assert "coalesce(scope_doc.version_effective, CAST(scope_doc.ingested_at AS date))" in predicate
    assert '"rag_document" scope_doc' in predicate
    assert "{" not in predicate and "@" not in predicate  # filled: safe inside another template
    table = sc.scope_predicate("t", sc.TABLE_DOC_ID)
    assert "starts_with(t.doc_id, scope_folder.prefix)" in table and "cmetadata" not in table
    for alias, column in (("E", sc.CHUNK_DOC_ID), ("e; DROP", sc.CHUNK_DOC_ID), ("", sc.CHUNK_DOC_ID), ("e", "x")):
        with pytest.raises(ValueError):
            sc.scope_predicate(alias, column)
    assert sc.scope_is_empty() == (
        "(cardinality(CAST(:scope_folders AS text[])) = 0 AND cardinality(CAST(:scope_formats AS text[])) = 0 "
        "AND CAST(:scope_since AS date) IS NULL)"
    )


def test_every_read_path_carries_the_scope_beside_the_readers():
    from app.storage import graphrag_tables, keywords, table_rows, vectors

    for statement in (
        vectors.SQL_NEAREST_CHUNKS_ONE_SIZE.replace("{filter}", vectors.SCOPE_FILTER),
        keywords.SQL_KEYWORD_CANDIDATES,
        keywords.SQL_KEYWORD_SEARCH,
        table_rows.SQL_READABLE_TABLES,
        table_rows.SQL_TABLE_ROWS,
        graphrag_tables.SQL_TEXT_UNITS_OF,
        graphrag_tables.SQL_DOCUMENT_OF_CHUNKS,
    ):
        assert "readers && CAST(:principals AS text[])" in statement
        assert "starts_with(" in statement and ":scope_since" in statement
