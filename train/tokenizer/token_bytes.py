"""Bits per byte: the UTF-8 bytes each token id stands for, so that a loss compares across sources, languages and
tokenizers.

A per-token loss (nats per token) depends on how many tokens the tokenizer spends on the text: a language or a
vocabulary that needs more tokens per byte gets a lower loss per token for the same text. Bits per byte divides
that out:

    bpb = sum of nats over the predicted tokens / (ln 2 * sum of the UTF-8 bytes those tokens decode to)

Each id's bytes (``token_bytes``), as sentencepiece pieces decode:
- a normal or user-defined piece: the UTF-8 length of its text, the whitespace mark U+2581 counting as the one
  space it decodes to (so a document's dummy-prefix space counts one byte);
- a byte-fallback piece ``<0xAB>``: 1 byte;
- the end-of-document id, control pieces (bos, pad) and unknown: 0 bytes (they decode to no text of the
  document; with byte fallback the unknown id never occurs).
A sequence's bytes are the sum over its predicted ids, looked up in that table.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from train.tokenizer.sp_model import BYTE, CONTROL, UNKNOWN, read_sp_model

WHITESPACE_MARK = "\u2581"
LN2 = math.log(2.0)


def piece_bytes(piece: str, kind: int) -> int:
    """UTF-8 bytes one sentencepiece piece decodes to (see the module doc)."""
    if kind == BYTE:
        return 1
    if kind in (CONTROL, UNKNOWN):
        return 0
    return len(piece.replace(WHITESPACE_MARK, " ").encode("utf-8"))


def token_bytes(model_path: str | Path, eos_id: int | None = None, vocab_size: int | None = None) -> np.ndarray:
    """int64 array: the bytes of every id of a sentencepiece model (the end-of-document id 0). ``vocab_size``
    pads the table with zeros up to a model's (padded) vocabulary."""
    m = read_sp_model(model_path)
    table = np.array([piece_bytes(p, t) for p, _, t in m.pieces], dtype=np.int64)
    if eos_id is not None and 0 <= eos_id < len(table):
        table[eos_id] = 0
    if vocab_size is not None and vocab_size > len(table):
        table = np.concatenate([table, np.zeros(vocab_size - len(table), np.int64)])
    return table


def bytes_of(table: np.ndarray, ids) -> int:
    """Bytes of a sequence (or an array) of ids."""
    return int(table[np.asarray(ids, dtype=np.int64)].sum())


def bits_per_byte(nats: float, n_bytes: int) -> float:
    """Sum of nats over sum of bytes, in bits per byte (NaN when there are no bytes)."""
    return nats / (LN2 * n_bytes) if n_bytes > 0 else float("nan")
