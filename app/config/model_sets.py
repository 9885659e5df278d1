"""The models ``make models`` fetches when the Hugging Face Hub answers, and what runs once they are in
``models/`` (MODEL_SET).

* ``japanese`` (the default): a Japanese embedder (Ruri v3 130m: the retrieval score of the 310m in
  JMTEB at about a third of its CPU cost, bench/results-model-cost.json), a Japanese cross-encoder
  (japanese-reranker-xsmall-v2) and an instruction-tuned Qwen2.5 that writes Japanese, sized by the
  cores (1.5B up to 4 cores, 7B from 6). All Apache-2.0 or MIT.
* ``spec``: the primary spec's models (EMBED_MODEL's default, the English ms-marco cross-encoder,
  Llama-2-7B GGUF), as before.

Offline nothing changes: the PyPI models (multilingual-e5-small 4-bit, Qwen2.5-Coder) and no
re-ranker. A variable that names a model (EMBED_MODEL, RERANKER_MODEL, LLM_MODEL_PATH) wins over the
set, both in what ``make models`` fetches and in what runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MODEL_SETS = ("japanese", "spec")  # the first is the default
SMALL_MACHINE_CORES = 4  # up to this many cores: the 1.5B LLM; more: the 7B


@dataclass(frozen=True)
class ModelSet:
    """One set of Hub models: the embedder, the cross-encoder, and the GGUF repository and files (the
    first file is the one to load; a split model's other parts follow it)."""

    name: str
    embed: str
    reranker: str
    llm_repo: str
    llm_files: tuple[str, ...]
    why: str

    def llm_file(self) -> str:
        """The GGUF file llama.cpp loads (the first part of a split model)."""
        return self.llm_files[0]


QWEN_15B_INSTRUCT = ("Qwen/Qwen2.5-1.5B-Instruct-GGUF", ("qwen2.5-1.5b-instruct-q4_k_m.gguf",))
QWEN_7B_INSTRUCT = (
    "Qwen/Qwen2.5-7B-Instruct-GGUF",
    ("qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf", "qwen2.5-7b-instruct-q4_k_m-00002-of-00002.gguf"),
)
JAPANESE_EMBED = "cl-nagoya/ruri-v3-130m"
JAPANESE_RERANKER = "hotchpotch/japanese-reranker-xsmall-v2"


def japanese_set(cores: int) -> ModelSet:
    """The Japanese-first set for a machine with ``cores`` cores."""
    repo, files = QWEN_15B_INSTRUCT if cores <= SMALL_MACHINE_CORES else QWEN_7B_INSTRUCT
    size = "1.5B" if cores <= SMALL_MACHINE_CORES else "7B"
    return ModelSet(
        "japanese",
        JAPANESE_EMBED,
        JAPANESE_RERANKER,
        repo,
        files,
        f"Japanese-first: Ruri v3 embeds Japanese (JMTEB retrieval 81.9 against e5-small's 67.3), the "
        f"cross-encoder re-ranks Japanese (JQaRA 0.74), Qwen2.5-{size}-Instruct writes Japanese; "
        f"{size} because this machine has {cores} cores",
    )


def spec_set(embed: str, reranker: str, llm_repo: str, llm_file: str) -> ModelSet:
    """The primary spec's set (the defaults of EMBED_MODEL, RERANKER_MODEL and LLM_MODEL_PATH)."""
    return ModelSet("spec", embed, reranker, llm_repo, (llm_file,), "the primary spec's models (MODEL_SET=spec)")


def installed(repo: str, models_dir: Path) -> bool:
    """Whether ``make models`` put ``repo`` into ``models_dir`` (its folder, not empty)."""
    folder = models_dir / repo.split("/")[-1]
    return folder.is_dir() and any(folder.iterdir())


def installed_llm_files(models_dir: Path) -> tuple[str, ...]:
    """The Japanese set's GGUF files present in ``models_dir`` (the larger model first)."""
    return tuple(files[0] for _, files in (QWEN_7B_INSTRUCT, QWEN_15B_INSTRUCT) if (models_dir / files[0]).is_file())
