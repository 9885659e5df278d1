"""The words Tesseract read on each OCR'd page of a document, with their boxes (issue 52): the page's web
view marks a quote on a scan from them instead of running Tesseract at request time.

``rag_page_words`` holds one row per OCR'd page: its document, the page number, the size in pixels of
the image Tesseract read and the words as compact JSON (app.formats.page_words.PageWords). A side table,
not chunk metadata: a page's words are several times its text, and only the page view reads them. Rows
reference their document: a document deleted takes them with it (ON DELETE CASCADE, in the deleting
transaction); a document switched over replaces them in the switch's transaction
(:func:`replace_page_words`), so a killed sync leaves the old words with the old chunks, never a mix.

They are readable where their document is: no copied readers column to keep in step, but the
document's own, in the read's SQL (:data:`SQL_PAGE_WORDS` joins ``rag_document`` under the readers'
predicate) and in the row-level policy the query role reads under (the policy asks the document table,
whose own policy applies inside too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from app.formats.page_words import PageWords
from app.storage.collection import collection_id
from app.storage.readers import principals_param, readers_predicate, reading
from app.storage.tables import sql

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

# --- schema (migration 18, app.storage.schema) ------------------------------------------------
MIGRATION_STATEMENTS = (
    sql(
        "CREATE TABLE IF NOT EXISTS {page_words} (collection_id uuid NOT NULL, doc_id text NOT NULL, "
        "page integer NOT NULL, width integer NOT NULL, height integer NOT NULL, words jsonb NOT NULL, "
        "PRIMARY KEY (collection_id, doc_id, page), FOREIGN KEY (collection_id, doc_id) "
        "REFERENCES {documents} (collection_id, doc_id) ON DELETE CASCADE)"
    ),
    sql("ALTER TABLE {page_words} ENABLE ROW LEVEL SECURITY"),
    sql("DROP POLICY IF EXISTS {readers_policy} ON {page_words}"),
    sql(
        "CREATE POLICY {readers_policy} ON {page_words} FOR SELECT USING (EXISTS (SELECT 1 FROM {documents} d "
        "WHERE d.collection_id = {page_words}.collection_id AND d.doc_id = {page_words}.doc_id "
        "AND d.readers && {principals_function}()))"
    ),
)

# --- writes (the document's switch) ------------------------------------------------------------
SQL_DELETE_PAGE_WORDS = sql("DELETE FROM {page_words} WHERE collection_id = :collection AND doc_id = :doc")
SQL_INSERT_PAGE_WORDS = sql(
    "INSERT INTO {page_words} (collection_id, doc_id, page, width, height, words) "
    "VALUES (:collection, :doc, :page, :width, :height, CAST(:words AS jsonb))"
)

# --- reads (the document's readers in the statement) ---------------------------------------------
SQL_PAGE_WORDS = sql(
    "SELECT w.width, w.height, w.words FROM {page_words} w JOIN {documents} d "
    "ON d.collection_id = w.collection_id AND d.doc_id = w.doc_id "
    "WHERE w.collection_id = :collection AND w.doc_id = :doc AND w.page = :page AND " + readers_predicate("d")
)


def replace_page_words(conn: Connection, collection, doc_id: str, pages: Mapping[int, PageWords]) -> int:
    """Replace a document's stored page words by ``pages`` (page number -> PageWords; empty: none), in
    the caller's transaction (the document's switch, after its document row is written); returns the
    pages written."""
    from sqlalchemy import text

    conn.execute(text(SQL_DELETE_PAGE_WORDS), {"collection": collection, "doc": doc_id})
    rows = [
        {
            "collection": collection,
            "doc": doc_id,
            "page": int(page),
            "width": words.width,
            "height": words.height,
            "words": words.as_json(),
        }
        for page, words in sorted(pages.items())
    ]
    if rows:
        conn.execute(text(SQL_INSERT_PAGE_WORDS), rows)
    return len(rows)


def page_words(
    engine: Engine, collection_name: str, doc_id: str, page: int, principals: Sequence[str]
) -> PageWords | None:
    """The words stored for page ``page`` of ``doc_id`` when ``principals`` may read the document; None
    when none are stored (a page with a text layer, a document ingested before they were kept) or the
    document is not theirs."""
    from sqlalchemy import text

    collection = collection_id(engine, collection_name)
    if collection is None:
        return None
    with reading(engine, principals) as conn:
        row = conn.execute(
            text(SQL_PAGE_WORDS),
            {"collection": collection, "doc": doc_id, "page": int(page), "principals": principals_param(principals)},
        ).first()
    return None if row is None else PageWords.from_rows(row.width, row.height, row.words)
