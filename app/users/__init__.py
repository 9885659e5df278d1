"""Who is asking: users and groups in PostgreSQL, personal tokens, the identity of each request, the audit log.

``python -m app.users`` administers them (app.cli.users). The HTTP surfaces (app.web, app.mcp) turn a
request into an :class:`~app.users.identity.Identity`; the command line and the Python API read with full
access unless ``--as NAME`` (:func:`~app.users.identity.principals_for_user`).

Stands on :mod:`app.storage` (the tables) and :mod:`app.permissions` (principals); may import
:mod:`app.errors`; never serving, the web page, MCP or the CLI.
"""
