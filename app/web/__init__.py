"""The web page (``make web``): a local page where anyone may ask the stored documents — the answer
streamed with its quote, its sources one click away (a PDF at its page, a row as a table, a section
with the passage marked), follow-up questions, the documents list — private by default (loopback,
a shared secret beyond it, foreign Host/Origin refused). docs/web.md has the routes and the checks."""
