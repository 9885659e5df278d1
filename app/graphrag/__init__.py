"""Graph search (GraphRAG's local and global modes) over the same PostgreSQL store.

* :mod:`~app.graphrag.extract` — entities and same-sentence pairs of a chunk (SudachiPy noun
  phrases, or JSON from the LLM);
* :mod:`~app.storage.graph_store` — the graph's tables and SQL;
* :mod:`~app.graphrag.communities` — Louvain communities and extractive reports;
* :mod:`~app.graphrag.index` — the build (``make graph``, and after a sync that changed anything);
* :mod:`~app.graphrag.local_search` / :mod:`~app.graphrag.global_search` — the two searches;
* :mod:`~app.graphrag.search` — both over the store, for the workflow (app.graph);
* :mod:`~app.graphrag.router` — which mode answers a question (``--mode auto``).
"""
