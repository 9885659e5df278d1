"""Serving: what the web page (:mod:`app.web`) and the MCP server (:mod:`app.mcp`) both stand on.

* :mod:`app.serving.service` — the warm service (models loaded once, the store opened once):
  search, ask, documents, sync; its input checks and JSON payloads; the factory the servers share;
* :mod:`app.serving.access` — who may connect: loopback, allowed hosts and origins, bearer tokens.

May import everything below it (store, graph, config); :mod:`app.web` and :mod:`app.mcp` import it,
never each other.
"""
