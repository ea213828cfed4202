"""Stage 4: exact dedup on the normalized-text hash; the lowest id of each group survives."""
from __future__ import annotations

import os
import time

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipeline.batches import exact_hash_partition
from pipeline.schema import KEPT, REJECTED
from pipeline.spark import finish_stage, get_spark, input_stats, text_bytes


def run(spark, cfg, data_dir: str):
    t0 = time.time()
    src = os.path.join(data_dir, "scored")
    docs = spark.read.parquet(src)
    n_in, bytes_in = input_stats(docs, text_bytes())
    hashed = docs.mapInArrow(exact_hash_partition,
                             StructType(docs.schema.fields + [StructField("exact_hash", StringType())]))
    if cfg.dedup.exact:
        # Ids are unique hashes, so "lowest id wins" picks the same survivor on every run.
        group = Window.partitionBy("exact_hash").orderBy("id")
        ranked = (hashed.withColumn("_rank", F.row_number().over(group))
                        .withColumn("_first", F.first("id").over(group)))
        dup = F.col("_rank") > 1
        rows = (ranked
                .withColumn("status", F.when(dup, F.lit(REJECTED)).otherwise(F.lit(KEPT)))
                .withColumn("reason", F.when(dup, F.lit("exact_duplicate")))
                .withColumn("duplicate_of", F.when(dup, F.col("_first")))
                .withColumn("detail", F.when(dup, F.concat(F.lit("duplicate of "), F.col("_first"))))
                .drop("_rank", "_first"))
    else:
        rows = (hashed.withColumn("status", F.lit(KEPT)).withColumn("reason", F.lit(None).cast("string"))
                      .withColumn("duplicate_of", F.lit(None).cast("string"))
                      .withColumn("detail", F.lit(None).cast("string")))
    return finish_stage(spark, "dedup", rows, data_dir, "dedup", t0=t0, input_desc=src,
                        records_in=n_in, bytes_in=bytes_in, shards=cfg.dedup.shards)


if __name__ == "__main__":
    from jobs.common import parse_args

    cfg, data = parse_args(__doc__)
    print(run(get_spark("glassbox-dedup", cfg.spark), cfg, data).summary())
