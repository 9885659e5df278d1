"""The web page (``make web``): a local page where anyone may ask the stored documents — the answer
streamed with its quote, its sources one click away (a PDF at its page, a row as a table, a section
with the passage marked), follow-up questions, the documents list — private by default (loopback,
a shared secret beyond it, foreign Host/Origin refused). docs/web.md has the routes and the checks.

* :mod:`app.web.app` — the routes (page, ask as SSE, sources, files, documents, sync);
* :mod:`app.web.server` — the warm service, the app behind its guard, uvicorn;
* :mod:`app.web.guard` — the page's Host/Origin/token guard over :mod:`app.serving.access`;
* :mod:`app.web.sources` / :mod:`app.web.markdown` — a source shown as a page, a row or a section;
* :mod:`app.web.followup` / :mod:`app.web.rewrite` / :mod:`app.web.turns` — follow-up questions;
* :mod:`app.web.page` — the page's HTML, script and content security policy.

Stands on :mod:`app.serving`, and reads what the page alone needs below it: the usage rows
(:mod:`app.storage`), document IDs and their files (:mod:`app.storage.doc_ids`), users and principals;
never imports :mod:`app.mcp` (``.importlinter`` checks the floors).
"""
