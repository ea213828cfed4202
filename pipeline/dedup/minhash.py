"""MinHash signatures, LSH band keys and exact Jaccard over word n-gram shingles (plain Python, no Spark).

The same `shingles` feed the signatures and the exact verification, so "Jaccard >= threshold" means
one thing everywhere: on the normalized text the exact-dedup key sees (`exact_key_text`).
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Sequence

import numpy as np
from datasketch import MinHash

from pipeline.dedup.exact import exact_key_text


def shingles(text: str, n: int) -> set[bytes]:
    """Word n-grams of the normalized text, UTF-8 encoded. A text of fewer than n words (but at least
    one) is one shingle of the whole text; a text with no words has no shingles."""
    if n < 1:
        raise ValueError(f"ngram must be >= 1, got {n}")
    words = exact_key_text(text).split()
    if not words:
        return set()
    if len(words) < n:
        return {" ".join(words).encode("utf-8")}
    return {" ".join(words[i:i + n]).encode("utf-8") for i in range(len(words) - n + 1)}


def signatures_of_shingles(shingle_sets: Sequence[Iterable[bytes]], num_perm: int, seed: int) -> np.ndarray:
    """(len, num_perm) uint64 MinHash signatures, via datasketch's bulk API (one MinHash template,
    each set hashed and min-reduced by numpy). An empty set gives an all-max row (never banded)."""
    out = np.empty((len(shingle_sets), num_perm), dtype=np.uint64)
    if len(shingle_sets) == 0:
        return out
    for i, m in enumerate(MinHash.generator((list(s) for s in shingle_sets), num_perm=num_perm, seed=seed)):
        out[i] = m.hashvalues
    return out


def signatures(texts: Sequence[str], num_perm: int, seed: int, ngram: int = 5) -> np.ndarray:
    """(len(texts), num_perm) uint64 MinHash signatures of the texts' word `ngram`-shingles."""
    return signatures_of_shingles([shingles(t, ngram) for t in texts], num_perm, seed)


def band_keys(sig_row: np.ndarray, bands: int, rows: int) -> list[str]:
    """One key per LSH band: the band index and 16 hex chars of sha1 of the band's bytes. Two
    documents share a key for band b iff (up to 64-bit collisions) their b-th bands are equal."""
    row = np.ascontiguousarray(sig_row, dtype=np.uint64)
    if row.shape[0] < bands * rows:
        raise ValueError(f"signature has {row.shape[0]} values, bands*rows needs {bands * rows}")
    return [f"{b:03d}:" + hashlib.sha1(row[b * rows:(b + 1) * rows].tobytes()).hexdigest()[:16]
            for b in range(bands)]


def jaccard(a: set, b: set) -> float:
    """|a ∩ b| / |a ∪ b|; two empty sets have similarity 0 (nothing to call a duplicate)."""
    if not a and not b:
        return 0.0
    inter = len(a & b) if len(a) <= len(b) else len(b & a)
    return inter / (len(a) + len(b) - inter)


def containment(a: set, b: set) -> float:
    """|a ∩ b| / min(|a|, |b|): how much of the smaller text the larger one holds. An excerpt pasted
    out of a longer page scores near 1 here while its Jaccard is only its share of the page."""
    if not a or not b:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & large) / len(small)


MEASURES = {"jaccard": jaccard, "containment": containment}
