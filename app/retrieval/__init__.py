"""Retrieval: the first stage of every question, over the store's result lists.

* :mod:`app.retrieval.search` — vector, keyword and hybrid search (weighted Reciprocal Rank Fusion),
  one chunk per source, and the LangChain retriever over them.

May import :mod:`app.config`, :mod:`app.text` and :mod:`app.storage`; the SQL itself is in
:mod:`app.storage`.
"""
