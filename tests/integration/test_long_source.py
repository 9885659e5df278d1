"""Long sources read whole enough (TOP_SOURCE_CHARS) on real PostgreSQL: context [1] gains the window of
its source's other chunks, read as who asks (two users, one source ID in two folders), and the real 0.5B
model is given it."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake import FakeListLLM

from tests.integration.conftest import ROOT, CountingEmbeddings

pytestmark = pytest.mark.integration

QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SECRET = "KX-4471"
# One section cut into two chunks (CHUNK_SIZE=500): the approval in the first, the expense claim in the second.
TRAVEL = (
    "# 手順\n\n## 申請\n\n"
    "出張の申請は、出発の三営業日前までに上長の承認を得て、申請システムの「出張申請」画面から行います。"
    "行き先、日程、目的、同行者を入力し、概算の旅費を添えてください。海外出張の場合は、渡航先の安全情報を確認し、"
    "総務部の渡航登録も済ませてください。承認された申請は、出張者と上長にメールで通知されます。\n\n"
    "航空券と宿泊先は、会社が契約している旅行代理店を通して手配します。個人で手配した場合は、事前に総務部の了承が必要です。"
    "宿泊費の上限は地域ごとに決まっており、上限を超える場合は理由を申請に書いてください。"
    "新幹線はグリーン車を使わず、普通車指定席を使います。\n\n"
    "出張中の予定変更は、すぐに上長へ連絡し、申請システムで変更申請を出してください。"
    "現地での交通費は、できるだけ公共交通機関を使い、タクシーは深夜や荷物が多い場合に限ります。\n\n"
    "日当は、片道百キロメートル以上の出張に支給されます。金額は役職と日数で決まり、半日の出張には半額が支給されます。"
    "海外出張の日当は、渡航先の物価に応じて別の表で決まります。\n\n"
    "出張報告書は、帰着後一週間以内に上長へ提出します。報告書には、訪問先、面談した相手、成果、次の予定を書きます。"
    "報告書の様式は社内ポータルの「様式集」にあります。\n\n"
    "帰着後の出張旅費の精算は、五営業日以内に経費システムの「旅費精算」画面から行い、領収書の画像を添付します。\n"
)
# The same file name and heading in the accounting folder: the same source ID, 経理 only.
BONUS = (
    "# 手順\n\n## 申請\n\n"
    f"賞与の申請は経理部が行い、出張旅費の精算とは別に扱います。管理番号は {SECRET} です。"
    "帰着後の精算は経費システムの「賞与」画面から行い、領収書は不要です。\n"
)
SOURCE = "手順.md#申請"
ACCESS = '[folders]\n"docs/営業" = ["everyone"]\n"docs/経理" = ["経理"]\n'


def write_data(root):
    """The scenario's folder: the sales and the accounting ``手順.md``, and the access file."""
    for folder, text in (("営業", TRAVEL), ("経理", BONUS)):
        (root / "docs" / folder).mkdir(parents=True)
        (root / "docs" / folder / "手順.md").write_text(text, encoding="utf-8")
    (root / "access.toml").write_text(ACCESS, encoding="utf-8")
    return root


class RecordingLLM(FakeListLLM):
    """A stand-in LLM that remembers the prompts it was given."""

    prompts: list = []

    def _call(self, prompt, stop=None, run_manager=None, **kwargs):
        self.prompts.append(prompt)
        return super()._call(prompt, stop, run_manager, **kwargs)


