"""A tiny exported model for serving and export tests: a Hugging Face ``LlamaForCausalLM`` directory.

A real sentencepiece BPE tokenizer trained on the bundled WikiText-2 validation text with the project's own
settings (pipeline/tokenize/tokenizer.py: identity normalisation, byte fallback, unk 0 / bos 1 / eos = <eod> 2 / pad 3),
wrapped into HF tokenizer files by ``train.export.hf_tokenizer.save_hf_tokenizer``, and a randomly initialised
2-layer Llama with that vocabulary, saved with ``save_pretrained``. Seconds to build on a CPU.
"""
from __future__ import annotations

import io
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"


def text_lines(limit: int | None = None) -> list[str]:
    lines = [line for line in TEXT.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[:limit] if limit else lines


def train_sp_model(path: Path, vocab_size: int = 800, model_type: str = "bpe", n_lines: int = 2000) -> Path:
    """A sentencepiece model trained like the project's tokenizer job trains one, written to ``path``."""
    import sentencepiece as spm

    from glassbox.schema import validate
    from pipeline.tokenize.settings import TokenizeConfig
    from pipeline.tokenize.tokenizer import trainer_args

    cfg = validate(TokenizeConfig(vocab_size=vocab_size, model_type=model_type, threads=1))
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(text_lines(n_lines)), model_writer=buf,
                                   minloglevel=2, **trainer_args(cfg))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return path


def build_tiny_llama(out_dir: Path, *, vocab_size: int = 800, n_layers: int = 2, hidden: int = 64,
                     n_heads: int = 4, n_kv_heads: int = 2, max_position: int = 128, seed: int = 0) -> Path:
    """Write a loadable HF model directory (config.json, model.safetensors, tokenizer files) to ``out_dir``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from train.export.hf_tokenizer import save_hf_tokenizer

    out_dir = Path(out_dir)
    sp_path = train_sp_model(out_dir.parent / f"{out_dir.name}-sp" / "tokenizer.model", vocab_size)
    save_hf_tokenizer(sp_path, out_dir, model_max_length=max_position)

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=4 * hidden,
                         num_hidden_layers=n_layers, num_attention_heads=n_heads, num_key_value_heads=n_kv_heads,
                         max_position_embeddings=max_position, bos_token_id=1, eos_token_id=2, pad_token_id=3,
                         tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    model.save_pretrained(out_dir)
    return out_dir


_SHARED: dict[str, Path] = {}


def shared_tiny_llama() -> Path:
    """``build_tiny_llama`` once per test process (the serving and batch tests share it); removed at exit."""
    if "model" not in _SHARED:
        import atexit
        import shutil
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="glassbox-tiny-llama-"))
        atexit.register(shutil.rmtree, root, True)
        _SHARED["model"] = build_tiny_llama(root / "model")
    return _SHARED["model"]
