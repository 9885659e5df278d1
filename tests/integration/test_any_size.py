"""Embedding models of any size on real PostgreSQL + pgvector: random-weight ModernBERT bi-encoders
(the architecture of Ruri v3) of 256 and 768 dimensions saved as sentence-transformers folders, a
ModernBERT cross-encoder (that of japanese-reranker-xsmall-v2), and the default 384-d E5, all in one
database of their own. The answers are not judged; the loading, the storing, the index and the path are."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

from app import storage
from app.errors import StoreNotReadyError
from app.permissions.principals import FULL_ACCESS
from app.storage.vectors import sized_index, sized_index_sql
from app.store import RagStore
from bench.kit import bench_bulk_load
from bench.tiny_models import build_modernbert_cross_encoder, build_modernbert_embedder
from tests.integration.conftest import ROOT, index_built_after, run_cli

pytestmark = pytest.mark.integration

DB = "rag_sizes"
VOCAB = (ROOT / "data" / "csv" / "faq.csv").read_text(encoding="utf-8") + (
    ROOT / "data" / "docs" / "it_helpdesk.md"
).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tiny_models(integration_env) -> dict[str, Path]:
    """The two bi-encoders and the cross-encoder, built once in the test models folder."""
    models = Path(integration_env["MODELS_DIR"])
    return {
        "256": build_modernbert_embedder(models / "ruri-v3-tiny-256", VOCAB, 256),
        "768": build_modernbert_embedder(models / "ruri-v3-tiny-768", VOCAB, 768),
        "reranker": build_modernbert_cross_encoder(models / "japanese-reranker-tiny", VOCAB),
    }


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """Two data folders: the sample CSVs, and the sample Markdown."""
    import shutil

    out = {}
    for kind in ("csv", "docs"):
        root = tmp_path_factory.mktemp(f"data-{kind}")
        # the Markdown folder: its help-desk page alone (the sample's other Markdown files are versioned rules)
        shutil.copytree(ROOT / "data" / kind, root / kind, ignore=shutil.ignore_patterns("規程"))
        out[kind] = root
    return out


def store_for(settings, model: Path | str, collection: str) -> RagStore:
    """A RagStore of ``collection`` in the test's own database, embedding with ``model``."""
    return RagStore(
        settings.changed(
            db={"name": DB}, models={"embed_model": str(model)}, retrieval={"collection_name": collection}
        ),
        principals=FULL_ACCESS,
    )


def plan(store: RagStore, size: int, force: bool = True) -> str:
    """EXPLAIN of the nearest-chunk query for a ``size``-dimensional question (``force``: with scans
    and sorts off, so a small collection shows which index serves the query)."""
    from app.storage.scope import scope_params
    from app.storage.vectors import nearest_query

    collection = storage.collection_id(store.engine, store.settings.retrieval.collection_name)
    with store.engine.begin() as conn:
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort") if force else ():
            conn.execute(text(f"SET LOCAL {setting} = off"))
        rows = conn.execute(
            text("EXPLAIN " + nearest_query(conn, store.settings.retrieval.collection_name, size)),
            {
                "collection": collection,
                "vector": "[" + ",".join(["0.1"] * size) + "]",
                "k": 5,
                "principals": ["admin"],
                **scope_params(None),
            },
        )
        return "\n".join(r[0] for r in rows)


def column_type(store: RagStore) -> str:
    with store.engine.connect() as conn:
        return conn.execute(text(storage.SQL_COLUMN_TYPE), {"table": storage.EMBEDDING_TABLE}).scalar()


