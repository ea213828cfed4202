"""Spark's hashes and file layout in plain Python, so that a step run without the JVM writes the rows Spark
would write, to the same files, in the same order (the local dedup path, the local tokenize path).

- `spark_string_hash`: `hash(col)` (Murmur3_x86_32, seed 42) of strings: `repartition(n, col)` sends a row to
  partition pmod(hash, n);
- `spark_xxhash64`: `xxhash64(lit(int), col)` (XXH64, seed 42) of strings: the tokenizer sample's order;
- `hash_layout`: the rows of each of `repartition(shards, "id").sortWithinPartitions("id")`'s files;
- `write_folder`: files to a side folder, row counts checked, then swapped in whole.

numpy only, vectorised over strings of equal length; the tests check each hash against Spark's own.
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.run.units import replace_dir

# ---- Murmur3_x86_32 ----------------------------------------------------------------------------

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = _rotl(k * _C1, 15) * _C2
    return _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)


def _by_length(encoded: list[bytes]):
    """(row indices, uint8 matrix) per distinct length: one vectorised pass per length."""
    by_len: dict[int, list[int]] = {}
    for i, b in enumerate(encoded):
        by_len.setdefault(len(b), []).append(i)
    for length, idx in by_len.items():
        raw = np.frombuffer(b"".join(encoded[i] for i in idx), dtype=np.uint8).reshape(len(idx), length)
        yield idx, raw


def spark_string_hash(encoded: list[bytes], seed: int = 42) -> np.ndarray:
    """Spark's `hash()` of UTF-8 strings (Murmur3_x86_32.hashUnsafeBytes: 4-byte little-endian words,
    then each remaining byte, sign-extended, as a word of its own), as int32."""
    out = np.zeros(len(encoded), dtype=np.int32)
    with np.errstate(over="ignore"):
        for idx, raw in _by_length(encoded):
            length = raw.shape[1]
            h = np.full(len(idx), seed, dtype=np.uint32)
            aligned = length - length % 4
            words = np.ascontiguousarray(raw[:, :aligned]).view("<u4").astype(np.uint32)
            for j in range(words.shape[1]):
                h = _mix(h, words[:, j])
            for j in range(aligned, length):
                h = _mix(h, raw[:, j].astype(np.int8).astype(np.int32).view(np.uint32))
            h ^= np.uint32(length)
            h ^= h >> np.uint32(16)
            h *= np.uint32(0x85EBCA6B)
            h ^= h >> np.uint32(13)
            h *= np.uint32(0xC2B2AE35)
            h ^= h >> np.uint32(16)
            out[idx] = h.view(np.int32)
    return out


def spark_partition_of(ids: list[str], n: int) -> np.ndarray:
    """The partition Spark's repartition(n, id) sends each id to: pmod(hash(id), n)."""
    return spark_string_hash([i.encode("utf-8") for i in ids]).astype(np.int64) % n


# ---- XXH64 -------------------------------------------------------------------------------------

_P1, _P2, _P3 = np.uint64(0x9E3779B185EBCA87), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9)
_P4, _P5 = np.uint64(0x85EBCA77C2B2AE63), np.uint64(0x27D4EB2F165667C5)


def _rotl64(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl64(acc + lane * _P2, 31) * _P1


def _avalanche(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    return h ^ (h >> np.uint64(32))


def _xxh64(raw: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """XXH64 of each row of `raw` (uint8, all rows one length) with its own uint64 seed."""
    n, length = raw.shape
    pos = 0
    if length >= 32:
        v = [seeds + _P1 + _P2, seeds + _P2, seeds.copy(), seeds - _P1]
        stripes = np.ascontiguousarray(raw[:, :length - length % 32]).view("<u8").astype(np.uint64)
        for s in range(0, stripes.shape[1], 4):
            v = [_round(v[k], stripes[:, s + k]) for k in range(4)]
        h = _rotl64(v[0], 1) + _rotl64(v[1], 7) + _rotl64(v[2], 12) + _rotl64(v[3], 18)
        for k in range(4):
            h = (h ^ _round(np.zeros(n, np.uint64), v[k])) * _P1 + _P4
        pos = length - length % 32
    else:
        h = seeds + _P5
    h = h + np.uint64(length)
    while pos + 8 <= length:
        lane = np.ascontiguousarray(raw[:, pos:pos + 8]).view("<u8")[:, 0].astype(np.uint64)
        h = _rotl64(h ^ _round(np.zeros(n, np.uint64), lane), 27) * _P1 + _P4
        pos += 8
    if pos + 4 <= length:
        word = np.ascontiguousarray(raw[:, pos:pos + 4]).view("<u4")[:, 0].astype(np.uint64)
        h = _rotl64(h ^ (word * _P1), 23) * _P2 + _P3
        pos += 4
    while pos < length:
        h = _rotl64(h ^ (raw[:, pos].astype(np.uint64) * _P5), 11) * _P1
        pos += 1
    return _avalanche(h)


def spark_xxhash64(first: int, strings: list[str], seed: int = 42) -> np.ndarray:
    """Spark's `xxhash64(lit(first), col)` of each string, as int64: the literal hashed first (an int as 4
    little-endian bytes, a long beyond the int range as 8), its hash the seed of the string's UTF-8 bytes."""
    width = 4 if -(1 << 31) <= first < (1 << 31) else 8
    head = np.frombuffer(int(first).to_bytes(width, "little", signed=True), dtype=np.uint8).reshape(1, width)
    with np.errstate(over="ignore"):
        start = _xxh64(head, np.array([seed], dtype=np.int64).view(np.uint64))[0]
        out = np.zeros(len(strings), dtype=np.uint64)
        for idx, raw in _by_length([s.encode("utf-8") for s in strings]):
            out[idx] = _xxh64(raw, np.full(len(idx), start, dtype=np.uint64))
    return out.view(np.int64)


# ---- the files of a hash-partitioned write -----------------------------------------------------

def hash_layout(ids: list[str], shards: int) -> tuple[list[int], list[tuple[str, int, int]]]:
    """(row order, [(file name, start, end)] in that order) of `repartition(shards, "id")
    .sortWithinPartitions("id")` written as Parquet: partition p's rows sorted by id, in
    part-<p>.zstd.parquet; a partition no row hashed to has no file; no row at all, one empty file."""
    part = spark_partition_of(ids, shards) if ids else np.zeros(0, np.int64)
    order = sorted(range(len(ids)), key=lambda i: (part[i], ids[i]))
    bounds = np.searchsorted(part[order], np.arange(shards + 1)) if order else np.zeros(shards + 1, np.int64)
    spans = [(f"part-{p:05d}.zstd.parquet", int(bounds[p]), int(bounds[p + 1]))
             for p in range(shards) if bounds[p + 1] > bounds[p]] or [("part-00000.zstd.parquet", 0, 0)]
    return order, spans


def write_folder(folder: str, files: list[tuple[str, pa.Table]]) -> None:
    """Write the files to a side folder, check their row counts, then swap it in."""
    tmp = folder.rstrip("/") + ".__writing"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name, t in files:
        pq.write_table(t, os.path.join(tmp, name), compression="zstd")
        if pq.read_metadata(os.path.join(tmp, name)).num_rows != t.num_rows:
            raise IOError(f"{folder}/{name}: the file does not hold the {t.num_rows} rows written")
    open(os.path.join(tmp, "_SUCCESS"), "w").close()
    replace_dir(tmp, folder)