@pytest.fixture(scope="module")
def two_users(settings, engine, real_embeddings, tmp_path_factory):
    """A synced collection of :func:`write_data` whose store records who reads a source, and bob (営業)."""
    import uuid
    from types import SimpleNamespace

    from app.permissions.principals import user_principals
    from app.store import RagStore

    class RecordingStore(RagStore):
        read_as: list = []

        def source_chunks(self, source, principals=None, vectors=False):
            self.read_as.append(tuple(self._who(principals)))
            return super().source_chunks(source, principals, vectors=vectors)

    data = write_data(tmp_path_factory.mktemp("long") / "data")
    s = settings.changed(
        # one context: bob's section has two chunks, and a chunk shown as [2] is not read again for [1]
        retrieval={"collection_name": f"long_{uuid.uuid4().hex[:6]}", "rerank_top_k": 1},
        graph={"extractor": "off"},
        ingest={"data_dir": data},
        answers={"abstain_min_similarity": 0.0, "abstain_min_coverage": 0.0, "abstain_min_support": 0.0},
    )
    store = RecordingStore(s, embeddings=CountingEmbeddings(real_embeddings), engine=engine)
    store.sync(data)
    yield SimpleNamespace(settings=s, store=store, bob=user_principals(f"bob_{uuid.uuid4().hex[:6]}", ["営業"]))
    store.vectorstore.delete_collection()


def test_bobs_context_one_gains_his_sources_window_and_nothing_of_accounting(two_users):
    from app.graph import default_context
    from app.permissions.principals import FULL_ACCESS
    from app.serving.service import RagService, no_read_source, no_search
    from app.users.identity import Identity

    store, bob = two_users.store, two_users.bob
    assert SECRET in str(store.source_chunks(SOURCE, FULL_ACCESS))  # one source ID, the accounting file's too
    llm = RecordingLLM(responses=["五営業日以内です[1]。"], prompts=[])
    service = RagService(
        settings=two_users.settings,
        store=store,
        context_factory=lambda: default_context(
            two_users.settings, search=no_search, llm=llm, reranker=None, read_source=no_read_source, principals=()
        ),
    )
    store.read_as.clear()
    result = service.ask("出張旅費の精算はいつまでに、どの画面から行いますか？", who=Identity("bob", bob))
    assert result["numbered_sources"][0] == SOURCE, result
    prompt = llm.prompts[-1]
    context_one = prompt.split("[1]（出典: 手順.md#申請）\n")[1]
    assert "\n…" in context_one and "[2]" not in context_one  # a window of the other chunk follows the chosen one
    assert SECRET not in prompt and "賞与" not in prompt
    assert store.read_as == [bob]  # read as bob, never with full access


def test_the_real_model_reads_the_window_from_the_other_chunk(own_store, tmp_path):
    """`make ask`'s path (default_context, run_rag) with the real 0.5B: the top source is the section of
    two chunks, and context [1] holds the chosen chunk and, after it, a window of the other one."""
    if not QWEN.is_file():
        pytest.fail(f"{QWEN} is missing: run `make test` (it runs `python -m app.models --offline --llm 0.5b`)")
    from app.graph import default_context, run_rag

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "手順.md").write_text(TRAVEL, encoding="utf-8")
    own_store.sync(tmp_path)
    settings = own_store.settings.changed(
        retrieval={"rerank_top_k": 1},  # the other chunk of the section would be context [2] otherwise
        llm={"model_path": str(QWEN), "model_path_is_default": False, "max_tokens": 60},
        answers={"abstain_min_similarity": 0.0, "abstain_min_coverage": 0.0},
    )
    chunks = [c["text"] for c in own_store.source_chunks(SOURCE)]
    assert len(chunks) == 2, chunks
    ctx = default_context(
        settings, search=own_store.search_function("hybrid"), reranker=None, principals=own_store.principals
    )
    state = run_rag("出張旅費の精算はいつまでに、どの画面から行いますか？", ctx)
    assert state["numbered_sources"][0] == SOURCE, state["numbered_sources"]
    top = state["reranked_documents"][0].page_content
    chosen, window = state["contexts"][0].split("\n…", 1)
    other = chunks[1 - chunks.index(top)]
    assert chosen == top and window and window in other and window not in top, state["contexts"][0]
    assert f"[1]（出典: {SOURCE}）\n{chosen}\n…{window}" in state["prompt"]
    assert "五営業日以内に経費システムの「旅費精算」画面から行い" in state["contexts"][0]  # the answer's sentence
