"""The Makefile passes what a user types to the app as data (issue 15, case 6): real `make`, with a
stand-in interpreter (PY=…) that prints the arguments it gets, so nothing heavy runs."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "$(shell touch {m}1)`touch {m}2`$$(touch {m}3); touch {m}4 \"x'y $100の料金は？\n次の行"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def fake_py(tmp_path):
    """An executable that prints its argv (after the interpreter) as JSON."""
    path = tmp_path / "fakepy"
    path.write_text("#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    path.chmod(0o755)
    return path


def make(*args: str, py: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "-s", "-C", str(ROOT), f"PY={py}", *args], capture_output=True, text=True, timeout=60
    )


def argv(result: subprocess.CompletedProcess) -> list[str]:
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_question_with_make_and_shell_syntax_arrives_unchanged_and_runs_nothing(fake_py, tmp_path):
    marker = tmp_path / "ran"
    question = HOSTILE.format(m=marker)
    result = make("ask", f"Q={question}", py=fake_py)
    assert result.returncode == 0, result.stderr
    assert argv(result) == ["-m", "app.ask", "--", question]
    assert not list(tmp_path.glob("ran*"))


def test_dollar_amount_and_leading_dash_reach_the_app(fake_py):
    assert argv(make("ask", "Q=$100の料金は？", py=fake_py))[-1] == "$100の料金は？"
    assert argv(make("ask", "Q=-5度以下の保管は？", py=fake_py))[-2:] == ["--", "-5度以下の保管は？"]


@pytest.mark.parametrize(
    "target,variable,expected_prefix",
    [
        ("ask", "MODE", ["-m", "app.ask", "--mode"]),
        ("ask", "IN", ["-m", "app.ask", "--in"]),
        ("ask", "FORMAT", ["-m", "app.ask", "--format"]),
        ("ask", "SINCE", ["-m", "app.ask", "--since"]),
        ("remove", "DOC", ["-m", "app.docs", "remove", "--"]),
        ("demo", "DEMO_Q", ["-m", "app.ask", "--"]),
        ("ingest", "WORKERS", ["-m", "app.ingest", "--workers"]),
    ],
)
def test_other_variables_are_data_too(fake_py, tmp_path, target, variable, expected_prefix):
    value = f"$(shell touch {tmp_path}/ran); touch {tmp_path}/ran2"
    result = make(target, "Q=x", f"{variable}={value}", py=fake_py)
    assert result.returncode == 0, result.stderr
    got = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("[")]
    assert any(a[: len(expected_prefix)] == expected_prefix and value in a for a in got), got
    assert not list(tmp_path.glob("ran*"))


def test_a_question_s_scope_reaches_ask_as_its_flags(fake_py):
    result = make("ask", "Q=休暇は？", "IN=docs/規程", "FORMAT=pdf,docx", "SINCE=2025-04-01", py=fake_py)
    assert argv(result) == [
        "-m",
        "app.ask",
        "--in",
        "docs/規程",
        "--format",
        "pdf,docx",
        "--since",
        "2025-04-01",
        "--",
        "休暇は？",
    ]


def test_dry_run_flag_is_not_expanded(fake_py, tmp_path):
    result = make("ingest", f"DRY_RUN=$(shell touch {tmp_path}/ran)", py=fake_py)
    assert argv(result) == ["-m", "app.ingest", "--dry-run"] and not (tmp_path / "ran").exists()


def test_ask_without_a_question_prints_usage(fake_py):
    result = make("ask", py=fake_py)
    assert result.returncode == 2 and 'usage: make ask Q="質問文"' in result.stderr


def test_workers_reach_ingest_as_one_argument(fake_py):
    assert argv(make("ingest", "WORKERS=2", py=fake_py)) == ["-m", "app.ingest", "--workers", "2"]
    assert argv(make("ingest", py=fake_py)) == ["-m", "app.ingest"]


def fresh_clone_dry_run(tmp_path: Path, target: str) -> str:
    """``make -n <target>`` in a copy of the Makefile and the files its stamps read, without a .venv:
    what a fresh clone's first ``make <target>`` would run."""
    for name in ("Makefile", "requirements.txt", "requirements-dev.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    done = subprocess.run(["make", "-n", "-C", str(tmp_path), target], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_first_demo_installs_what_the_app_needs_only(tmp_path):
    """`make demo` installs requirements.txt; no test tools (requirements-dev.txt) and no browser."""
    plan = fresh_clone_dry_run(tmp_path, "demo")
    assert "install.sh .venv/bin/python requirements.txt" in plan
    assert "requirements-dev.txt" not in plan and "install_browser" not in plan


def test_make_test_installs_the_test_tools_and_the_browser_once(tmp_path):
    plan = fresh_clone_dry_run(tmp_path, "test")
    assert "install.sh .venv/bin/python requirements-dev.txt" in plan and "install_browser.sh" in plan
    assert "install.sh .venv/bin/python requirements.txt\n" not in plan  # the development install holds it
