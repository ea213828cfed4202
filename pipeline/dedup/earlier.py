"""A new crawl against corpora already built (`dedup.against`), the record-level half: the decisions the
no-Spark path makes with the rows of the old indexes (pipeline/dedup/index.py), and the index rows it
writes for its own kept documents. The distributed path (pipeline/dedup/against.py) decides the same.

In the order a full run would decide them, the old corpus ranking first:
- a document whose id an old corpus holds is that very record read again (`repeated_record`,
  `duplicate_of` = the id);
- with exact dedup on, a document whose exact hash an old corpus holds is its `exact_duplicate`
  (`duplicate_of` = the smallest old id with that hash);
- near duplicates: the old documents that share a band key with a new one join the LSH buckets, ranked
  above every new one (`OLD_RANK`), never compared with each other; verification and the keep rule are the
  full run's (`near_decisions`, `keep_best_first`), so a new document near an old one is removed for it.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.dedup.index import index_rows
from pipeline.dedup.sketch import Sketches, hash_sets
from pipeline.rows import EXACT_DUPLICATE, REPEATED_RECORD


def earlier_marks(ids: list[str], hashes: list[str], old: pa.Table, wheres: list[str], exact: bool,
                  reason: list, detail: list, duplicate_of: list) -> None:
    """Mark (in place) this run's documents that repeat an old one by id, or by exact hash when `exact`.
    `old`: the matching index rows (`read_matching`), `_index` naming their index in `wheres`."""
    where = [wheres[k] for k in old.column("_index").to_pylist()]
    old_ids = dict(zip(old.column("id").to_pylist(), where))
    first_of: dict[str, tuple[str, str]] = {}
    for i, h, w in zip(old.column("id").to_pylist(), old.column("exact_hash").to_pylist(), where):
        if h not in first_of or i < first_of[h][0]:
            first_of[h] = (i, w)
    for r, (i, h) in enumerate(zip(ids, hashes)):
        if reason[r] is not None:
            continue
        if i in old_ids:
            reason[r], duplicate_of[r], detail[r] = REPEATED_RECORD, i, f"the same record is in {old_ids[i]}"
        elif exact and h in first_of:
            first, w = first_of[h]
            reason[r], duplicate_of[r], detail[r] = EXACT_DUPLICATE, first, f"duplicate of {first} in {w}"


def against_info(indexes) -> dict:
    """What the stage's stats say about the earlier corpora (the same on both paths)."""
    return {"indexes": [r.where for r in indexes], "old_documents": sum(r.manifest["documents"] for r in indexes)}


def old_sketches(old: pa.Table, bands: int) -> Sketches:
    """The old rows' stored sketches as `Sketches`: nothing about them is computed again."""
    sets = hash_sets(old.column("shingles").combine_chunks())
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    values = np.concatenate(sets).astype(np.uint64) if sets else np.zeros(0, np.uint64)
    keys = np.zeros((len(sets), bands), dtype=np.int64)
    for r, b in enumerate(old.column("bands").to_pylist()):
        if b:
            keys[r] = b
    return Sketches(old.column("exact_hash").to_pylist(), values, offsets, keys, sizes > 0)


def kept_index_rows(rows: list[int], ids: list[str], sources: list[str], hashes: list[str],
                    fp: Sketches | None) -> pa.Table:
    """Index rows (pipeline/dedup/index.py SCHEMA) for the given rows of a run's documents."""
    take = lambda xs: [xs[r] for r in rows]  # noqa: E731
    if fp is None:  # near dedup off: exact keys only
        return index_rows(take(ids), take(sources), take(hashes), None, None)
    bands = [fp.keys[r].tolist() if fp.has_words[r] else [] for r in rows]
    shingles = [fp.values[fp.offsets[r]:fp.offsets[r + 1]].astype("<u8").tobytes() for r in rows]
    return index_rows(take(ids), take(sources), take(hashes), bands, shingles)
