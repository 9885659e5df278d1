"""Models: where they come from and what they share; the spec's faces (:mod:`app.embeddings`,
:mod:`app.llm`, :mod:`app.reranker`) load them through here.

* :mod:`app.models.locate` — local resolution (no network) and ``make models``' downloads (the sets
  it fetches and the families' profiles are tables of :mod:`app.config`: model_sets, model_profiles);
* :mod:`app.models.servers` — what the two OpenAI-compatible clients share (auth, masked URLs, errors);
* :mod:`app.models.resources` — the one cache of heavy resources, keyed by the settings.

May import :mod:`app.config` and :mod:`app.errors` only; never the workflow, storage or serving
layers. ``python -m app.models`` runs :mod:`app.cli.models`.
"""
