"""Tables stored as tables on real PostgreSQL (app.storage.table_rows): written by the sync in the
document's switch, replaced when the file changes, purged when it goes, kept in step with the
document's readers, and read only by who may read the document (both walls)."""

from __future__ import annotations

import shutil
import uuid
from decimal import Decimal

import pytest
from openpyxl import Workbook
from sqlalchemy import text

from app import storage
from app.permissions.principals import FULL_ACCESS, user_principals
from app.storage.table_rows import readable_tables, table_rows
from app.tables.extract import csv_tables
from tests.integration.conftest import ROOT, HashEmbeddings

pytestmark = pytest.mark.integration

SECRET_COLUMN = "賞与支給率"
ACCESS = '[folders]\n"csv" = ["everyone"]\n"docs/経理" = ["経理"]\n'


def write_bonus_book(path) -> None:
    """A workbook under docs/経理 with a title block above its header."""
    wb = Workbook()
    ws = wb.active
    ws.title = "支給"
    ws["A1"] = "2024年度 賞与"
    ws.append(["氏名", SECRET_COLUMN])
    ws.append(["山田", "3.7か月"])
    ws.append(["佐藤", "2.5か月"])
    wb.save(path)


@pytest.fixture
def tables_store(settings, engine, tmp_path):
    """A collection synced from csv/products.csv (everyone) and docs/経理/賞与.xlsx (経理 only)."""
    from app.store import RagStore

    data = tmp_path / "data"
    (data / "csv").mkdir(parents=True)
    (data / "docs" / "経理").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "csv" / "products.csv", data / "csv" / "products.csv")
    write_bonus_book(data / "docs" / "経理" / "賞与.xlsx")
    (data / "access.toml").write_text(ACCESS, encoding="utf-8")
    s = settings.changed(
        retrieval={"collection_name": f"tb_{uuid.uuid4().hex[:8]}"},
        graph={"extractor": "off"},
        ingest={"data_dir": data},
    )
    rs = RagStore(s, embeddings=HashEmbeddings(), engine=engine, principals=FULL_ACCESS)
    rs.sync(data)
    yield rs, data
    with rs.writing():
        rs.vectorstore.delete_collection()


def names(tables) -> list[tuple[str, str]]:
    return [(t.source_file, t.sheet) for t in tables]


def test_the_sync_stores_each_csv_and_sheet_with_typed_cells(tables_store, engine):
    rs, _ = tables_store
    tables = readable_tables(engine, rs.settings.retrieval.collection_name, FULL_ACCESS)
    assert names(tables) == [("products.csv", ""), ("賞与.xlsx", "支給")]
    products, bonus = tables
    assert [(c["name"], c["kind"], c["unit"]) for c in products.columns] == [
        ("製品名", "text", ""),
        ("価格", "number", "円"),
        ("仕様", "text", ""),
        ("対象", "text", ""),
    ]
    assert products.columns[1]["samples"] == [
        "月額9800円（税別）",
        "1ユーザーあたり月額500円（税別）",
        "1ユーザーあたり月額300円（税別）",
    ]
    rows = table_rows(engine, rs.settings.retrieval.collection_name, products.id, FULL_ACCESS)
    assert [n for n, _ in rows] == list(range(1, 8)) and rows[0][1][:2] == [
        ["ミナトクラウド会計", None],
        ["月額9800円（税別）", 9800],
    ]
    (expected,) = csv_tables(ROOT / "data" / "csv" / "products.csv")
    assert [Decimal(cells[1][1]) for _, cells in rows] == [cells[1].value for _, cells in expected.rows]
    assert (bonus.cite(2), products.cite(2)) == ("賞与.xlsx:支給!r2", "products.csv:r2")


