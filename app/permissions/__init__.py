"""Who may read what: the access file's rules, the file share's own permissions, the principals of a caller.

A document's **readers** are principals: group names (``everyone``, ``経理``), ``user:NAME``, and always
``admin``; with ACCESS_FROM_FS, also the file share's own ``os-user:NAME`` / ``os-group:NAME`` where the
access file's ``[os]`` table does not map them to ours (no caller holds those: a name may not hold a colon).
A caller's **principals** are ``everyone``, ``user:NAME`` and the user's groups; full access (the command
line, the Python API by default) is ``("admin",)``. A caller may read a document when the two
overlap; that test is written inside every read path's SQL (app.storage) and again as row-level security.

May import :mod:`app.config` and :mod:`app.errors`; never storage, ingestion, serving or the CLI.
"""
