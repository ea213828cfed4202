"""Near-duplicate removal on Spark: MinHash LSH candidates, exact-Jaccard verification on shingle
hashes, connected components, the best documents of each component kept.

    docs ──sketches──▶ (id, scope, quality, shingles, bands)    one numpy pass over the text
         ──explode bands, window per bucket──▶ candidate edges: all pairs of a bucket of up to
                                   PAIRS_BUCKET members, a star to the smallest id beyond;
                                   buckets over max_bucket skipped and counted
         ──verify─────▶ exact Jaccard (or containment) of the two shingle-hash sets: no text moves
         ──components─▶ union-find in one task (or large-star / small-star on a huge graph)
         ──keep───────▶ per component, best first (highest quality, nulls last, then smallest
                        id): a document with a verified edge to a kept one is its duplicate,
                        otherwise it is kept. The best document of a component always survives, and
                        every removed one is within the threshold of the kept one it names.

Every step is a DataFrame operation keyed by content-hash ids: the output does not depend on
partitioning, task order or adaptive execution. Only counts reach the driver.
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipeline.dedup.clusters import LOCAL_MAX_EDGES, PAIRS_BUCKET, keep_best_first
from pipeline.dedup.components import connected_components
from pipeline.dedup.sketch import SKETCH_COLUMNS, SPARK_COLUMNS, sketch_partition, hash_sets
from pipeline.dedup.marks import apply_marks, marks
from pipeline.dedup.minhash import MEASURES
from pipeline.rows import KEPT, NEAR_DUPLICATE, quality_column
from glassbox.schema import validate
from pipeline.dedup.settings import NearDedupConfig

log = logging.getLogger(__name__)
REASON = NEAR_DUPLICATE


def sketch_rows(docs: DataFrame, cfg: NearDedupConfig | None) -> DataFrame:
    """Every row of `docs` (id, text; source and quality when present) plus _scope, _q,
    exact_hash, shingles and bands, from one pass over the text. With `cfg` None or disabled only
    exact_hash is computed."""
    near = cfg is not None and cfg.enabled
    scope = (F.col("source").cast("string") if near and cfg.scope == "source" and "source" in docs.columns
             else F.lit("*"))
    q_col = quality_column(docs.columns)
    quality = F.col(q_col).cast("double") if q_col else F.lit(None).cast("double")
    # exact_hash (and minhash_cluster) are ours: a rerun on an already deduplicated table recomputes them
    cols = [c for c in docs.columns if c not in ("exact_hash", "minhash_cluster") + SKETCH_COLUMNS]
    slim = docs.select(*cols, F.coalesce(scope, F.lit("")).alias("_scope"), quality.alias("_q"))
    schema = StructType(slim.schema.fields + StructType.fromDDL(SPARK_COLUMNS).fields)
    args = (cfg.ngram, cfg.num_perm, cfg.bands, cfg.rows, cfg.seed, cfg.char_ngram) if near else (None,)
    return slim.mapInArrow(sketch_partition(*args), schema)


_EDGE = [("src", pa.string()), ("dst", pa.string()), ("q_src", pa.float64()), ("q_dst", pa.float64())]
_EDGE_SPARK = "src string, dst string, q_src double, q_dst double"
# marks: every node of the verified graph; `degree` (its verified edges) only for the count of edges
_MARKS = pa.schema([("id", pa.string()), ("minhash_cluster", pa.string()), ("duplicate_of", pa.string()),
                    ("degree", pa.int64())])
_MARKS_SPARK = "id string, minhash_cluster string, duplicate_of string, degree bigint"


def _verify_partition(measure: str, threshold: float):
    """mapInArrow function: candidate edges with the two shingle-hash sets a, b in; the edges whose
    similarity reaches the threshold out (src, dst, q_src, q_dst)."""
    similarity = MEASURES[measure]
    schema = pa.schema(_EDGE)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            a, b = hash_sets(batch.column("a")), hash_sets(batch.column("b"))
            sims = np.fromiter((similarity(x, y) for x, y in zip(a, b)), dtype=np.float64, count=len(a))
            keep = pa.array(sims >= threshold)
            yield pa.RecordBatch.from_arrays([batch.column(name).filter(keep) for name, _ in _EDGE], schema=schema)
    return run


def _marks_rows(pairs: list[tuple[str, str]], quality: dict) -> list[tuple[str, str, str | None, int]]:
    kept = keep_best_first(pairs, quality)
    degree = Counter(x for pair in pairs for x in pair)
    return [(x, c, d, degree[x]) for x, (c, d) in sorted(kept.items())]


def _local_marks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow function over every verified edge in one partition: (id, minhash_cluster,
    duplicate_of, degree) for every node, by `keep_best_first`."""
    quality: dict[str, float | None] = {}
    pairs = []
    for batch in batches:
        src, dst = batch.column("src").to_pylist(), batch.column("dst").to_pylist()
        quality.update(zip(src, batch.column("q_src").to_pylist()))
        quality.update(zip(dst, batch.column("q_dst").to_pylist()))
        pairs.extend(zip(src, dst))
    rows = _marks_rows(pairs, quality)
    for i in range(0, len(rows), 65536):
        chunk = list(zip(*rows[i:i + 65536]))
        yield pa.RecordBatch.from_arrays([pa.array(col, t) for col, t in zip(chunk, _MARKS.types)], schema=_MARKS)


