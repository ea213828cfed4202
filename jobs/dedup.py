"""Stage 4: dedup. Exact (normalized-text hash; the lowest id survives), then near duplicates
(MinHash LSH + verification + connected components; the best-scored document of a component
survives), then, when enabled, semantic duplicates (embeddings + k-means). Each step works on the
survivors of the one before; every removed document goes to rejected/ with its reason and
`duplicate_of`.

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

from pipeline.dedup.near import FP_COLUMNS, apply_near_marks, fingerprint_rows
from pipeline.schema import KEPT, REJECTED
from pipeline.spark import finish_stage, get_spark, input_stats, text_bytes

STATUS_COLUMNS = ("status", "reason", "detail", "duplicate_of")


def exact_marks(fp: DataFrame) -> DataFrame:
    """(id, duplicate_of) for every document whose exact hash a smaller id already has: ids are
    unique hashes, so "lowest id wins" picks the same survivor on every run."""
    first = F.min("id").over(Window.partitionBy("exact_hash"))
    return (fp.select("id", first.alias("_first")).where(F.col("id") != F.col("_first"))
              .select("id", F.col("_first").alias("duplicate_of")))


def _with_status(rows: DataFrame, marks: DataFrame | None, reason: str, detail) -> DataFrame:
    """Rows still kept and named in `marks` (id, duplicate_of) become rejected with `reason`."""
    if marks is None:
        return rows
    m = marks.select("id", F.col("duplicate_of").alias("_dup"))
    hit = F.col("_hit")
    return (rows.join(m, "id", "left")
                .withColumn("_hit", (F.col("status") == KEPT) & F.col("_dup").isNotNull())
                .withColumn("status", F.when(hit, F.lit(REJECTED)).otherwise(F.col("status")))
                .withColumn("reason", F.when(hit, F.lit(reason)).otherwise(F.col("reason")))
                .withColumn("detail", F.when(hit, detail).otherwise(F.col("detail")))
                .withColumn("duplicate_of", F.when(hit, F.col("_dup")).otherwise(F.col("duplicate_of")))
                .drop("_dup", "_hit"))


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
            semantic = sem_rows.where(F.col("status") != KEPT).select("id", "duplicate_of", "detail")

        out = rows.drop("_scope", "_q", "shingles", "bands").withColumn("status", F.lit(KEPT))
        for c in STATUS_COLUMNS[1:]:
            out = out.withColumn(c, F.lit(None).cast("string"))
        out = _with_status(out, exact, "exact_duplicate", F.concat(F.lit("duplicate of "), F.col("_dup")))
        if near is not None:
            out = apply_near_marks(out, near)
        else:
            out = out.withColumn("minhash_cluster", F.lit(None).cast("string"))
        if semantic is not None:
            sem = semantic.select("id", "duplicate_of", F.col("detail").alias("_sem_detail"))
            out = _with_status(out.join(sem.select("id", "_sem_detail"), "id", "left"), sem.select("id", "duplicate_of"),
                               "semantic_duplicate", F.col("_sem_detail")).drop("_sem_detail")
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
