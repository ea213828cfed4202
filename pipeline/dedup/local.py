"""The whole dedup stage (exact, then near duplicates) in one Python process, for an input small
enough to hold: the decisions of the distributed path (jobs/dedup.py) from the same record-level
functions, without its dozens of Spark jobs.

    scored/*.parquet ──read once──▶ one Arrow table
        ──sketch_arrays per 512 rows──▶ exact hashes, shingle-hash sets, LSH band keys (numpy)
        ──against──▶ the rows of earlier corpora's indexes it can meet, their sketches as stored
                     (pipeline/dedup/index.py, earlier.py): repeats of their records and exact copies
        ──exact──▶ per exact hash, the smallest id survives
        ──buckets──▶ (scope, band key) groups by one sort: all pairs of a group of up to
                     PAIRS_BUCKET, a star to the smallest id up to max_bucket, bigger ones counted
                     (pairs of two old documents left out)
        ──verify──▶ exact Jaccard (or containment) of the two hash sets
        ──keep_best_first──▶ components and survivors (old documents first: OLD_RANK)
        ──write──▶ dedup/ in `shards` files laid out as Spark's repartition(shards, "id") lays them
                   out, sorted by id; rejected/stage=dedup/; dedup_index/ for the kept documents

Its memory is the input table plus 8 bytes per word (and the old rows it can meet; the indexes are read a
file at a time): the caller uses it only below `dedup.local_max_bytes` of new text, however big the
earlier corpora. Plain Python, pyarrow and numpy (no Spark job): jobs/dedup.py runs it
in one Spark task, so on a cluster it runs on an executor, not in the driver.
"""
from __future__ import annotations

import itertools
import multiprocessing
import shutil
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.dedup.clusters import OLD_RANK, PAIRS_BUCKET, keep_best_first
from pipeline.dedup.earlier import against_info, earlier_marks, kept_index_rows, old_sketches
from pipeline.dedup.exact import exact_hash
from pipeline.dedup.index import IndexRef, finish, read_matching, write_parts, writing_dir
from pipeline.dedup.sketch import SKETCH_COLUMNS, Sketches, sketch_arrays
from pipeline.dedup.minhash import MEASURES
from pipeline.rows import BOOKKEEPING_COLUMNS, EXACT_DUPLICATE, KEPT, NEAR_DUPLICATE, REJECTED, quality_column
from pipeline.run.repeats import check_unique, repeated_values
from pipeline.run.spark_layout import hash_layout, write_folder
from pipeline.run.units import text_bytes

BATCH = 512                   # rows per sketch call, as the distributed path's Arrow batches
OURS = ("minhash_cluster",) + SKETCH_COLUMNS  # ours: a rerun on an already deduplicated table recomputes them


# ---- the decisions ------------------------------------------------------------------------------

def exact_survivors(ids: list[str], hashes: list[str]) -> dict[int, str]:
    """Row -> the id it is an exact duplicate of (the smallest id with its hash)."""
    first: dict[str, str] = {}
    for i, h in zip(ids, hashes):
        if h not in first or i < first[h]:
            first[h] = i
    return {r: first[h] for r, (i, h) in enumerate(zip(ids, hashes)) if first[h] != i}


def candidate_pairs(rows: np.ndarray, id_rank: np.ndarray, scope: np.ndarray, keys: np.ndarray,
                    max_bucket: int) -> tuple[set[tuple[int, int]], int]:
    """LSH candidates among `rows`: ((row of the smaller id, row of the larger id) pairs, buckets
    over max_bucket). A bucket is the rows sharing a band key in one scope; one sort finds them."""
    bands = keys.shape[1]
    row = np.repeat(rows, bands)
    key = keys[rows].reshape(-1)
    sc = scope[row]
    order = np.lexsort((id_rank[row], key, sc))  # by scope, key, then id: a bucket's head comes first
    row, key, sc = row[order], key[order], sc[order]
    starts = np.flatnonzero(np.concatenate(([True], (key[1:] != key[:-1]) | (sc[1:] != sc[:-1]))))
    sizes = np.diff(np.append(starts, len(row)))
    pairs: set[tuple[int, int]] = set()
    capped = 0
    for start, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist()):
        members = row[start:start + size].tolist()
        if size <= PAIRS_BUCKET:
            pairs.update(itertools.combinations(members, 2))
        elif size <= max_bucket:
            pairs.update((members[0], m) for m in members[1:])
        else:
            capped += 1
    return pairs, capped


