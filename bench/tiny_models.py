"""A tiny cross-encoder built locally (no download): a 2-layer BERT with seeded random weights.

There is no offline cross-encoder on PyPI; tests and ``make bench`` use this one to run the
real loading and scoring code (HuggingFaceCrossEncoder → sentence-transformers CrossEncoder).
Its scores are meaningless; its cost per pair is far below the real model's.
"""

from __future__ import annotations

from pathlib import Path


def build_tiny_cross_encoder(folder: Path, vocab_text: str, seed: int = 0) -> Path:
    """Save a small BertForSequenceClassification (1 label) and a char-level tokenizer to ``folder``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    chars = sorted({c for c in vocab_text if c.strip()})
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + letters
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), tokenize_chinese_chars=True)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
        max_position_embeddings=512,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
