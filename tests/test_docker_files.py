"""The Docker files keep secrets and user data out and run as a non-root user (issue 15, case 8).

Static checks of the files; `../shared/tools/docker-check` builds the image and runs `make demo`
in it for real (README, Docker)."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def dockerignore() -> list[str]:
    return [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_dockerignore_keeps_database_venv_models_git_and_secrets_out():
    rules = dockerignore()
    for entry in (".pgdata", ".venv", "models/*", ".git", "secrets", "data/pdf/*", "data/csv/*", "data/docs/*"):
        assert entry in rules, entry
    assert "!data/csv/faq.csv" in rules and "!data/docs/it_helpdesk.md" in rules  # the sample corpus stays (make demo)


def test_image_runs_as_a_non_root_user():
    lines = [line.split() for line in (ROOT / "Dockerfile").read_text().splitlines() if line.strip()]
    users = [words[1] for words in lines if words[0] == "USER"]
    assert users and users[-1] not in ("root", "0")


def test_every_script_the_install_step_runs_is_copied_before_it():
    dockerfile = (ROOT / "Dockerfile").read_text()
    install = dockerfile.index("RUN sh scripts/install.sh")
    called = re.findall(r"([a-z_]+\.sh)", (ROOT / "scripts" / "install.sh").read_text())
    copied = dockerfile[:install]
    assert "build_pgvector.sh" in called
    for script in set(called) - {"install.sh"}:
        assert script in copied, script


def test_no_default_database_password_anywhere():
    text = (ROOT / "docker-compose.yml").read_text()
    assert "DB_PASSWORD:-" not in text and "POSTGRES_PASSWORD:" not in text
    services = compose()["services"]
    assert services["db"]["environment"]["POSTGRES_PASSWORD_FILE"] == "/run/secrets/db_password"
    assert services["app"]["environment"]["DB_PASSWORD_FILE"] == "/run/secrets/db_password"
    assert compose()["secrets"]["db_password"]["file"] == "./secrets/db_password"


def test_images_are_pinned_by_digest():
    services = compose()["services"]
    assert DIGEST.search(services["db"]["image"])
    assert DIGEST.search(services["app"]["build"]["args"]["PYTHON_IMAGE"])
    assert "FROM ${PYTHON_IMAGE}" in (ROOT / "Dockerfile").read_text()


def test_app_container_does_not_run_as_root():
    user = compose()["services"]["app"]["user"]
    assert user.startswith("${RAG_UID:-10001}")


def test_scale_profile_serves_the_gguf_with_llama_server_to_the_app():
    services = compose()["services"]
    llm = services["llm"]
    assert llm["profiles"] == ["scale"] and "llama.cpp:server" in llm["image"]
    assert "./models:/models:ro" in llm["volumes"] and llm["ports"][0].startswith("127.0.0.1:")
    assert llm["command"][:2] == ["-m", "/models/${LLM_SERVER_MODEL:-qwen2.5-coder-1.5b-instruct-q4_k_m.gguf}"]
    assert services["app"]["environment"]["LLM_BASE_URL"] == "${LLM_BASE_URL:-}"
    makefile = (ROOT / "Makefile").read_text()
    assert (
        "LLM_BASE_URL=http://llm:8080/v1 LLM_CONCURRENCY=$${LLM_SERVER_PARALLEL:-2} $(COMPOSE) --profile scale up -d"
        in makefile
    )  # the app sends as many answers at once as the server has slots
    assert services["app"]["environment"]["LLM_CONCURRENCY"] == "${LLM_CONCURRENCY:-1}"


def test_workers_profile_runs_queue_workers_as_replicas_on_the_apps_database():
    services = compose()["services"]
    worker, app = services["worker"], services["app"]
    assert worker["profiles"] == ["workers"] and worker["command"] == ["python", "-m", "app.worker"]
    assert worker["deploy"]["replicas"] == "${WORKER_REPLICAS:-2}" and "container_name" not in worker
    assert worker["user"] == app["user"] and worker["build"] == app["build"] and worker["secrets"] == ["db_password"]
    assert {k: worker["environment"][k] for k in app["environment"]} == app["environment"]  # the same store
    assert "ports" not in worker  # it listens on nothing