def _component_marks(pdf):
    """applyInPandas function over the verified edges of one component: the same marks."""
    import pandas as pd

    quality = dict(zip(pdf["src"], pdf["q_src"].astype(object).where(pdf["q_src"].notna(), None)))
    quality.update(zip(pdf["dst"], pdf["q_dst"].astype(object).where(pdf["q_dst"].notna(), None)))
    return pd.DataFrame(_marks_rows(list(zip(pdf["src"], pdf["dst"])), quality), columns=_MARKS.names)


def _distributed_marks(edges: DataFrame) -> tuple[DataFrame, int]:
    """The same marks for a graph too big for one task: components by large-star / small-star over
    the cluster, then `keep_best_first` per component (one task holds one component's edges)."""
    labels, iterations = connected_components(edges)
    per_component = edges.join(labels.withColumnRenamed("id", "src"), "src")
    return per_component.groupBy("component").applyInPandas(_component_marks, _MARKS_SPARK), iterations


def _persist(df: DataFrame) -> DataFrame:
    return df.persist(StorageLevel.MEMORY_AND_DISK)


def near_marks(spark: SparkSession, fp: DataFrame, cfg: NearDedupConfig,
               local_max_edges: int = LOCAL_MAX_EDGES) -> tuple[DataFrame, dict]:
    """`fp`: the sketch rows (id, _scope, _q, shingles, bands) of the documents to compare.
    Returns ((id, minhash_cluster, duplicate_of, degree) for every document in a component of the
    verified graph, duplicate_of null for the kept ones; cached), and info, which holds only counts.

    Two actions: one counts the candidate edges (and the skipped buckets), one verifies them, finds
    the components and counts the marks; each runs the shuffle stages it needs."""
    info = {"candidate_pairs": 0, "verified_pairs": 0, "components": 0, "capped_buckets": 0, "removed": 0,
            "cc_iterations": 0}

    # 1. Band rows → buckets → candidate edges, with both ends' quality: every pair of a small
    # bucket, a star to the smallest id in a bigger one (n - 1 edges instead of n(n - 1) / 2).
    # Documents of earlier corpora (`_old`, pipeline/dedup/against.py) are only compared with this run's.
    old = F.col("_old") if "_old" in fp.columns else F.lit(False)
    bucket = Window.partitionBy("_scope", "band")
    members = (fp.select("id", "_scope", "_q", old.alias("_old"), F.explode("bands").alias("band"))
                 .withColumn("_size", F.count(F.lit(1)).over(bucket))
                 .withColumn("_head", F.min("id").over(bucket))
                 .withColumn("_head_q", F.min_by("_q", "id").over(bucket))
                 .withColumn("_head_old", F.min_by("_old", "id").over(bucket))
                 .where(F.col("_size") > 1))
    small = members.where(F.col("_size") <= PAIRS_BUCKET).select("_scope", "band", "id", "_q", "_old")
    pairs = (small.alias("a").join(small.alias("b"), ["_scope", "band"])
                  .where((F.col("a.id") < F.col("b.id")) & ~(F.col("a._old") & F.col("b._old")))
                  .select(F.col("a.id").alias("src"), F.col("b.id").alias("dst"),
                          F.col("a._q").alias("q_src"), F.col("b._q").alias("q_dst")))
    stars = (members.where((F.col("_size") > PAIRS_BUCKET) & (F.col("_size") <= cfg.max_bucket)
                           & (F.col("id") != F.col("_head")) & ~(F.col("_old") & F.col("_head_old")))
                    .select(F.col("_head").alias("src"), F.col("id").alias("dst"),
                            F.col("_head_q").alias("q_src"), F.col("_q").alias("q_dst")))
    # one row (dst null) per bucket over max_bucket rides along, so that one job counts both
    capped = (members.where((F.col("_size") > cfg.max_bucket) & (F.col("id") == F.col("_head")))
                     .select(F.col("band").cast("string").alias("src"), F.lit(None).cast("string").alias("dst"),
                             F.lit(None).cast("double").alias("q_src"), F.lit(None).cast("double").alias("q_dst")))
    candidates = _persist(pairs.unionByName(stars).distinct().unionByName(capped))
    counts = candidates.agg(F.count("dst").alias("edges"),
                            F.count(F.when(F.col("dst").isNull(), 1)).alias("capped")).first()
    info["candidate_pairs"], info["capped_buckets"] = int(counts["edges"]), int(counts["capped"])
    edges = candidates.where(F.col("dst").isNotNull())
    if info["capped_buckets"]:
        log.warning("near dedup: %d LSH buckets larger than max_bucket=%d skipped (boilerplate?)",
                    info["capped_buckets"], cfg.max_bucket)

    # 2. Exact Jaccard (or containment) of the two shingle-hash sets of every candidate edge: each
    # side's sets join the (small, broadcast) edges, then the two halves meet on (src, dst).
    if cfg.verify:
        sets = fp.select("id", "shingles")
        with_a = edges.join(sets.select(F.col("id").alias("src"), F.col("shingles").alias("a")), "src")
        with_b = edges.select("src", "dst").join(sets.select(F.col("id").alias("dst"), F.col("shingles").alias("b")),
                                                 "dst")
        pairs = with_a.join(with_b, ["src", "dst"]).select("src", "dst", "q_src", "q_dst", "a", "b")
        kept_edges = pairs.mapInArrow(_verify_partition(cfg.measure, cfg.threshold), _EDGE_SPARK)
    else:
        kept_edges = edges

    # 3. Components, 4. the documents to keep in each: in one task when the candidate graph fits there.
    if info["candidate_pairs"] <= local_max_edges:
        found = kept_edges.repartition(1).mapInArrow(_local_marks, _MARKS_SPARK)  # upstream keeps its tasks
    else:
        found, info["cc_iterations"] = _distributed_marks(_persist(kept_edges))
    found = _persist(found)
    counts = found.agg(F.count(F.when(F.col("id") == F.col("minhash_cluster"), 1)).alias("c"),  # named by a member
                       F.count("duplicate_of").alias("r"), F.sum("degree").alias("d")).first()
    info["components"], info["removed"] = int(counts["c"]), int(counts["r"])
    info["verified_pairs"] = int(counts["d"] or 0) // 2  # every edge counted at both ends
    candidates.unpersist()
    log.info("near dedup: %s", info)
    return found, info


