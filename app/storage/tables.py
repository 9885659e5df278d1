"""Every name the store's SQL uses — tables, indexes, triggers, functions — in one place.

Statements are written as plain templates with ``{field}`` names (never f-strings) and filled once,
at import, by :func:`sql` with the quoted identifiers below; values are always bound parameters
(``:name``). The raw names stay importable for catalog lookups (``pg_indexes.indexname = :n``).
"""

from __future__ import annotations

from app.config import EMBED_DIM

# langchain-postgres' tables (PGVector creates them): chunk rows and collections
EMBEDDING_TABLE = "langchain_pg_embedding"
COLLECTION_TABLE = "langchain_pg_collection"
# ours
KEYWORD_TABLE = "rag_keyword_index"  # one row per chunk: its tsvector and length (BM25)
TERM_STATS_TABLE = "rag_term_stats"  # per collection and term: document frequency
COLLECTION_STATS_TABLE = "rag_collection_stats"  # per collection: chunks and total length
DOCUMENT_TABLE = "rag_document"  # one row per source file
STAGING_TABLE = "rag_staging"  # batches of an ingest not switched over yet
META_TABLE = "rag_meta"  # key/value; 'schema_version'
# the graph's (app.storage.graphrag_tables)
MENTION_TABLE = "rag_graph_mention"
PAIR_TABLE = "rag_graph_pair"
ENTITY_TABLE = "rag_graph_entity"
RELATIONSHIP_TABLE = "rag_graph_relationship"
COMMUNITY_TABLE = "rag_graph_community"
REPORT_TABLE = "rag_graph_report"
GRAPH_STATE_TABLE = "rag_graph_state"
# who may ask (app.storage.users): users with their groups, personal tokens (hashes), the audit log
USER_TABLE = "rag_user"
TOKEN_TABLE = "rag_token"
SESSION_TABLE = "rag_session"  # the page's sign-in sessions (hashes of their IDs)
AUDIT_TABLE = "rag_audit"
# what the product remembers: answers given (app.storage.answers), the askers' feedback (app.storage.feedback)
ANSWER_TABLE = "rag_answer"
FEEDBACK_TABLE = "rag_feedback"
# questions about tables (app.storage.table_rows): each stored table and its rows, with their document's readers
TABLE_INDEX_TABLE = "rag_table"
TABLE_ROW_TABLE = "rag_table_row"
# the ingest queue (app.storage.queue): each queued file's outcome; procrastinate's own jobs table
QUEUED_FILE_TABLE = "rag_queued_file"
QUEUE_JOB_TABLE = "procrastinate_jobs"
# the words Tesseract read on each OCR'd page, with their boxes (app.storage.page_words)
PAGE_WORDS_TABLE = "rag_page_words"

HNSW_INDEX = "langchain_pg_embedding_embedding_hnsw"
ENTITY_HNSW_INDEX = "rag_graph_entity_embedding_hnsw"
KEYWORD_GIN_INDEX = "rag_keyword_index_tsv_gin"

# field name in templates -> identifier. Index names are those existing stores have: a new name
# would make ``CREATE INDEX IF NOT EXISTS`` build a second copy.
NAMES: dict[str, str] = {
    "chunks": EMBEDDING_TABLE,
    "collections": COLLECTION_TABLE,
    "keywords": KEYWORD_TABLE,
    "term_stats": TERM_STATS_TABLE,
    "collection_stats": COLLECTION_STATS_TABLE,
    "documents": DOCUMENT_TABLE,
    "staging": STAGING_TABLE,
    "meta": META_TABLE,
    "mentions": MENTION_TABLE,
    "pairs": PAIR_TABLE,
    "entities": ENTITY_TABLE,
    "relationships": RELATIONSHIP_TABLE,
    "communities": COMMUNITY_TABLE,
    "reports": REPORT_TABLE,
    "graph_state": GRAPH_STATE_TABLE,
    "users": USER_TABLE,
    "tokens": TOKEN_TABLE,
    "sessions": SESSION_TABLE,
    "audit": AUDIT_TABLE,
    "answers": ANSWER_TABLE,
    "answer_key_index": "rag_answer_key",
    "answer_created_index": "rag_answer_created",
    "feedback": FEEDBACK_TABLE,
    "table_index": TABLE_INDEX_TABLE,
    "table_rows": TABLE_ROW_TABLE,
    "queued_files": QUEUED_FILE_TABLE,
    "queue_jobs": QUEUE_JOB_TABLE,
    "page_words": PAGE_WORDS_TABLE,
    "table_document_index": "rag_table_document",
    "table_readers_index": "rag_table_readers",
    "table_readers_function": "rag_table_readers",
    "table_readers_trigger": "rag_table_readers_upd",
    "token_user_index": "rag_token_user",
    "session_user_index": "rag_session_user",
    "session_token_index": "rag_session_token",
    "session_expiry_index": "rag_session_expiry",
    "audit_at_index": "rag_audit_at",
    "chunk_readers_index": "rag_embedding_readers",
    "document_readers_index": "rag_document_readers",
    "principals_function": "rag_principals",
    "intersect_function": "rag_readers_and",
    "intersect_aggregate": "rag_readers_intersect",
    "readers_policy": "rag_readers",
    "keyword_readers_function": "rag_keyword_readers",
    "keyword_candidates_function": "rag_keyword_candidates",  # the query role's keyword rows (migration 11)
    "term_stats_function": "rag_term_stats_of",  # and the statistics of the terms it names
    "keyword_readers_trigger": "rag_keyword_readers_ins",
    "chunk_readers_trigger": "rag_chunk_readers_upd",
    "query_role": "rag_query",
    "hnsw_index": HNSW_INDEX,
    "chunk_collection_index": "ix_langchain_pg_embedding_collection",
    "chunk_doc_id_index": "ix_langchain_pg_embedding_doc_id",
    "chunk_content_hash_index": "ix_langchain_pg_embedding_content_hash",
    "keyword_gin_index": KEYWORD_GIN_INDEX,
    "keyword_collection_index": "rag_keyword_index_collection",
    "staging_hash_index": "rag_staging_content_hash",
    "mention_entity_index": "rag_graph_mention_entity",
    "pair_collection_index": "rag_graph_pair_collection",
    "entity_key_index": "rag_graph_entity_key",
    "entity_hnsw_index": ENTITY_HNSW_INDEX,
    "relationship_source_index": "rag_graph_relationship_source",
    "relationship_target_index": "rag_graph_relationship_target",
    "embedding_size_statistics": "rag_embedding_sizes",
    "keyword_stats_function": "rag_keyword_stats",
    "keyword_stats_insert_trigger": "rag_keyword_stats_ins",
    "keyword_stats_delete_trigger": "rag_keyword_stats_del",
    "keyword_stats_update_trigger": "rag_keyword_stats_upd",
}


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


# Template fields: the quoted names, and the first embedding size of a new store's staging and entity
# tables (a number, for ``vector({embed_dim})``; app.storage.vectors fits them to the model's).
_FIELDS = {**{field: quote(name) for field, name in NAMES.items()}, "embed_dim": str(int(EMBED_DIM))}


def sql(template: str) -> str:
    """Fill a statement template's ``{field}`` names (KeyError for an unknown one); a literal brace is ``{{``."""
    return template.format_map(_FIELDS)


def sql_for_size(template: str, size: int) -> str:
    """A template with a ``{size}`` field as well (an embedding size, written as a number)."""
    return template.format_map({**_FIELDS, "size": str(int(size))})


def vector_literal(vector) -> str:
    """pgvector's text form ``[0.1,0.2,...]``: the bound value of ``CAST(:v AS vector)``."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
