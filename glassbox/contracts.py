"""The contracts between the halves of Glassbox, defined once.

Checksums of files (token shards, tokenizers, exports), the content hash of a mixture manifest, the special
token ids every tokenizer of the project carries, and the parameter count of the Llama shape. The corpus
pipeline writes these, the trainer checks them, benches and tests build fixtures with them; a second
definition anywhere would let the two sides drift apart (a bench once wrote pad and unk swapped). Standard
library only.
"""
from __future__ import annotations

import hashlib
import json
import os

# Special ids of every sentencepiece model the project trains (mixture/tokenize.py), in the manifest's
# ``tokenizer`` record; the end-of-document piece is the eos piece.
UNK_ID, BOS_ID, EOS_ID, PAD_ID = 0, 1, 2, 3
EOD_PIECE = "<eod>"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike, chunk: int = 8 << 20) -> str:
    """Hex sha256 of a file, read in chunks (shards and checkpoints may be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def manifest_content_hash(manifest: dict) -> str:
    """sha256 of the manifest's canonical JSON (sorted keys, no spaces) without its own ``content_hash``: the
    identity of a mixture, independent of how the file is indented."""
    body = {k: v for k, v in manifest.items() if k != "content_hash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def padded_vocab(vocab_size: int, multiple: int = 1) -> int:
    """Embedding and head rows: the vocabulary rounded up to a multiple (the extra rows are masked)."""
    return -(-vocab_size // max(1, multiple)) * max(1, multiple)


def llama_block_params(*, d_model: int, n_heads: int, n_kv_heads: int | None, ffn_hidden: int) -> int:
    """One transformer block of the trainer's Llama shape: q and o (d x d), k and v (d x kv_heads * head_dim),
    SwiGLU gate, up and down (3 d f), two RMSNorm weights."""
    hd = d_model // n_heads
    kv = n_kv_heads or n_heads
    return d_model * (n_heads * hd) * 2 + d_model * (kv * hd) * 2 + 3 * d_model * ffn_hidden + 2 * d_model


def llama_param_count(*, d_model: int, n_layers: int, n_heads: int, n_kv_heads: int | None, ffn_hidden: int,
                      vocab_size: int, vocab_multiple: int = 1, tied: bool = False,
                      embeddings: bool = True) -> int:
    """Parameters of the whole model: the blocks, a final norm, input and output embeddings of the padded
    vocabulary (one matrix when tied). ``embeddings=False`` leaves the input embedding out (what counts in
    FLOPs: the output head is a matmul, the input lookup is not)."""
    block = llama_block_params(d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, ffn_hidden=ffn_hidden)
    rows = padded_vocab(vocab_size, vocab_multiple) * d_model
    emb = (1 if tied else 2) * rows if embeddings else rows
    return n_layers * block + d_model + emb


# --- metrics.jsonl: what a row records -------------------------------------------------------------------
# The trainer writes `kind: "train"` and `kind: "val"` rows (train/loop/metrics.py); other scripts write rows
# without a kind. The one rule every reader applies: the run record (train/record/load.py), re-weighting
# (pipeline/mix/reweight.py), the trainer's own reader and the held-out check (train/loop/metrics.py,
# train/loop/heldout_loss.py).

def _number(v) -> bool:
    """A JSON number, NaN and infinities included (a diverged run's loss is still its loss)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def metrics_row_kinds(row: dict) -> tuple[str, ...]:
    """("train",) or ("val",) for a row with that `kind` (any other kind: itself); for a row without one,
    "val" when it holds a number in val_loss or val_loss_<source>, "train" when it holds one in loss (both
    when it holds both, as a script that logs one row per step writes them), else ("train",)."""
    kind = row.get("kind")
    if isinstance(kind, str):
        return (kind,)
    val = _number(row.get("val_loss")) or any(k.startswith("val_loss_") and _number(v) for k, v in row.items())
    train = _number(row.get("loss"))
    return ("train", "val") if train and val else ("val",) if val else ("train",)