def near_decisions(ids: list[str], quality: list, live: np.ndarray, scope: np.ndarray, fp: Sketches, cfg,
                   fixed_from: int | None = None) -> tuple[dict[str, tuple[str, str | None]], dict]:
    """(id -> (minhash_cluster, duplicate_of) for every document of a verified component, info).
    Rows from `fixed_from` on are documents of earlier corpora (quality OLD_RANK): never compared with each
    other, only with this run's."""
    info = {"candidate_pairs": 0, "verified_pairs": 0, "components": 0, "capped_buckets": 0, "removed": 0,
            "cc_iterations": 0}
    id_rank = np.empty(len(ids), dtype=np.int64)
    id_rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
    rows = np.flatnonzero(live & fp.has_words)
    pairs, info["capped_buckets"] = candidate_pairs(rows, id_rank, scope, fp.keys, cfg.max_bucket)
    if fixed_from is not None:
        pairs = {(a, b) for a, b in pairs if a < fixed_from or b < fixed_from}
    info["candidate_pairs"] = len(pairs)
    if cfg.verify:
        similarity, off, values = MEASURES[cfg.measure], fp.offsets, fp.values
        pairs = {(a, b) for a, b in pairs
                 if similarity(values[off[a]:off[a + 1]], values[off[b]:off[b + 1]]) >= cfg.threshold}
    edges = [(ids[a], ids[b]) for a, b in sorted(pairs)]
    decided = keep_best_first(edges, {ids[r]: quality[r] for pair in pairs for r in pair})
    info["verified_pairs"] = len(edges)
    info["components"] = sum(1 for x, (c, _) in decided.items() if x == c)
    info["removed"] = sum(1 for _, d in decided.values() if d is not None)
    return decided, info


def _concat_sketches(parts: list[Sketches]) -> Sketches:
    if not parts:
        return Sketches([], np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros((0, 1), np.int64),
                            np.zeros(0, bool))
    shift = np.cumsum([0] + [int(p.offsets[-1]) for p in parts[:-1]])
    offsets = np.concatenate([parts[0].offsets[:1]] + [p.offsets[1:] + s for p, s in zip(parts, shift)])
    return Sketches([h for p in parts for h in p.exact], np.concatenate([p.values for p in parts]), offsets,
                        np.concatenate([p.keys for p in parts]), np.concatenate([p.has_words for p in parts]))


def input_text_bytes(files: list[str], limit: int | None = None) -> int:
    """Uncompressed bytes of the `text` column as the Parquet footers record them; stops counting once
    past `limit` (a big input's thousands of footers need not be read to know it is big)."""
    total = 0
    for f in files:
        md = pq.ParquetFile(f).metadata
        col = md.schema.names.index("text") if "text" in md.schema.names else None
        if col is None:
            continue
        total += sum(md.row_group(g).column(col).total_uncompressed_size for g in range(md.num_row_groups))
        if limit is not None and total > limit:
            break
    return total


_TEXTS = None  # the text column, for the forked sketch workers (inherited, never pickled)


def _sketch_span(span: tuple[int, int, tuple]) -> Sketches:
    start, length, args = span
    return sketch_arrays(_TEXTS.slice(start, length).to_pylist(), *args)


def sketch_column(texts: pa.ChunkedArray, near_cfg, workers: int = 1) -> Sketches:
    """The sketches of every text, BATCH rows per sketch_arrays call as always; with workers > 1 the
    batches are shared out to that many forked processes (in order: the result is the same arrays)."""
    global _TEXTS
    args = (near_cfg.ngram, near_cfg.num_perm, near_cfg.bands, near_cfg.rows, near_cfg.seed, near_cfg.char_ngram)
    spans = [(start, BATCH, args) for start in range(0, len(texts), BATCH)]
    if workers > 1 and len(spans) > 1 and not multiprocessing.current_process().daemon:
        _TEXTS = texts
        try:
            with multiprocessing.get_context("fork").Pool(min(workers, len(spans))) as pool:
                return _concat_sketches(pool.map(_sketch_span, spans, chunksize=4))
        finally:
            _TEXTS = None
    return _concat_sketches([sketch_arrays(texts.slice(start, n).to_pylist(), *a) for start, n, a in spans])


