"""Graph search (GraphRAG's local and global modes) over the same PostgreSQL store.

* :mod:`~app.graphrag.extract` — entities and same-sentence pairs of a chunk (SudachiPy noun
  phrases, or JSON from the LLM);
* :mod:`~app.graphrag.communities` — Louvain communities and extractive reports;
* :mod:`~app.graphrag.index` — the build (``make graph``, and after a sync that changed anything);
* :mod:`~app.graphrag.local_search` / :mod:`~app.graphrag.global_search` — the two searches;
* :mod:`~app.graphrag.search` — both over the store, for the workflow (app.graph);
* :mod:`~app.graphrag.router` — which mode answers a question (``--mode auto``);
* the dataclasses they pass (entities, reports, results) are :mod:`app.storage.graphrag_types`;
* :mod:`~app.graphrag.reports` — community reports written by the LLM.

The graph's SQL is in :mod:`app.storage.graphrag_tables` and :mod:`app.storage.graphrag_rows`. May import
:mod:`app.config`, :mod:`app.errors`, :mod:`app.text`, :mod:`app.storage`, :mod:`app.llm`,
:mod:`app.models` (the shared resources), :mod:`app.metrics` and :mod:`app.retrieval`; never the workflow,
serving or the CLI (``.importlinter`` checks the floors).
"""
