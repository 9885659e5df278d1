"""A question narrowed to folders, formats and dates (app.storage.scope), against the real PostgreSQL:
every read path keeps only the scope's chunks, the keyword cap is spent inside the scope, and a scope
never widens what a user may read (nor says whether a folder they may not read exists)."""

import io
import uuid
from datetime import date, timedelta
from types import SimpleNamespace

import pytest
from sqlalchemy import text

from app import storage
from app.permissions.principals import FULL_ACCESS, user_principals
from app.storage import graphrag_rows, keywords
from app.storage.scope import Scope, missing_folders
from app.storage.table_rows import readable_tables, table_rows
from tests.integration.conftest import CountingEmbeddings

pytestmark = pytest.mark.integration

FILES = {
    "docs/規程/休暇規程.md": "# 休暇規程\n\n## 年次有給休暇\n\n年次有給休暇は入社六か月後に十日を付与する。管理番号は RK-1001 である。\n",
    # the same subject, and the keyword more often: it ranks first when the scope is not applied
    "docs/旧規程/旧休暇規程.md": (
        "# 休暇規程（旧）\n\n## 年次有給休暇\n\n年次有給休暇は入社一年後に八日を付与する。"
        "年次有給休暇の繰越は認めない。年次有給休暇の買取も認めない。管理番号は RK-0901 である。\n"
    ),
    # a folder whose name starts with the other's: not inside it
    "docs/規程集/休暇メモ.md": "# 休暇メモ\n\n## 年次有給休暇\n\n年次有給休暇の申請は三日前までに行う。管理番号は RK-5555 である。\n",
    # only 経理 may read it
    "docs/人事/人事休暇規程.md": "# 人事休暇規程\n\n## 年次有給休暇\n\n年次有給休暇は管理職に十五日を付与する。管理番号は HR-7777 である。\n",
    "csv/休暇日数.csv": "区分,日数\n一般,10\n管理職,15\n",
}
ACCESS = (
    '[folders]\n"docs/規程" = ["everyone"]\n"docs/旧規程" = ["everyone"]\n"docs/規程集" = ["everyone"]\n'
    '"docs/人事" = ["経理"]\n"csv" = ["everyone"]\n'
)
QUESTION = "年次有給休暇は何日付与されますか"
MODES = ("vector", "keyword", "hybrid")


@pytest.fixture(scope="module")
def scoped(settings, engine, real_embeddings, tmp_path_factory):
    """A synced collection of FILES (graph by the fast extractor) and the principals of alice (経理) and
    bob (営業)."""
    from app.store import RagStore

    data = tmp_path_factory.mktemp("scope") / "data"
    for name, body in FILES.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(body, encoding="utf-8")
    (data / "access.toml").write_text(ACCESS, encoding="utf-8")
    s = settings.changed(
        retrieval={"collection_name": f"scope_{uuid.uuid4().hex[:6]}"},
        graph={"extractor": "fast"},
        ingest={"data_dir": data},
    )
    store = RagStore(s, embeddings=CountingEmbeddings(real_embeddings), engine=engine)
    store.sync(data)
    suffix = uuid.uuid4().hex[:6]
    yield SimpleNamespace(
        settings=s,
        store=store,
        collection=s.retrieval.collection_name,
        alice=user_principals(f"alice_{suffix}", ["経理"]),
        bob=user_principals(f"bob_{suffix}", ["営業"]),
        names={"bob": f"bob_{suffix}"},
    )
    store.vectorstore.delete_collection()


def doc_ids(docs) -> set[str]:
    """The document IDs of search results."""
    return {d.metadata["doc_id"] for d in docs}


@pytest.mark.parametrize("mode", MODES)
def test_a_scoped_search_returns_only_the_folder_s_chunks(scoped, mode):
    everything = doc_ids(scoped.store.search(QUESTION, search_mode=mode, top_k=10, principals=FULL_ACCESS))
    assert {"docs/規程/休暇規程.md", "docs/旧規程/旧休暇規程.md", "docs/規程集/休暇メモ.md"} <= everything
    inside = doc_ids(
        scoped.store.search(
            QUESTION, search_mode=mode, top_k=10, principals=FULL_ACCESS, scope=Scope(folders=("docs/規程",))
        )
    )
    assert "docs/規程/休暇規程.md" in inside
    assert all(d.startswith("docs/規程/") for d in inside), inside  # not docs/規程集/, not docs/旧規程/
    two = doc_ids(
        scoped.store.search(
            QUESTION,
            search_mode=mode,
            top_k=10,
            principals=FULL_ACCESS,
            scope=Scope(folders=("docs/旧規程", "./docs/規程集/")),
        )
    )
    assert two == {"docs/旧規程/旧休暇規程.md", "docs/規程集/休暇メモ.md"}


