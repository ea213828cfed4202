"""Stage 4: dedup. Exact (normalized-text hash; the lowest id survives), then near duplicates
(MinHash LSH + exact-Jaccard verification + connected components; the best-scored document of a
component survives, and so does any member not within the threshold of a kept one), then, when
enabled, semantic duplicates (embeddings + k-means). Each step works on the survivors of the one
before; every removed document goes to rejected/ with its reason and `duplicate_of`.

The text is read by Python once: one pass computes every document's exact hash, shingle hashes and
LSH band keys (cached on local disk); the steps after it move only ids, hashes and counts, and the
final write joins the (few) marks back onto the rows.
"""
from __future__ import annotations

import os
import shutil
import time

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipeline.dedup.marks import apply_marks, combine, marks
from pipeline.dedup.near import FP_COLUMNS, fingerprint_rows, near_status_marks
from pipeline.schema import KEPT
from pipeline.spark import finish_stage, get_spark, input_stats, text_bytes


def exact_marks(fp: DataFrame) -> DataFrame:
    """(id, duplicate_of) for every document whose exact hash a smaller id already has: ids are
    unique hashes, so "lowest id wins" picks the same survivor on every run."""
    first = F.min("id").over(Window.partitionBy("exact_hash"))
    return (fp.select("id", first.alias("_first")).where(F.col("id") != F.col("_first"))
              .select("id", F.col("_first").alias("duplicate_of")))


def run(spark, cfg, data_dir: str):
    t0 = time.time()
    src = os.path.join(data_dir, "scored")
    docs = spark.read.parquet(src)
    near_cfg, sem_cfg = cfg.dedup.near, cfg.dedup.semantic
    info: dict = {"exact": {}}
    checkpoints = os.path.join(data_dir, "_checkpoints")
    spark.sparkContext.setCheckpointDir(checkpoints)  # components on a big graph cut their lineage here
    rows = fingerprint_rows(docs, near_cfg).persist(StorageLevel.DISK_ONLY)
    try:
        n_in, bytes_in = input_stats(rows, text_bytes())  # the one pass over the text, cached on disk
        exact = exact_marks(rows).persist(StorageLevel.MEMORY_AND_DISK) if cfg.dedup.exact else None
        live = rows.join(exact, "id", "left_anti") if exact is not None else rows
        near = None
        if near_cfg.enabled:
            from pipeline.dedup.near import near_marks

            near, info["near"] = near_marks(spark, live, near_cfg)
        semantic = None
        if sem_cfg.enabled:
            from pipeline.dedup.semantic import mark_semantic_duplicates

            if near is not None:
                live = live.join(near.where(F.col("duplicate_of").isNotNull()).select("id"), "id", "left_anti")
            sem_rows, info["semantic"] = mark_semantic_duplicates(spark, live.drop(*FP_COLUMNS), sem_cfg)
            semantic = marks(sem_rows.where(F.col("status") != KEPT), "semantic_duplicate", F.col("detail"),
                             F.col("duplicate_of"))
        table = combine(
            marks(exact, "exact_duplicate", F.concat(F.lit("duplicate of "), F.col("duplicate_of")),
                  F.col("duplicate_of")) if exact is not None else None,
            near_status_marks(near) if near is not None else None,
            semantic)
        out = apply_marks(rows.drop("_scope", "_q", "shingles", "bands"), table)
        return finish_stage(spark, "dedup", out, data_dir, "dedup", t0=t0, input_desc=src,
                            records_in=n_in, bytes_in=bytes_in, shards=cfg.dedup.shards, extra=info)
    finally:
        rows.unpersist()
        spark.catalog.clearCache()  # the steps' cached marks
        shutil.rmtree(checkpoints, ignore_errors=True)


if __name__ == "__main__":
    from jobs.common import parse_args

    cfg, data = parse_args(__doc__)
    print(run(get_spark("glassbox-dedup", cfg.spark), cfg, data).summary())