def test_bob_never_loads_a_table_he_may_not_read_nor_its_column_names(tables_store, engine):
    rs, _ = tables_store
    collection = rs.settings.retrieval.collection_name
    bob, alice = user_principals("bob_t", ["営業"]), user_principals("alice_t", ["経理"])
    bonus = next(t for t in readable_tables(engine, collection, FULL_ACCESS) if t.sheet == "支給")
    seen = readable_tables(engine, collection, bob)
    assert names(seen) == [("products.csv", "")]
    assert SECRET_COLUMN not in repr(seen)
    assert table_rows(engine, collection, bonus.id, bob) == []
    assert names(readable_tables(engine, collection, alice)) == [("products.csv", ""), ("賞与.xlsx", "支給")]
    assert [cells[1][0] for _, cells in table_rows(engine, collection, bonus.id, alice)] == ["3.7か月", "2.5か月"]
    # the second wall: plain SELECTs without the readers' predicate, as the query role with bob's principals
    with storage.reading(engine, bob) as conn:
        assert conn.execute(text("SELECT current_user")).scalar() == "rag_query"
        columns = conn.execute(text("SELECT columns::text FROM rag_table")).scalars().all()
        cells = conn.execute(text("SELECT cells::text FROM rag_table_row")).scalars().all()
    assert columns and not any(SECRET_COLUMN in c for c in columns)
    assert cells and not any("3.7か月" in c for c in cells)


def test_readers_changed_reach_the_tables_and_their_rows(tables_store, engine):
    rs, data = tables_store
    collection = rs.settings.retrieval.collection_name
    bob = user_principals("bob_t", ["営業"])
    (data / "access.toml").write_text(ACCESS.replace('["経理"]', '["経理", "営業"]'), encoding="utf-8")
    rs.sync(data)
    bonus = next(t for t in readable_tables(engine, collection, bob) if t.sheet == "支給")
    assert len(table_rows(engine, collection, bonus.id, bob)) == 2


def test_a_changed_file_replaces_its_tables_and_a_removed_one_purges_them(tables_store, engine):
    rs, data = tables_store
    collection = rs.settings.retrieval.collection_name
    path = data / "csv" / "products.csv"
    path.write_text("製品名,価格\nミナトA,100円\n", encoding="utf-8")
    rs.sync(data)
    products = next(t for t in readable_tables(engine, collection, FULL_ACCESS) if t.source_file == "products.csv")
    assert (products.row_count, [c["name"] for c in products.columns]) == (1, ["製品名", "価格"])
    assert table_rows(engine, collection, products.id, FULL_ACCESS) == [(1, [["ミナトA", None], ["100円", 100]])]
    path.unlink()
    rs.sync(data)
    assert names(readable_tables(engine, collection, FULL_ACCESS)) == [("賞与.xlsx", "支給")]
    with engine.connect() as conn:
        assert (
            conn.execute(text("SELECT count(*) FROM rag_table_row WHERE table_id = :t"), {"t": products.id}).scalar()
            == 0
        )


def test_a_word_table_is_stored_and_answers_cite_its_section(settings, engine, tmp_path):
    """A .docx in docs/ with a table: stored as a table by the sync, answered from it (the SQL handed in
    as the model's reply), its rows cited by the Word section the text path cites."""
    from app.store import RagStore
    from app.tables.answer import TableAnswerer
    from tests.test_tables_documents import _docx

    data = tmp_path / "data"
    (data / "docs").mkdir(parents=True)
    _docx(data / "docs" / "旅費.docx")
    s = settings.changed(
        retrieval={"collection_name": f"tw_{uuid.uuid4().hex[:8]}"},
        graph={"extractor": "off"},
        ingest={"data_dir": data},
    )
    rs = RagStore(s, embeddings=HashEmbeddings(), engine=engine, principals=FULL_ACCESS)
    try:
        rs.sync(data)
        collection = s.retrieval.collection_name
        (table,) = readable_tables(engine, collection, FULL_ACCESS)
        assert (table.source_file, table.sheet, table.anchor) == ("旅費.docx", "表1", "旅費.docx#日当")
        answerer = TableAnswerer(
            list_tables=lambda: readable_tables(engine, collection, FULL_ACCESS),
            load_rows=lambda table_id: table_rows(engine, collection, table_id, FULL_ACCESS),
            generate=lambda prompt: 'SELECT "役職", "宿泊費" FROM t ORDER BY "宿泊費" DESC LIMIT 1',
            settings=s.tables,
        )
        found = answerer.answer("宿泊費が一番高い役職は？")
        assert found.sources == ["旅費.docx#日当"] and "部長" in found.answer and "12,000円" in found.answer
        chunk_sources = {d.metadata["source"] for d in rs.search("宿泊費", principals=FULL_ACCESS, top_k=10)}
        assert "旅費.docx#日当" in chunk_sources  # the citation names a stored chunk
    finally:
        with rs.writing():
            rs.vectorstore.delete_collection()
