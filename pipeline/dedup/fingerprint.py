"""One pass over the text for all of dedup: every document's exact key hash, its shingle-hash set and
its LSH band keys, computed batch by batch with numpy (Spark's mapInArrow). Later steps work on these
compact columns and never read the text again:

    (id, scope, quality, text) ──▶ (id, scope, quality, exact_hash, shingles, bands)
        exact_hash  sha256 of the normalized text (exact dedup)
        shingles    the sorted 64-bit hashes of the word n-grams, as little-endian bytes (verification)
        bands       one int64 key per LSH band (candidates); empty for a text without words

The record-level arithmetic is in `minhash.py`; this module is the Arrow glue.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

from pipeline.dedup.exact import exact_hash_of_key, key_words
from pipeline.dedup.minhash import band_keys, minhash_signatures, shingle_hashes

OUT_COLUMNS = [("exact_hash", pa.string()), ("shingles", pa.binary()), ("bands", pa.list_(pa.int64()))]
SPARK_COLUMNS = "exact_hash string, shingles binary, bands array<bigint>"


def fingerprint_batch(texts: list, ngram: int | None, num_perm: int = 0, bands: int = 0, rows: int = 0,
                      seed: int = 0) -> list[pa.Array]:
    """The three fingerprint columns for a batch of texts (None counts as empty). With ngram None
    only exact_hash is computed (near dedup off): shingles and bands are null."""
    words = [key_words(t) for t in texts]
    exact = pa.array([exact_hash_of_key(" ".join(w)) for w in words], pa.string())
    n = len(texts)
    if ngram is None:
        return [exact, pa.nulls(n, pa.binary()), pa.nulls(n, pa.list_(pa.int64()))]
    values, offsets = shingle_hashes(words, ngram)
    sigs = minhash_signatures(values, offsets, num_perm, seed)
    keys = band_keys(sigs, bands, rows)
    has = np.diff(offsets) > 0  # a text without words has no shingles, so no bands: never a candidate
    shingles = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer((offsets * 8).astype(np.int32)),
                                                       pa.py_buffer(values.astype("<u8").tobytes())])
    band_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.where(has, bands, 0), out=band_offsets[1:])
    band_values = pa.array(keys[has].reshape(-1), pa.int64())
    return [exact, shingles, pa.ListArray.from_arrays(pa.array(band_offsets), band_values)]


def fingerprint_partition(ngram: int | None, num_perm: int = 0, bands: int = 0, rows: int = 0, seed: int = 0):
    """mapInArrow function: batches with a `text` column in; the same batches plus exact_hash,
    shingles and bands out."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            extra = fingerprint_batch(batch.column("text").to_pylist(), ngram, num_perm, bands, rows, seed)
            yield pa.RecordBatch.from_arrays(batch.columns + extra,
                                             names=batch.schema.names + [name for name, _ in OUT_COLUMNS])
    return run


def hash_sets(arr: pa.Array) -> list[np.ndarray]:
    """The uint64 hash sets of a `shingles` column (binary or large_binary), without copying."""
    if len(arr) == 0:
        return []
    _, off_buf, data_buf = arr.buffers()
    width = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    offsets = np.frombuffer(off_buf, dtype=width)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return [data[offsets[i]:offsets[i + 1]].view("<u8") for i in range(len(arr))]