def test_collections_of_three_sizes_share_one_database_each_searched_through_its_index(settings, tiny_models, folders):
    e5 = store_for(settings, settings.models.embed_model, "e5")
    e5.sync(folders["csv"])
    assert column_type(e5) == "vector(384)"
    assert "Index Scan using langchain_pg_embedding_embedding_hnsw" in plan(e5, 384)

    small = store_for(settings, tiny_models["256"], "ruri256")
    small.sync(folders["csv"])
    large = store_for(settings, tiny_models["768"], "ruri768")
    large.sync(folders["docs"])
    assert column_type(large) == "vector"  # a second size: the column takes any size now
    assert "Index Scan using langchain_pg_embedding_hnsw_256" in plan(small, 256)
    assert "Index Scan using langchain_pg_embedding_hnsw_768" in plan(large, 768)
    assert "Index Scan using langchain_pg_embedding_hnsw_384" in plan(e5, 384)

    # at scale, unforced: 8,000 more 256-d vectors (about 5,000 is where the planner turns to the index) in a collection of their own; the planner picks the index
    big = store_for(settings, tiny_models["256"], "big256")
    with big.writing():
        pass
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(8000, 256)).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [str(uuid.uuid4()) for _ in range(8000)]
    collection = storage.collection_id(big.engine, "big256")
    chunks = storage.EMBEDDING_TABLE
    with index_built_after(big.engine, sized_index(chunks, 256), sized_index_sql(chunks, 256)):
        bench_bulk_load(big.engine, collection, ids, vectors, [f"filler {i}" for i in range(8000)], ["filler"] * 8000)
    with big.engine.begin() as conn:
        conn.execute(text("ANALYZE langchain_pg_embedding"))
    assert "Index Scan using langchain_pg_embedding_hnsw_256" in plan(big, 256, force=False)

    for store, source in ((e5, "faq.csv:r2"), (small, "faq.csv"), (large, "it_helpdesk.md")):
        hits = store.search("サポートの受付時間は？", search_mode="vector", top_k=3)
        assert len(hits) == 3 and all(h.metadata["source"].startswith(source.split(":")[0]) for h in hits), hits
    assert e5.search("サポートの受付時間は？", search_mode="vector", top_k=1)[0].metadata["source"] == "faq.csv:r2"
    assert len(large.embeddings.embed_query("質問")) == 768


def test_another_model_on_a_stored_collection_is_one_line_until_it_is_embedded_again(settings, tiny_models, folders):
    switched = store_for(settings, tiny_models["768"], "ruri256")  # stored with the 256-d model above
    with pytest.raises(StoreNotReadyError) as caught:
        switched.search("受付時間", search_mode="vector")
    assert str(caught.value) == (
        "the collection 'ruri256' holds 256-dimensional vectors and the embedding model makes 768: "
        "run `make ingest` to embed it again with this model (or set EMBED_MODEL back)"
    )
    _, report = switched.sync(folders["csv"])  # the model is part of each document's fingerprint
    assert report.updated == 2 and not report.failed
    assert len(switched.search("受付時間", search_mode="vector", top_k=3)) == 3


def test_make_ask_end_to_end_with_a_modernbert_embedder_and_cross_encoder(settings, tiny_models, folders):
    store_for(settings, tiny_models["768"], "documents").sync(folders["docs"])
    env = {"DB_NAME": DB, "EMBED_MODEL": str(tiny_models["768"]), "RERANKER_MODEL": str(tiny_models["reranker"])}
    done = run_cli("app.ask", "--json", "ノートPCをなくしたら？", env=env)
    assert done.returncode == 0, done.stderr
    assert '"sources"' in done.stdout and "it_helpdesk.md" in done.stdout


def test_the_cross_encoder_score_drives_abstention_and_tune_calibrates_it(settings, tiny_models, folders):
    import json

    env = {"DB_NAME": DB, "EMBED_MODEL": str(tiny_models["768"]), "RERANKER_MODEL": str(tiny_models["reranker"])}
    strict = run_cli("app.ask", "--json", "ノートPCをなくしたら？", env={**env, "ABSTAIN_MIN_RERANK": "0.99"})
    assert strict.returncode == 0, strict.stderr
    answer = json.loads(strict.stdout)
    assert answer["abstained"] == "low_rerank" and answer["answer"] == "資料に記載がありません", answer
    assert answer["sources"] and answer["sources"][0].startswith("it_helpdesk.md")  # the closest, still shown

    tuned = run_cli("app.tune", "--data-dir", str(ROOT / "data"), env=env)
    assert tuned.returncode == 0, tuned.stderr
    line = next(x for x in tuned.stdout.splitlines() if x.startswith("Abstention: ABSTAIN_MIN_RERANK="))
    assert "the cross-encoder's best score" in line