def test_formats_and_dates_narrow_in_the_same_sql(scoped, engine):
    csv_only = scoped.store.search(
        "管理職 日数", search_mode="keyword", top_k=10, principals=FULL_ACCESS, scope=Scope(formats=("CSV",))
    )
    assert doc_ids(csv_only) == {"csv/休暇日数.csv"}
    md_only = doc_ids(
        scoped.store.search(QUESTION, search_mode="hybrid", top_k=10, principals=FULL_ACCESS, scope=Scope(formats="md"))
    )
    assert md_only and all(d.endswith(".md") for d in md_only)
    yesterday, tomorrow = date.today() - timedelta(days=1), date.today() + timedelta(days=2)
    for mode in MODES:
        later = scoped.store.search(
            QUESTION, search_mode=mode, top_k=10, principals=FULL_ACCESS, scope=Scope(since=tomorrow)
        )
        assert later == [], mode
        assert scoped.store.search(
            QUESTION, search_mode=mode, top_k=10, principals=FULL_ACCESS, scope=Scope(since=yesterday)
        )
    # a document's effective date, when its version has one, is its date (not the day it was ingested)
    collection = storage.collection_id(engine, scoped.collection)
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE rag_document SET version_effective = DATE '2020-04-01' "
                "WHERE collection_id = :c AND doc_id = 'docs/旧規程/旧休暇規程.md'"
            ),
            {"c": collection},
        )
    try:
        found = doc_ids(
            scoped.store.search(
                QUESTION, search_mode="keyword", top_k=10, principals=FULL_ACCESS, scope=Scope(since="2021-01-01")
            )
        )
        assert "docs/旧規程/旧休暇規程.md" not in found and "docs/規程/休暇規程.md" in found
        old = scoped.store.search(
            QUESTION, search_mode="keyword", top_k=10, principals=FULL_ACCESS, scope=Scope(since="2020-01-01")
        )
        assert "docs/旧規程/旧休暇規程.md" in doc_ids(old)
    finally:
        with engine.begin() as conn:
            conn.execute(
                text("UPDATE rag_document SET version_effective = NULL WHERE collection_id = :c"), {"c": collection}
            )


def test_the_keyword_cap_is_spent_inside_the_scope(scoped, engine, monkeypatch):
    """One candidate only: scoped to a folder other than the best candidate's, the candidates' function still
    finds that folder's chunk, because it tests the scope before its cap (after it, nothing would be left)."""
    monkeypatch.setattr(keywords, "CANDIDATE_CAP", 1)
    terms = ["年次", "有給", "休暇"]
    unscoped = storage.keyword_search(engine, scoped.collection, terms, 1, FULL_ACCESS)
    assert len(unscoped) == 1
    best = unscoped[0][2]["doc_id"]
    other = next(f for f in ("docs/規程/", "docs/旧規程/", "docs/規程集/") if not best.startswith(f))
    inside = storage.keyword_search(engine, scoped.collection, terms, 1, FULL_ACCESS, scope=Scope(folders=other))
    assert len(inside) == 1 and inside[0][2]["doc_id"].startswith(other)


