"""Retrieval: the first stage of every question, over the store's result lists.

* :mod:`app.retrieval.search` — vector, keyword and hybrid search (weighted Reciprocal Rank Fusion),
  one chunk per source, and the LangChain retriever over them.

May import :mod:`app.config`, :mod:`app.text`, :mod:`app.storage` and :mod:`app.versions` (the version
in force first); the SQL itself is in :mod:`app.storage`. The floors are checked by ``.importlinter``.
"""
