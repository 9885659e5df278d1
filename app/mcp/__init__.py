"""The MCP server: a warm process (models and database pool loaded once) exposing ``search_rag``,
``ask``, ``list_documents`` and ``sync`` to MCP clients over stdio or streamable HTTP."""