def dedup_files(files: list[str], out_dir: str, rejected_dir: str, exact: bool, near_cfg, shards: int,
                against: list[IndexRef] = (), index_to: str | None = None, settings: dict | None = None,
                workers: int = 1) -> dict:
    """Dedup the documents of `files` (the scored/ Parquet) into `out_dir` (kept, `shards` files) and
    `rejected_dir`; both are replaced. With `against`, documents of those earlier corpora win over this
    run's (pipeline/dedup/index.py); with `index_to` (a DATA folder), the kept documents' keys are written
    as its dedup_index/ under `settings`; with workers > 1 the sketches are computed in that many forked
    processes (the same arrays). Returns the counts the stage's stats need."""
    table = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
    table = table.drop_columns([c for c in OURS if c in table.column_names])
    n = table.num_rows
    ids = table.column("id").cast(pa.string()).to_pylist()
    texts = table.column("text")
    near = near_cfg is not None and near_cfg.enabled
    fp = sketch_column(texts, near_cfg, workers) if near else None
    hashes = fp.exact if near else [exact_hash(t) for t in texts.to_pylist()]
    sources = (pc.fill_null(table.column("source").cast(pa.string()), "").to_pylist() if "source" in table.column_names
               else [""] * n)

    reason = [None] * n
    detail = [None] * n
    duplicate_of = [None] * n
    cluster = [None] * n
    info: dict = {"exact": {}}
    old = None
    if against:
        keys = fp.keys[fp.has_words].reshape(-1) if near else np.zeros(0, np.int64)
        old = read_matching(list(against), set(ids), set(hashes), keys, near)
        earlier_marks(ids, hashes, old, [r.where for r in against], exact, reason, detail, duplicate_of)
        info["against"] = against_info(against)
        old = old.filter(pc.invert(pc.is_in(old.column("id"), value_set=pa.array(ids, pa.string()))))
    if exact:
        rest = [r for r in range(n) if reason[r] is None]
        for k, first in exact_survivors([ids[r] for r in rest], [hashes[r] for r in rest]).items():
            r = rest[k]
            reason[r], detail[r], duplicate_of[r] = EXACT_DUPLICATE, f"duplicate of {first}", first
    if near:
        live = np.array([r is None for r in reason], dtype=bool)
        decided, info["near"] = _near(ids, _quality(table, n), sources, live, fp, old, near_cfg)
        row_of = {x: r for r, x in enumerate(ids)}
        for x, (c, d) in decided.items():
            r = row_of.get(x)
            if r is None:
                continue  # a document of an earlier corpus: never rewritten
            cluster[r] = c
            if d is not None:
                reason[r], duplicate_of[r] = NEAR_DUPLICATE, d
                detail[r] = f"near duplicate of {d} in cluster {c}"

    status = [KEPT if x is None else REJECTED for x in reason]
    rows = table.append_column("exact_hash", pa.array(hashes, pa.string()))
    for name, values in zip((*BOOKKEEPING_COLUMNS, "minhash_cluster"), (status, reason, detail, duplicate_of, cluster)):
        rows = rows.append_column(name, pa.array(values, pa.string()))
    kept_mask = pa.array([s == KEPT for s in status], pa.bool_())  # typed: an empty input is a valid input
    kept = rows.filter(kept_mask).drop_columns(list(BOOKKEEPING_COLUMNS))
    dropped = rows.filter(pc.invert(kept_mask))
    if pc.count_distinct(kept.column("id")).as_py() != kept.num_rows:  # one id, one row
        check_unique("dedup", repeated_values(kept.column("id")), f"its output {out_dir}")
    if pc.count_distinct(dropped.column("id")).as_py() != dropped.num_rows:  # in rejected/ too
        check_unique("dedup", repeated_values(dropped.column("id")), f"its rejected rows {rejected_dir}")

    order, spans = hash_layout(kept.column("id").to_pylist(), shards)
    kept = kept.take(pa.array(order, pa.int64()))
    write_folder(out_dir, [(name, kept.slice(lo, hi - lo)) for name, lo, hi in spans])
    dropped_ids = dropped.column("id").to_pylist()
    dropped = dropped.take(pa.array(sorted(range(len(dropped_ids)), key=dropped_ids.__getitem__), pa.int64()))
    write_folder(rejected_dir, [("part-00000.zstd.parquet", dropped)])
    if index_to is not None:  # the kept documents' keys, in the dedup/ files' layout and order
        index = kept_index_rows([r for r in range(n) if status[r] == KEPT], ids, sources, hashes, fp)
        index = index.take(pa.array(order, pa.int64()))
        tmp = writing_dir(index_to)
        shutil.rmtree(tmp, ignore_errors=True)
        write_parts(tmp, [(name, index.slice(lo, hi - lo)) for name, lo, hi in spans])
        finish(tmp, index_to, settings, list(against))

    return {"records_in": n, "bytes_in": text_bytes(table), "records_out": kept.num_rows, "bytes_out": text_bytes(kept),
            "rejected": dict(sorted(Counter(x for x in reason if x is not None).items())), "info": info}


def _near(ids: list[str], quality: list, sources: list[str], live: np.ndarray, fp: Sketches, old: pa.Table | None,
          cfg) -> tuple[dict, dict]:
    """`near_decisions` over this run's documents and, when given, the rows of earlier corpora they may meet
    (`read_matching`), appended after them and ranked first (OLD_RANK)."""
    fixed_from = None
    if old is not None and old.num_rows:
        fixed_from = len(ids)
        ids = ids + old.column("id").to_pylist()
        quality = quality + [OLD_RANK] * old.num_rows
        sources = sources + pc.fill_null(old.column("source"), "").to_pylist()
        live = np.concatenate([live, np.ones(old.num_rows, dtype=bool)])
        fp = _concat_sketches([fp, old_sketches(old, cfg.bands)])
    names = sources if cfg.scope == "source" else ["*"] * len(ids)
    codes = {s: k for k, s in enumerate(sorted(set(names)))}
    scope = np.array([codes[s] for s in names], dtype=np.int64)
    return near_decisions(ids, quality, live, scope, fp, cfg, fixed_from)


def _quality(table: pa.Table, n: int) -> list:
    """Each document's own language's quality score (quality_ft in a folder scored before per-language columns)."""
    col = quality_column(table.column_names)
    return table.column(col).cast(pa.float64()).to_pylist() if col else [None] * n
