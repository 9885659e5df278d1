"""Document versions: which stored documents are versions of one another (a *family*), each
version's effective date, and which one is in force (docs/versions.md).

* :mod:`app.versions.dates` — the effective date: stated in the text, else in the file name, else the mtime;
* :mod:`app.versions.families` — grouping (MinHash over character shingles, name rules) and the current version;
* :mod:`app.versions.overrides` — ``versions.toml``, the fixes made by hand;
* :mod:`app.versions.preference` — retrieval's preference for current versions and the notes shown with answers.
* :mod:`app.versions.matching` — when two chunks are one passage's versions, and what a past one says otherwise;
* :mod:`app.versions.reading` — which versions the model reads: a past passage hidden behind its current one.

Pure functions only: the sync (app.ingestion.versions) reads the stored texts and writes the result
(app.storage.versions). It stands on datasketch (MinHash) and app.text (dates, normalization), and
imports nothing of the store.
"""
