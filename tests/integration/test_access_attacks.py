"""Issue 49's table, every row replayed: the attacks of scripts/access_attacks.py (imported from the
file, so the script and this module cannot drift apart), each against the session's embedded
PostgreSQL (its settings, engine and real embeddings), a world the script's builder makes there (its own
collection, data folder and users, the real page on a real uvicorn), and each asserted to hold.

Each attack checks what a caller receives from the real store, page or database, and first that its
check can fail (alice finds what bob must not; the access file, proxy header or session is in force),
so it fails with its fix deleted. Row 6 stops and restarts an embedded PostgreSQL of its own, never the
session's."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import private_base

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "access_attacks.py"


def load_script():
    """scripts/access_attacks.py as a module."""
    spec = importlib.util.spec_from_file_location("access_attacks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


attacks = load_script()


@pytest.fixture(scope="module")
def world(settings, engine, real_embeddings):
    base = private_base("rag-attacks-")
    try:
        with attacks.world_of(settings, engine, real_embeddings, base) as made:
            yield made
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize(
    "attack", attacks.ATTACKS, ids=[f"row_{n}_{a.__name__}" for n, a in enumerate(attacks.ATTACKS, 1)]
)
def test_issue_49_attack_holds(world, attack):
    seen = attack(world)  # AssertionError: what leaked
    assert seen and "\n" not in seen


def test_the_script_replays_every_row_of_the_table_in_order():
    assert [a.__name__ for a in attacks.ATTACKS] == [f"attack_{n}" for n in range(1, 13)]
    assert set(attacks.TITLES) == set(attacks.ATTACKS)
