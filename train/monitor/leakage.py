"""Leakage check before training: held-out validation documents whose tokens also occur in training.

A document's fingerprint is sha256 of its token ids (end-of-document id included, as little-endian uint32),
first 16 bytes. Every held-out document of every validation source is compared with every training
document of every source (the manifest's documents minus the held-out ones): an exact duplicate that
survived dedup, or the same text under two sources, puts validation text into training and makes
``val_loss`` optimistic. Near duplicates are the dedup stage's business, not this check's.

Document hashes are cached per shard beside its token cache (``<cache>/<sha256>.dochash.npy``, keyed by the
shard's content like the cache itself), so the corpus is hashed once, not every run.

The result goes to ``<run>/leakage.json``: counts overall and per source, and a few examples by id.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from train.data.sample_index import DataOrder

EXAMPLES = 5


def shard_hashes(order: DataOrder, source: int, shard: int) -> np.ndarray:
    """(documents, 2) uint64 fingerprints of one shard's documents, cached beside its token cache."""
    stream = order.streams[source]
    sha = stream.src.shards[shard].sha256
    cache = order.cache
    path = Path(cache.dir) / f"{sha}.dochash.npy"
    if path.is_file():
        return np.load(path)
    tokens, offsets = cache.open(sha)
    n = len(offsets) - 1
    out = np.empty((n, 16), np.uint8)
    for i in range(n):
        doc = np.ascontiguousarray(tokens[int(offsets[i]):int(offsets[i + 1])], dtype="<u4")
        out[i] = np.frombuffer(hashlib.sha256(doc.tobytes()).digest()[:16], np.uint8)
    arr = out.view("<u8").reshape(n, 2)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npy")
    np.save(tmp, arr)
    os.replace(tmp, path)
    return arr


def source_hashes(order: DataOrder, source: int) -> np.ndarray:
    """Hashes of every document of a source, indexed like ``SourceStream.doc_lens``."""
    stream = order.streams[source]
    parts = [shard_hashes(order, source, k) for k in range(len(stream.src.shards))]
    return np.concatenate(parts) if parts else np.zeros((0, 2), np.uint64)


def _doc_id(order: DataOrder, source: int, doc: int) -> str:
    return order.document_id(order.streams[source].segment_info([(doc, 0, 0)])[0])


def check_leakage(order: DataOrder) -> dict:
    hashes = [source_hashes(order, s) for s in range(len(order.streams))]
    val: dict[tuple[int, int], list[tuple[int, int]]] = {}     # fingerprint -> held-out (source, doc)
    for s in order.val_sources:
        for doc in order.streams[s].val_docs:
            val.setdefault(tuple(int(x) for x in hashes[s][int(doc)]), []).append((s, int(doc)))
    val_hi = np.fromiter((k[0] for k in val), dtype=np.uint64, count=len(val))
    matched: dict[tuple[int, int], list[tuple[int, int]]] = {}  # fingerprint -> training (source, doc)
    n_train = 0
    for s, stream in enumerate(order.streams):
        train = stream.train_docs
        n_train += len(train)
        h = hashes[s][train]
        for i in np.flatnonzero(np.isin(h[:, 0], val_hi)):       # candidates by the first 8 bytes
            key = (int(h[i, 0]), int(h[i, 1]))
            if key in val:
                matched.setdefault(key, []).append((s, int(train[i])))
    by_source = {}
    for s in order.val_sources:
        held = order.streams[s].val_docs
        leaked = sum(1 for key, docs in val.items() if key in matched for (vs, _) in docs if vs == s)
        by_source[order.names[s]] = {"val_documents": int(len(held)), "val_documents_in_train": leaked}
    examples = []
    for key, train_docs in list(matched.items())[:EXAMPLES]:
        vs, vd = val[key][0]
        ts, td = train_docs[0]
        examples.append({"val": {"source": order.names[vs], "id": _doc_id(order, vs, vd)},
                         "train": {"source": order.names[ts], "id": _doc_id(order, ts, td)},
                         "train_copies": len(train_docs)})
    n_val = sum(len(v) for v in val.values())
    return {
        "method": "sha256 of each document's token ids (exact duplicates only)",
        "val_documents": n_val, "train_documents": int(n_train),
        "val_documents_in_train": sum(len(val[k]) for k in matched),
        "train_documents_matching": sum(len(v) for v in matched.values()),
        "by_source": by_source, "examples": examples,
    }


def summary_line(result: dict) -> str:
    k, n = result["val_documents_in_train"], result["val_documents"]
    if not k:
        return f"leakage check: none of the {n} held-out validation documents occurs in training (leakage.json)"
    return (f"leakage check: {k} of {n} held-out validation documents also occur in training "
            f"({result['train_documents_matching']} training copies, exact token match); val_loss is "
            "optimistic. Examples and counts per source in leakage.json")
