"""Questions about tables answered by computing over the table (issue 50).

* :mod:`.values` — typed cell values (numbers with units and 万, Japanese dates) and column types;
* :mod:`.statement` — the check of the model's SQL (sqlglot): one SELECT over the one table;
* :mod:`.runner` — DuckDB in memory over the rows the asker may read, locked down and time-limited;
* :mod:`.extract` — the tables a CSV file or a workbook's sheets hold, as the sync stores them;
* :mod:`.documents` — the tables inside Word, PowerPoint and HTML files; :mod:`.reading` reads any file's;
* :mod:`.prompt` — the prompt asking for one SELECT, the prompt asking again, the SQL read from a reply;
* :mod:`.grounding` — the values a statement's conditions compare with, grounded in the question;
* :mod:`.answer` — which table a question is about, and the answer written from the result.

Pure logic and the DuckDB runner only; the PostgreSQL side is :mod:`app.storage.table_rows`. Imports
:mod:`app.errors`, :mod:`app.text`, :mod:`app.versions.dates`, :mod:`app.formats` (the readers' header
rules) and :mod:`app.storage.tables` (quoting a name); never the store, the models or the workflow — the model and the rows are handed in (:class:`app.tables.answer.TableAnswerer`).
"""
