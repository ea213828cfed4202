"""Stage 4: dedup. Exact (normalized-text hash; the lowest id survives), then near duplicates
(MinHash LSH + connected components; the best-scored document of a component survives), then,
when enabled, semantic duplicates (embeddings + k-means). Each step works on the survivors of the
one before; every removed document goes to rejected/ with its reason and `duplicate_of`.
"""
from __future__ import annotations

import os
import shutil
import time

from pyspark import StorageLevel
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipeline.batches import exact_hash_partition
from pipeline.schema import KEPT, REJECTED
from pipeline.spark import finish_stage, get_spark, input_stats, text_bytes

DROP_COLUMNS = ("status", "reason", "detail", "duplicate_of")


def _exact(docs, enabled: bool):
    hashed = docs.mapInArrow(exact_hash_partition,
                             StructType(docs.schema.fields + [StructField("exact_hash", StringType())]))
    if not enabled:
        return (hashed.withColumn("status", F.lit(KEPT)).withColumn("reason", F.lit(None).cast("string"))
                      .withColumn("duplicate_of", F.lit(None).cast("string"))
                      .withColumn("detail", F.lit(None).cast("string")))
    # Ids are unique hashes, so "lowest id wins" picks the same survivor on every run.
    group = Window.partitionBy("exact_hash").orderBy("id")
    ranked = (hashed.withColumn("_rank", F.row_number().over(group))
                    .withColumn("_first", F.first("id").over(group)))
    dup = F.col("_rank") > 1
    return (ranked
            .withColumn("status", F.when(dup, F.lit(REJECTED)).otherwise(F.lit(KEPT)))
            .withColumn("reason", F.when(dup, F.lit("exact_duplicate")))
            .withColumn("duplicate_of", F.when(dup, F.col("_first")))
            .withColumn("detail", F.when(dup, F.concat(F.lit("duplicate of "), F.col("_first"))))
            .drop("_rank", "_first"))


def run(spark, cfg, data_dir: str):
    t0 = time.time()
    src = os.path.join(data_dir, "scored")
    docs = spark.read.parquet(src)
    n_in, bytes_in = input_stats(docs, text_bytes())
    steps = [("exact", lambda d: (_exact(d, cfg.dedup.exact), {}))]
    if cfg.dedup.near.enabled:
        from pipeline.dedup.near import mark_near_duplicates
        steps.append(("near", lambda d: mark_near_duplicates(spark, d, cfg.dedup.near)))
    if cfg.dedup.semantic.enabled:
        from pipeline.dedup.semantic import mark_semantic_duplicates
        steps.append(("semantic", lambda d: mark_semantic_duplicates(spark, d, cfg.dedup.semantic)))

    checkpoints = os.path.join(data_dir, "_checkpoints")
    spark.sparkContext.setCheckpointDir(checkpoints)  # connected components cut their lineage here
    dropped, cached, info = [], [], {}
    survivors = docs
    try:
        for name, step in steps:
            rows, info[name] = step(survivors)
            rows = rows.persist(StorageLevel.MEMORY_AND_DISK)  # each step's result feeds two branches
            cached.append(rows)
            dropped.append(rows.filter(F.col("status") != KEPT))
            survivors = rows.filter(F.col("status") == KEPT).drop(*DROP_COLUMNS)
        final = survivors.withColumn("status", F.lit(KEPT))
        for c in ("reason", "detail", "duplicate_of"):
            final = final.withColumn(c, F.lit(None).cast("string"))
        all_rows = final
        for d in dropped:
            all_rows = all_rows.unionByName(d, allowMissingColumns=True)
        return finish_stage(spark, "dedup", all_rows, data_dir, "dedup", t0=t0, input_desc=src,
                            records_in=n_in, bytes_in=bytes_in, shards=cfg.dedup.shards, extra=info)
    finally:
        for rows in cached:
            rows.unpersist()
        spark.catalog.clearCache()  # what the steps cached for their returned rows (e.g. semantic marks)
        shutil.rmtree(checkpoints, ignore_errors=True)


if __name__ == "__main__":
    from jobs.common import parse_args

    cfg, data = parse_args(__doc__)
    print(run(get_spark("glassbox-dedup", cfg.spark), cfg, data).summary())