def test_tables_and_graph_passages_are_narrowed_too(scoped, engine):
    tables = readable_tables(engine, scoped.collection, FULL_ACCESS, Scope(folders=("csv",)))
    assert [t.doc_id for t in tables] == ["csv/休暇日数.csv"]
    assert [t.doc_id for t in readable_tables(engine, scoped.collection, FULL_ACCESS)] == ["csv/休暇日数.csv"]
    assert readable_tables(engine, scoped.collection, FULL_ACCESS, Scope(folders=("docs/規程",))) == []
    assert readable_tables(engine, scoped.collection, FULL_ACCESS, Scope(formats=("md",))) == []
    assert len(table_rows(engine, scoped.collection, tables[0].id, FULL_ACCESS)) == 2
    assert table_rows(engine, scoped.collection, tables[0].id, FULL_ACCESS, Scope(since="2999-01-01")) == []
    collection = storage.collection_id(engine, scoped.collection)
    with storage.reading(engine, FULL_ACCESS) as conn:
        keys = list(
            conn.execute(
                text("SELECT DISTINCT entity FROM rag_graph_mention WHERE collection_id = :c"), {"c": collection}
            ).scalars()
        )
        assert keys, "the fast extractor found no entity"
        every = graphrag_rows.text_units_of(conn, collection, keys, FULL_ACCESS)
        inside = graphrag_rows.text_units_of(conn, collection, keys, FULL_ACCESS, Scope(folders=("docs/規程",)))
        chunk_ids = [u["chunk_id"] for u in every]
        named = graphrag_rows.chunk_documents(conn, chunk_ids, FULL_ACCESS, Scope(folders=("docs/規程",)))
    assert {u["cmetadata"]["doc_id"] for u in every} > {u["cmetadata"]["doc_id"] for u in inside}
    assert inside and all(u["cmetadata"]["doc_id"].startswith("docs/規程/") for u in inside)
    assert named and all(doc.startswith("docs/規程/") for doc, _ in named.values())


def test_a_scope_never_widens_what_a_user_may_read(scoped, engine):
    hr = Scope(folders=("docs/人事",))
    for mode in MODES:
        assert scoped.store.search(QUESTION, search_mode=mode, top_k=10, principals=scoped.bob, scope=hr) == [], mode
        found = scoped.store.search(QUESTION, search_mode=mode, top_k=10, principals=scoped.alice, scope=hr)
        assert doc_ids(found) == {"docs/人事/人事休暇規程.md"}, mode
    assert readable_tables(engine, scoped.collection, scoped.bob, Scope(folders=("csv",)))  # everyone's
    # the folder bob may not read is missing to him exactly as a folder that does not exist
    absent = Scope(folders=("docs/存在しない",))
    assert missing_folders(engine, scoped.collection, hr, scoped.bob) == ["docs/人事/"]
    assert missing_folders(engine, scoped.collection, absent, scoped.bob) == ["docs/存在しない/"]
    assert missing_folders(engine, scoped.collection, hr, scoped.alice) == []
    both = Scope(folders=("docs/規程", "docs/人事"))
    assert missing_folders(engine, scoped.collection, both, scoped.bob) == ["docs/人事/"]
    assert missing_folders(engine, scoped.collection, both, FULL_ACCESS) == []


def test_the_command_line_says_in_one_line_that_a_folder_holds_nothing_to_read(scoped, engine, monkeypatch, capsys):
    """``--in`` a folder that does not exist, or that the asker may not read: exit 2, the same line
    (but the folder's name), before any model loads."""
    from app.cli import ask as ask_cli
    from app.storage import users as user_rows

    monkeypatch.setattr(ask_cli, "get_settings", lambda: scoped.settings)
    monkeypatch.setattr(ask_cli, "default_context", pytest.fail)  # nothing loads for a folder with nothing in it
    user_rows.upsert_user(engine, scoped.names["bob"], ["営業"])
    try:
        lines = {}
        for folder, who in (("docs/人事", ["--as", scoped.names["bob"]]), ("docs/存在しない", [])):
            assert ask_cli.main(["--in", folder, *who, QUESTION], out=io.StringIO()) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and err.startswith("Error: "), err
            lines[folder] = err.replace(folder + "/", "FOLDER")
        assert lines["docs/人事"] == lines["docs/存在しない"]
        assert "FOLDER" in lines["docs/人事"]
    finally:
        user_rows.delete_user(engine, scoped.names["bob"])


def test_a_scoped_local_graph_search_reads_only_what_the_scope_holds(scoped, engine):
    from app.graphrag.search import GraphSearch

    def local(scope):
        return GraphSearch(scoped.settings, engine, principals=FULL_ACCESS, scope=scope).local(QUESTION)

    everything, inside = local(None), local(Scope(folders=("docs/規程",)))
    assert doc_ids(inside.documents) == {"docs/規程/休暇規程.md"}
    assert any(not doc.startswith("docs/規程/") for doc in doc_ids(everything.documents))  # unscoped: others too
    named = {entity for unit in inside.context.text_units_used for entity in unit.entity_ids}
    assert inside.context.entities_used and {e.id for e in inside.context.entities_used} <= named
    assert inside.context.reports_used == [] and "RK-0901" not in inside.context.context_text
