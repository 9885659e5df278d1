"""A private, CPU-only RAG tool for Japanese business documents (PostgreSQL + pgvector, LangGraph,
a local GGUF model).

The top level holds the design card's faces (:mod:`app.config`, :mod:`app.db`, :mod:`app.embeddings`,
:mod:`app.llm`, :mod:`app.reranker`, :mod:`app.chunking`, :mod:`app.ingest`, :mod:`app.ask`,
:mod:`app.graph`, :mod:`app.metrics`, :mod:`app.evaluate`), the Python API (:mod:`app.store`), the shared
exceptions (:mod:`app.errors`) and the shims of ``python -m app.docs|tune|watch``. Everything else lives
in a package named for what it does: ``text``, ``formats``, ``ingestion``, ``storage``, ``models``,
``retrieval``, ``workflow``, ``graphrag``, ``evaluation``, ``serving``, ``web``, ``mcp``, ``cli``
(docs/architecture.md has a line for each).

The floors, top to bottom (``.importlinter``, checked by ``make lint`` and tests/test_imports.py; a
module imports its own floor and those below; ``|`` siblings never import each other):
the commands' shims · ``cli`` · ``web`` | ``mcp`` · ``serving``, ``evaluation`` · ``graph`` · ``store`` ·
``ingestion`` · ``graphrag`` · ``retrieval``, ``tables``, ``workflow``, ``users``, ``db``, ``docs`` ·
``storage``, ``embeddings``, ``llm``, ``reranker`` · ``formats``, ``versions``, ``permissions``, ``models``,
``metrics`` · ``text``, ``config``, ``errors``, ``chunking``.
"""
