"""Stage 5: decontaminate. Benchmark n-gram overlap (13-grams by default) on dedup/ -> decontaminated/.

Every document gets `contamination` (the benchmark items it shares an n-gram with, best first; null
when clean). With `decontaminate.remove: true` (the default) those documents go to
rejected/stage=decontaminate/ with reason `contamination` and the best-matching item as detail
(e.g. `gsm8k:17`); stats/decontaminate.json lists the matches. The tokenize job runs this first, so
the tokenizer never sees benchmark text; it also runs alone with the same --config and --data.
"""
from __future__ import annotations

import os
import time

from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from pipeline.tokenize.decontam import MAX_LISTED, decontam_partition, fingerprint, index_stats, load_benchmarks
from pipeline.run.spark import finish_stage, get_spark, input_stats, text_bytes

def run(spark, cfg, data_dir: str, benchmarks=None):
    """`benchmarks` = load_benchmarks(cfg.decontaminate), when the caller already loaded them.
    Returns the stage's StageStats; its extra lists the matched documents and items."""
    t0 = time.time()
    dc = cfg.decontaminate
    items, bench_info = benchmarks if benchmarks is not None else load_benchmarks(dc)
    src = os.path.join(data_dir, "dedup")
    docs = spark.read.parquet(src)
    if "contamination" in docs.columns:
        docs = docs.drop("contamination")
    n_in, bytes_in = input_stats(docs, text_bytes())

    shared = spark.sparkContext.broadcast(items)  # benchmark text travels once per executor
    fp = fingerprint(items, dc.ngram, dc.min_words) if items else ""
    schema = StructType.fromDDL(", ".join(
        [f"`{f.name}` {f.dataType.simpleString()}" for f in docs.schema.fields] +
        ["contamination array<string>", "status string", "reason string", "detail string"]))
    rows = docs.mapInArrow(decontam_partition(lambda: shared.value, fp, dc, to_arrow_schema(docs.schema)), schema)
    extra = {"ngram": dc.ngram, "min_words": dc.min_words, "remove": dc.remove,
             "benchmarks": bench_info, "index": index_stats(items, dc) if items else {}}
    try:
        stats = finish_stage(spark, "decontaminate", rows, data_dir, "decontaminated", t0=t0, input_desc=src,
                             records_in=n_in, bytes_in=bytes_in, shards=cfg.dedup.shards, extra=extra)
    finally:
        shared.unpersist()
    # The matches, read back from what was written (the matcher ran once, inside finish_stage).
    where = os.path.join(data_dir, "rejected", "stage=decontaminate") if dc.remove else stats.output
    hits = spark.read.parquet(where).where(F.col("contamination").isNotNull())
    listed = [{"id": r["id"], "source": r["source"], "items": list(r["contamination"])}
              for r in hits.select("id", "source", "contamination").orderBy("id").limit(MAX_LISTED).collect()]
    per_bench = {r["b"]: r["n"] for r in hits.select(F.explode(F.array_distinct(F.transform(
        "contamination", lambda k: F.substring_index(k, ":", 1)))).alias("b"))
        .groupBy("b").agg(F.count(F.lit(1)).alias("n")).collect()}
    n_hits = len(listed) if len(listed) < MAX_LISTED else hits.count()
    stats.extra.update(contaminated_documents=n_hits, contaminated_by_benchmark=dict(sorted(per_bench.items())),
                       matches=listed, matches_truncated=n_hits > len(listed))
    stats.write(data_dir)
    return stats


if __name__ == "__main__":
    import sys

    from jobs.common import parse_args, print_nothing_kept
    from pipeline.tokenize.decontam import BenchmarkError

    cfg, data = parse_args(__doc__)
    try:
        loaded = load_benchmarks(cfg.decontaminate)
    except BenchmarkError as e:
        print(f"config error: {e}", file=sys.stderr)
        sys.exit(2)
    print(run(get_spark("glassbox-decontaminate", cfg.spark), cfg, data, loaded).summary())
    print_nothing_kept(data, "decontaminate")
