"""One pass over the text for all of dedup: every document's exact key hash, its shingle-hash set and
its LSH band keys, computed batch by batch with numpy (Spark's mapInArrow). Later steps work on these
compact columns and never read the text again:

    (id, scope, quality, text) ──▶ (id, scope, quality, exact_hash, shingles, bands)
        exact_hash  sha256 of the normalized text (exact dedup)
        shingles    the sorted 64-bit hashes of the unit n-grams (words; characters of unspaced scripts),
                    as little-endian bytes (verification)
        bands       one int64 key per LSH band (candidates); empty for a text without words

The record-level arithmetic is in `minhash.py`; this module is the Arrow glue.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa

from pipeline.dedup.exact import exact_hash, exact_hash_of_key, key_words
from pipeline.dedup.minhash import band_keys, minhash_signatures, shingle_hashes
from pipeline.clean.words import unit_ngram

SKETCH_COLUMNS = ("_scope", "_q", "exact_hash", "shingles", "bands")  # what the dedup paths add before comparing
OUT_COLUMNS = [("exact_hash", pa.string()), ("shingles", pa.binary()), ("bands", pa.list_(pa.int64()))]
SPARK_COLUMNS = "exact_hash string, shingles binary, bands array<bigint>"


@dataclass
class Sketches:
    """A batch's sketches as arrays: document i's shingle-hash set is
    values[offsets[i]:offsets[i + 1]] (sorted, no repeats), its band keys keys[i] (meaningful only
    where has_words[i])."""
    exact: list[str]
    values: np.ndarray      # uint64
    offsets: np.ndarray     # int64, len(exact) + 1
    keys: np.ndarray        # (documents, bands) int64
    has_words: np.ndarray   # bool


def sketch_arrays(texts: list, ngram: int, num_perm: int, bands: int, rows: int, seed: int,
                       char_ngram: int | None = None) -> Sketches:
    """Exact hashes, shingle-hash sets and band keys of a batch of texts (None counts as empty). A text
    written mostly in a script without spaces is shingled in `char_ngram`-character n-grams."""
    words = [key_words(t) for t in texts]
    keys = [" ".join(w) for w in words]
    exact = [exact_hash_of_key(k) for k in keys]
    # an ASCII text has no unit of an unspaced script: word n-grams, without counting its units
    sizes = ngram if char_ngram is None else [ngram if k.isascii() else unit_ngram(w, ngram, char_ngram)
                                              for k, w in zip(keys, words)]
    values, offsets = shingle_hashes(words, sizes)
    keys = band_keys(minhash_signatures(values, offsets, num_perm, seed), bands, rows)
    # a text without words has no shingles, so no bands: never a candidate
    return Sketches(exact, values, offsets, keys, np.diff(offsets) > 0)


def sketch_batch(texts: list, ngram: int | None, num_perm: int = 0, bands: int = 0, rows: int = 0,
                      seed: int = 0, char_ngram: int | None = None) -> list[pa.Array]:
    """The three sketch columns for a batch of texts (None counts as empty). With ngram None
    only exact_hash is computed (near dedup off): shingles and bands are null."""
    n = len(texts)
    if ngram is None:
        return [pa.array([exact_hash(t) for t in texts], pa.string()), pa.nulls(n, pa.binary()), pa.nulls(n, pa.list_(pa.int64()))]
    fp = sketch_arrays(texts, ngram, num_perm, bands, rows, seed, char_ngram)
    shingles = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer((fp.offsets * 8).astype(np.int32)),
                                                       pa.py_buffer(fp.values.astype("<u8").tobytes())])
    band_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.where(fp.has_words, bands, 0), out=band_offsets[1:])
    band_values = pa.array(fp.keys[fp.has_words].reshape(-1), pa.int64())
    return [pa.array(fp.exact, pa.string()), shingles, pa.ListArray.from_arrays(pa.array(band_offsets), band_values)]


def sketch_partition(ngram: int | None, num_perm: int = 0, bands: int = 0, rows: int = 0, seed: int = 0,
                          char_ngram: int | None = None):
    """mapInArrow function: batches with a `text` column in; the same batches plus exact_hash,
    shingles and bands out."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            extra = sketch_batch(batch.column("text").to_pylist(), ngram, num_perm, bands, rows, seed,
                                      char_ngram)
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
