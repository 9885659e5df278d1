"""Library calls fail closed, on real PostgreSQL (issue 49, row 11): a read API called without saying
who asks raises before reading, instead of reading everything; named full access (FULL_ACCESS, FULL)
still reads the 経理 document, so the refusals are not an empty store's. The unit tests with doubles:
tests/test_store.py and tests/test_mcp_service.py."""

from __future__ import annotations

import pytest

from app import db
from app.graph import default_context
from app.graphrag.search import GraphSearch
from app.permissions.principals import FULL_ACCESS
from app.serving.service import RagService
from app.store import RagStore
from app.users.identity import FULL, Identity
from tests.integration.conftest import ACL_QUESTION, assert_no_secret

pytestmark = pytest.mark.integration

SECRET_DOC = "docs/経理/賞与規程.md"
SECRET_SOURCE = "賞与規程.md#支給率"
NO_PRINCIPALS = "needs? principals"


def searching(mode: str):
    """A read: ``store.search`` of the question in ``mode``."""
    return lambda store: store.search(ACL_QUESTION, search_mode=mode, top_k=10)


STORE_READS = {
    **{f"search {mode}": searching(mode) for mode in ("hybrid", "vector", "keyword", "local", "global", "auto")},
    "get_context": lambda store: store.get_context(ACL_QUESTION, search_mode="keyword"),
    "as_retriever": lambda store: store.as_retriever(search_mode="keyword").invoke(ACL_QUESTION),
    "search_function": lambda store: store.search_function("hybrid")(ACL_QUESTION, 10),
    "graph_search": lambda store: store.graph_search().reports(),
    "list_documents": lambda store: store.list_documents(),
    "source_chunks": lambda store: store.source_chunks(SECRET_SOURCE),
}


def secret_doc_ids(docs) -> set[str]:
    """The 経理 document's ID among search results (Documents)."""
    return {d.metadata.get("doc_id") for d in docs} & {SECRET_DOC}


@pytest.fixture(scope="module")
def forgetful(acl):
    """A new store on the acl collection whose maker forgot the principals (the spec's ``RagStore(settings)``)."""
    return RagStore(acl.settings, embeddings=acl.store.embeddings, engine=acl.store.engine)


@pytest.mark.parametrize("read", STORE_READS.values(), ids=STORE_READS.keys())
def test_a_store_made_without_principals_refuses_every_read(forgetful, read):
    with pytest.raises(TypeError, match=NO_PRINCIPALS):
        read(forgetful)


def test_the_same_store_reads_as_the_principals_a_call_names(forgetful, acl):
    """The refusals above are the missing argument's: named, the same store reads, and only what they may."""
    assert secret_doc_ids(forgetful.search(ACL_QUESTION, top_k=10, principals=FULL_ACCESS)) == {SECRET_DOC}
    bob = forgetful.search(ACL_QUESTION, top_k=10, principals=acl.principals["bob"])
    assert bob and secret_doc_ids(bob) == set()
    with pytest.raises(ValueError, match="principals must be non-empty"):  # naming nobody is refused too
        forgetful.search(ACL_QUESTION, search_mode="keyword", principals=())


def test_the_write_path_needs_no_principals(forgetful, acl):
    """sync writes as the owner, whoever the store reads as: nothing changed, nothing refused."""
    _, report = forgetful.sync(acl.data, graph=False)
    assert report.failures == [] and report.added == 0


SERVICE_READS = {
    "search": lambda svc, **who: svc.search(ACL_QUESTION, 10, "hybrid", **who),
    "ask": lambda svc, **who: svc.ask(ACL_QUESTION, "keyword", **who),
    "cached_answer": lambda svc, **who: svc.cached_answer(ACL_QUESTION, "keyword", **who),
    "passages": lambda svc, **who: svc.passages(ACL_QUESTION, "keyword", **who),
    "list_documents": lambda svc, **who: svc.list_documents(**who),
    "source_chunks": lambda svc, **who: svc.source_chunks(SECRET_SOURCE, **who),
}


@pytest.fixture(scope="module")
def service(acl):
    """The service over the acl store (no LLM: an ask that got past the check would fail here)."""
    return RagService(settings=acl.settings, store=acl.store, context_factory=lambda: pytest.fail("loaded the LLM"))


@pytest.mark.parametrize("read", SERVICE_READS.values(), ids=SERVICE_READS.keys())
@pytest.mark.parametrize("who", [{}, {"who": None}, {"who": FULL_ACCESS}], ids=["forgotten", "None", "bare"])
def test_every_service_read_refuses_a_missing_asker(service, read, who):
    with pytest.raises(TypeError, match="'who'|who must be an Identity"):
        read(service, **who)


def test_the_service_reads_the_accounting_document_only_for_a_named_asker(service, acl):
    full = service.search(ACL_QUESTION, 10, "hybrid", who=FULL)
    assert SECRET_SOURCE in [h["payload"]["source"] for h in full]
    bob = service.search(ACL_QUESTION, 10, "hybrid", who=Identity("bob", acl.principals["bob"]))
    assert bob
    assert_no_secret(bob, "in bob's search")


def test_get_vectorstore_without_principals_refuses_and_with_them_reads_as_them(acl):
    def search(store, **kwargs):
        return store.similarity_search_with_score(ACL_QUESTION, k=20, **kwargs)

    kwargs = {"settings": acl.settings, "embeddings": acl.store.embeddings, "engine": acl.store.engine}
    forgot = db.get_vectorstore(**kwargs)
    with pytest.raises(TypeError, match=NO_PRINCIPALS):
        search(forgot)
    with pytest.raises(TypeError, match=NO_PRINCIPALS):
        forgot.similarity_search(ACL_QUESTION)  # LangChain's own entry point, through the same method
    everything = [d for d, _ in search(forgot, principals=FULL_ACCESS)]
    assert secret_doc_ids(everything) == {SECRET_DOC}
    as_bob = db.get_vectorstore(**kwargs, principals=acl.principals["bob"])
    found = as_bob.similarity_search(ACL_QUESTION, k=20)
    assert found and secret_doc_ids(found) == set()
    # PGVector's own reads that skip the readers' predicate are refused, whoever the store reads as
    with pytest.raises(NotImplementedError, match="who may read"):
        as_bob.max_marginal_relevance_search(ACL_QUESTION, k=3)
    with pytest.raises(NotImplementedError, match="who may read"):
        as_bob.get_by_ids([d.id for d in everything])


def test_graph_search_and_the_workflow_context_require_principals(acl):
    with pytest.raises(TypeError, match="principals"):
        GraphSearch(acl.settings, acl.store.engine)
    with pytest.raises(TypeError, match="principals"):
        default_context(acl.settings, search=lambda q, k: [], reranker=None, generate=False)
    named = GraphSearch(acl.settings, acl.store.engine, embeddings=acl.store.embeddings, principals=FULL_ACCESS)
    assert any("3.7" in d.page_content for d in named.local("賞与規程の支給率").documents)  # not an empty graph
