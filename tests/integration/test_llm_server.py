"""LLM_BASE_URL: generation through a real OpenAI-compatible server — llama-cpp-python's own
(`python -m llama_cpp.server`) serving the offline Qwen2.5-Coder-0.5B GGUF on 127.0.0.1 — compared
with the same model in process, and the server's failures as one-line errors."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.errors import LLMUnavailableError
from tests.conftest import cores_per_test_process
from tests.integration.conftest import ROOT, free_port, run_cli

pytestmark = pytest.mark.integration

QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
GGUF_SMOL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
QUESTION = "エラーコードE3010は何を意味しますか？"


def start_server(model: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """Start llama_cpp.server on a free 127.0.0.1 port; return it and its /v1 URL once it answers."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            str(cores_per_test_process()),
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # a file: llama.cpp's log would fill a pipe
    url = f"http://127.0.0.1:{port}/v1"
    wait_ready(proc, f"{url}/models", "llama_cpp.server", Path(log.name))
    return proc, url


def wait_ready(proc: subprocess.Popen, probe: str, name: str, log: Path | None = None) -> None:
    """Wait (up to 120 s) until ``probe`` answers 200 or 401; fail the test if the server exits."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited: {log.read_text(errors='replace')[-2000:] if log else proc.returncode}")
        try:
            if httpx.get(probe, timeout=2).status_code in (200, 401):
                return
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    pytest.fail(f"{name} did not start within 120 s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def llm_server(ingested):
    if not QWEN.is_file():
        pytest.fail(f"{QWEN} is missing: run `make test` (it installs the test LLMs)")
    proc, url = start_server(QWEN)
    yield url
    stop(proc)


# no re-ranker; each passage cut to the sentences around the question (a third of Qwen's prompt: the
# answer still comes from the page that holds it)
SHORT_PROMPT = {"RERANKER_MODEL": "acme/absent", "CONTEXT_MAX_CHARS": "300"}


def _ask(env: dict, *args: str) -> subprocess.CompletedProcess:
    return run_cli("app.ask", "--mode", "keyword", *args, QUESTION, env={**SHORT_PROMPT, **env})


def test_server_answers_like_the_same_model_in_process(llm_server):
    in_process = _ask({"LLM_MODEL_PATH": str(QWEN)}, "--no-stream")
    assert in_process.returncode == 0, in_process.stderr
    served = _ask({"LLM_BASE_URL": llm_server}, "--no-stream")
    assert served.returncode == 0, served.stderr
    answer = served.stdout.split("=== Answer ===")[1].split("=== Sources")[0].split("\n根拠:")[0].strip()
    assert "E3010" in answer and "タイムアウト" in answer  # a real answer, from the page that holds it
    assert served.stdout == in_process.stdout  # same model, temperature 0, same prompt and stop sequences
    streamed = _ask({"LLM_BASE_URL": llm_server})
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stdout.split("=== Sources")[0].strip() == served.stdout.split("=== Sources")[0].strip()
    # LLM_MAX_TOKENS holds through the server too (it reads max_tokens, not max_completion_tokens)
    short = _ask({"LLM_BASE_URL": llm_server, "LLM_MAX_TOKENS": "3"}, "--no-stream")
    assert short.returncode == 0, short.stderr
    short_answer = short.stdout.split("=== Answer ===")[1].split("=== Sources")[0].split("\n根拠:")[0].strip()
    # three tokens make no whole answer: it is withdrawn and the passage shown instead (a longer one
    # would have been shown as written)
    assert short_answer.startswith("資料の該当箇所") or len(short_answer) <= 20, short_answer
    # and as a user runs it: LLM_BASE_URL=… make ask Q=… (PY: this interpreter, no setup step)
    made = subprocess.run(
        ["make", "-s", "ask", f"Q={QUESTION}", "MODE=keyword", f"PY={sys.executable}"],
        cwd=ROOT,
        env={**os.environ, **SHORT_PROMPT, "LLM_BASE_URL": llm_server},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.split("=== Sources")[0].strip() == served.stdout.split("=== Sources")[0].strip()


def test_a_server_that_is_down_is_one_line(ingested):
    port = free_port()  # nothing listens there
    result = _ask({"LLM_BASE_URL": f"http://127.0.0.1:{port}/v1", "LLM_MAX_RETRIES": "0"}, "--no-stream")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: cannot reach the LLM server at http://127.0.0.1:{port}/v1 ([Errno 111] Connection refused); "
        "start it or fix LLM_BASE_URL"
    )
    assert "Traceback" not in result.stderr


def test_wrong_key_then_a_server_killed_mid_stream(integration_env):
    """The server wants an API key: a wrong one is HTTP 401 in one line; with the right one the answer
    streams until the server is killed, and the break is one line too (pieces already shown stay shown)."""
    from app.llm import generate, get_llm

    proc, url = start_server(QWEN, "--api_key", "k3y")
    try:
        base = Settings.from_env().changed(llm={"base_url": url, "max_retries": 0, "max_tokens": 200})
        with pytest.raises(LLMUnavailableError) as wrong:
            generate("こんにちは", llm=get_llm(base.changed(llm={"api_key": "wrong"})))
        assert str(wrong.value).startswith(f"the LLM server at {url} answered HTTP 401: ")
        pieces: list[str] = []

        def kill_after_first(piece: str) -> None:
            pieces.append(piece)
            if len(pieces) == 1:
                os.kill(proc.pid, signal.SIGKILL)

        llm = get_llm(base.changed(llm={"api_key": "k3y"}))
        with pytest.raises(LLMUnavailableError) as broken:
            generate("日本の四季について、春から順に詳しく説明してください。", llm=llm, on_token=kill_after_first)
        assert str(broken.value).startswith(f"the LLM server at {url} broke off the answer (")
        assert len(pieces) >= 1
    finally:
        stop(proc)
