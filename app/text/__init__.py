"""Text: pure functions on Japanese text, no I/O, no model, no database.

* :mod:`app.text.keywords` — normalization, sentences and the tokens of the keyword index (bigrams);
* :mod:`app.text.normalize` — one normalizer for numbers, dates and units in Japanese text;
* :mod:`app.text.chunks` — the one place a stored chunk (its ID, context line, embedding text) is built;
* :mod:`app.text.storable` — the characters a request's text may not carry (NUL, lone surrogates, …).

Imports nothing of the app (the spec's splitter, :mod:`app.chunking`, sits beside it at the top).
"""
