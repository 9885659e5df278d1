"""The MCP server: a warm process (models and database pool loaded once) exposing ``search_rag``,
``ask``, ``list_documents`` and ``sync`` to MCP clients over stdio or streamable HTTP.

* :mod:`app.mcp.server` — the tools, the lifespan and the HTTP app behind the access guard.

Stands on :mod:`app.serving` (the warm service, the access checks); never imports :mod:`app.web`.
"""
