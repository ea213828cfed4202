"""Stage 3: quality scores as columns (fastText quality_ft, KenLM perplexity, ppl_bucket per language).

The cut-offs of the buckets are percentiles of each language's perplexities over this corpus
(30th/60th by default, as CCNet), so they are computed here, between scoring and deciding.
"""
from __future__ import annotations

import os
import time

from pyspark import StorageLevel
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from pipeline.batches import SCORE_COLUMNS, STATUS_COLUMNS, decide_score_partition, score_partition
from pipeline.spark import finish_stage, get_spark, input_stats, text_bytes

# What stats/score.json reports of each score, per language and per (language, source).
REPORT_PERCENTILES = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]
ACCURACY = 100_000  # percentile_approx: exact below this many values per group


def _ddl(schema: StructType, extra: list[tuple[str, str]]) -> StructType:
    return StructType.fromDDL(", ".join([f"`{f.name}` {f.dataType.simpleString()}" for f in schema.fields] +
                                        [f"`{n}` {t}" for n, t in extra]))


def _distributions(scored) -> list[dict]:
    aggs = [F.count(F.lit(1)).alias("documents")]
    for col in ("quality_ft", "perplexity"):
        aggs += [F.count(col).alias(f"{col}_scored"),
                 F.percentile_approx(col, REPORT_PERCENTILES, ACCURACY).alias(f"{col}_percentiles")]
    by_source = scored.groupBy("lang", "source").agg(*aggs)
    by_lang = scored.groupBy("lang").agg(*aggs).withColumn("source", F.lit("*"))
    out = []
    for r in by_lang.unionByName(by_source).orderBy("lang", "source").collect():
        d = {"lang": r["lang"], "source": r["source"], "documents": r["documents"]}
        for col in ("quality_ft", "perplexity"):
            d[f"{col}_scored"] = r[f"{col}_scored"]
            values = r[f"{col}_percentiles"]
            d[col] = dict(zip((f"p{round(p * 100)}" for p in REPORT_PERCENTILES), values)) if values else None
        out.append(d)
    return out


def run(spark, cfg, data_dir: str):
    t0 = time.time()
    src = os.path.join(data_dir, "cleaned")
    docs = spark.read.parquet(src)
    n_in, bytes_in = input_stats(docs, text_bytes())
    scored = docs.mapInArrow(score_partition(cfg.score, to_arrow_schema(docs.schema)),
                             _ddl(docs.schema, [(n, t) for n, t, _ in SCORE_COLUMNS]))
    scored = scored.persist(StorageLevel.MEMORY_AND_DISK)  # the models run once; the rest reads this
    try:
        low, high = cfg.score.bucket_percentiles
        cutoffs = {r["lang"]: tuple(r["q"]) for r in
                   scored.where(F.col("perplexity").isNotNull()).groupBy("lang")
                   .agg(F.percentile_approx("perplexity", [low, high], ACCURACY).alias("q")).collect()}
        extra = {"ppl_bucket_cutoffs": {lang: {"head_max": c[0], "middle_max": c[1]}
                                        for lang, c in sorted(cutoffs.items())},
                 "bucket_percentiles": [low, high],
                 "distributions": _distributions(scored)}
        decided = scored.mapInArrow(
            decide_score_partition(cfg.score, cutoffs, to_arrow_schema(scored.schema)),
            _ddl(scored.schema, [("ppl_bucket", "string")] + [(c, "string") for c in STATUS_COLUMNS]))
        return finish_stage(spark, "score", decided, data_dir, "scored", t0=t0, input_desc=src,
                            records_in=n_in, bytes_in=bytes_in, extra=extra)
    finally:
        scored.unpersist()


if __name__ == "__main__":
    from jobs.common import parse_args

    cfg, data = parse_args(__doc__)
    print(run(get_spark("glassbox-score", cfg.spark), cfg, data).summary())