def mark_near_duplicates(spark: SparkSession, docs: DataFrame, cfg: NearDedupConfig,
                         local_max_edges: int = LOCAL_MAX_EDGES) -> tuple[DataFrame, dict]:
    """All rows of `docs` plus status, reason, detail, duplicate_of and minhash_cluster.

    `docs` needs id (unique, content-derived), source and text; quality (each document's own language's
    score) is used when present.
    Rows that arrive already rejected (a `status` column other than kept, e.g. exact duplicates)
    keep their status and take no part. Returns (rows, info) where info holds only counts."""
    validate(cfg, "dedup.near")
    if not cfg.enabled:
        return apply_marks(docs, None), {"candidate_pairs": 0, "verified_pairs": 0, "components": 0,
                                         "capped_buckets": 0, "removed": 0, "cc_iterations": 0}
    live = docs.where(F.col("status") == KEPT) if "status" in docs.columns else docs
    keep = [c for c in ("source", quality_column(live.columns), "text") if c in live.columns]
    fp = sketch_rows(live.select(F.col("id").cast("string").alias("id"), *keep), cfg)
    fp = fp.persist(StorageLevel.DISK_ONLY)  # read by the buckets and the verification
    try:
        found, info = near_marks(spark, fp, cfg, local_max_edges)
    finally:
        fp.unpersist()
    return apply_marks(docs, near_status_marks(found)), info


def near_status_marks(near: DataFrame) -> DataFrame:
    """Near marks (id, minhash_cluster, duplicate_of) as a marks table (`marks.py`)."""
    dup = F.col("duplicate_of")
    return marks(near, F.when(dup.isNotNull(), F.lit(REASON)),
                 F.when(dup.isNotNull(), F.concat(F.lit("near duplicate of "), dup, F.lit(" in cluster "),
                                                  F.col("minhash_cluster"))),
                 dup, F.col("minhash_cluster"))
