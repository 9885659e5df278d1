"""Models: where they come from and what they share; the spec's faces (:mod:`app.embeddings`,
:mod:`app.llm`, :mod:`app.reranker`) load them through here.

* :mod:`app.models.locate` — local resolution (no network) and ``make models``' downloads;
* :mod:`app.models.sets` — the model sets ``make models`` fetches, and which are installed;
* :mod:`app.models.profiles` — how each embedding family wants its text (prefixes, lengths);
* :mod:`app.models.servers` — what the two OpenAI-compatible clients share (auth, masked URLs, errors);
* :mod:`app.models.resources` — the one cache of heavy resources, keyed by the settings.

May import :mod:`app.config`, :mod:`app.errors` and :mod:`app.formats` (file hashes); never the
workflow, storage or serving layers. ``python -m app.models`` runs :mod:`app.cli.models`.
"""
