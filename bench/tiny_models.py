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
    from transformers import BertConfig, BertForSequenceClassification

    tokenizer = char_tokenizer(folder, vocab_text)
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


def char_tokenizer(folder: Path, vocab_text: str):
    """A character-level BERT tokenizer over ``vocab_text``'s characters, Latin letters and digits."""
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    chars = sorted({c for c in vocab_text if c.strip()})
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + letters
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), tokenize_chinese_chars=True)


def modernbert_config(vocab_size: int, hidden: int, layers: int, heads: int, intermediate: int, **extra):
    """A ModernBERT configuration (the architecture of Ruri v3 and japanese-reranker-*-v2)."""
    from transformers import ModernBertConfig

    return ModernBertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=8192,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        cls_token_id=2,
        sep_token_id=3,
        **extra,
    )


def build_modernbert_embedder(folder: Path, vocab_text: str, size: int, layers: int = 1, seed: int = 0) -> Path:
    """Save a random-weight ModernBERT bi-encoder with ``size``-dimensional mean-pooled vectors as a
    sentence-transformers folder (the loading code of ``cl-nagoya/ruri-v3-*``)."""
    import torch
    from sentence_transformers import SentenceTransformer, models

    raw = folder / "transformer"
    tokenizer = char_tokenizer(raw, vocab_text)
    torch.manual_seed(seed)
    heads = max(1, size // 64)
    from transformers import ModernBertModel

    ModernBertModel(modernbert_config(len(tokenizer), size, layers, heads, size * 2)).save_pretrained(raw)
    tokenizer.save_pretrained(raw)
    transformer = models.Transformer(str(raw), max_seq_length=512)
    SentenceTransformer(modules=[transformer, models.Pooling(size, "mean")]).save(str(folder))
    return folder


def build_modernbert_cross_encoder(folder: Path, vocab_text: str, hidden: int = 64, layers: int = 1, seed: int = 0):
    """Save a random-weight ModernBERT cross-encoder (1 label; the architecture of
    ``hotchpotch/japanese-reranker-xsmall-v2``) with a character tokenizer to ``folder``."""
    import torch
    from transformers import ModernBertForSequenceClassification

    tokenizer = char_tokenizer(folder, vocab_text)
    torch.manual_seed(seed)
    config = modernbert_config(len(tokenizer), hidden, layers, max(1, hidden // 64), hidden * 2, num_labels=1)
    ModernBertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_llm(path: Path, tokenizer_gguf: Path, dim: int = 64, layers: int = 2, seed: int = 0) -> Path:
    """Write a llama-architecture GGUF with seeded random weights (``layers`` blocks of width ``dim``)
    and ``tokenizer_gguf``'s tokenizer, chat template and context length to ``path``.

    llama.cpp loads and runs it as any GGUF: the same tokens, prompts, context limit and sampling, at a
    small fraction of the real model's cost. Its words are random: tests of paths use it, never of answers.
    """
    import numpy as np
    from gguf import GGUFReader, GGUFValueType, GGUFWriter, LlamaFileType

    source = GGUFReader(tokenizer_gguf)
    arch = source.fields["general.architecture"].contents()
    vocab = len(source.fields["tokenizer.ggml.tokens"].data)
    heads = max(1, dim // 16)
    writer = GGUFWriter(str(path), "llama")
    writer.add_name(f"tiny random llama ({layers} layers, width {dim})")
    writer.add_context_length(source.fields[f"{arch}.context_length"].contents())
    writer.add_embedding_length(dim)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(dim * 2)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(dim // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_file_type(LlamaFileType.MOSTLY_F16)
    for key, field in source.fields.items():  # the tokenizer, its special tokens and the chat template
        if key.startswith("tokenizer."):
            kind = field.types[0]
            sub = field.types[1] if kind == GGUFValueType.ARRAY else None
            writer.add_key_value(key, field.contents(), kind, sub_type=sub)
    rng = np.random.default_rng(seed)

    def weight(*shape: int, scale: float) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float16)

    ones = np.ones(dim, dtype=np.float32)
    writer.add_tensor("token_embd.weight", weight(vocab, dim, scale=1.0))
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", weight(vocab, dim, scale=dim**-0.5 * 3))
    for i in range(layers):
        block = f"blk.{i}"
        writer.add_tensor(f"{block}.attn_norm.weight", ones)
        writer.add_tensor(f"{block}.ffn_norm.weight", ones)
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{block}.{name}.weight", weight(dim, dim, scale=dim**-0.5))
        writer.add_tensor(f"{block}.ffn_gate.weight", weight(dim * 2, dim, scale=dim**-0.5))
        writer.add_tensor(f"{block}.ffn_up.weight", weight(dim * 2, dim, scale=dim**-0.5))
        writer.add_tensor(f"{block}.ffn_down.weight", weight(dim, dim * 2, scale=(dim * 2) ** -0.5))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
