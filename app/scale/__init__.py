"""Scale-out: measurements of the app against shared infrastructure (parallel ingest workers,
concurrent search clients, the LLM over an OpenAI-compatible server). The switches themselves
(LLM_BASE_URL, EMBED_BASE_URL, DATABASE_URL, INGEST_WORKERS) live where they act: app.llm,
app.embeddings, app.config/app.db and app.sync."""
