"""Near-duplicate removal on Spark: MinHash LSH candidates, optional exact-Jaccard verification,
connected components, one survivor per component.

    docs ──mapInArrow──▶ (id, scope, band key)   one row per document and band
         ──groupBy────▶ buckets; star edges (member → bucket's smallest id); giant buckets skipped
         ──verify─────▶ exact Jaccard of the same shingles, keep edges >= threshold
         ──components─▶ (id, component = smallest id)
         ──survivor───▶ highest quality_ft (nulls last), then smallest id

Every step is a DataFrame operation keyed by content-hash ids: the output does not depend on
partitioning, task order or adaptive execution. Only counts reach the driver.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

from pipeline.dedup.components import connected_components
from pipeline.dedup.minhash import MEASURES, band_keys, shingles, signatures_of_shingles
from pipeline.schema import KEPT, REJECTED

log = logging.getLogger(__name__)
REASON = "near_duplicate"
SCOPES = ("source", "all")


@dataclass
class NearDedupConfig:
    enabled: bool = True
    ngram: int = 5
    num_perm: int = 112
    bands: int = 14
    rows: int = 8
    threshold: float = 0.8
    # jaccard: the two texts are nearly the same; containment: the smaller one is (mostly) inside
    # the larger, e.g. a pasted excerpt. Containment pairs have low Jaccard, so LSH needs looser
    # bands (e.g. 56 x 2) to propose them.
    measure: str = "jaccard"
    verify: bool = True
    max_bucket: int = 1000
    scope: str = "source"
    seed: int = 42

    def validate(self) -> "NearDedupConfig":
        def bad(field: str, why: str):
            raise ValueError(f"dedup.near.{field}: {why}")

        for field in ("ngram", "num_perm", "bands", "rows", "max_bucket"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                bad(field, f"must be a positive integer, got {value!r}")
        if self.bands * self.rows != self.num_perm:
            bad("num_perm", f"bands * rows must equal num_perm ({self.bands} * {self.rows} = "
                            f"{self.bands * self.rows}, num_perm = {self.num_perm}): change bands, rows or num_perm")
        if not isinstance(self.threshold, (int, float)) or not 0.0 < self.threshold <= 1.0:
            bad("threshold", f"must be in (0, 1], got {self.threshold!r}")
        if self.max_bucket < 2:
            bad("max_bucket", f"must be >= 2, got {self.max_bucket}")
        if self.measure not in MEASURES:
            bad("measure", f"must be one of {'|'.join(MEASURES)}, got {self.measure!r}")
        if self.measure != "jaccard" and not self.verify:
            bad("verify", f"measure {self.measure} needs verify: true (LSH alone estimates Jaccard only)")
        if self.scope not in SCOPES:
            bad("scope", f"must be one of {'|'.join(SCOPES)}, got {self.scope!r}")
        if not isinstance(self.seed, int):
            bad("seed", f"must be an integer, got {self.seed!r}")
        return self


_BAND_SCHEMA = StructType([StructField("id", StringType()), StructField("scope", StringType()),
                           StructField("band", StringType())])
_BAND_ARROW = pa.schema([("id", pa.string()), ("scope", pa.string()), ("band", pa.string())])


def _band_partition(cfg: NearDedupConfig):
    """mapInArrow function: (id, scope, text) batches in, one (id, scope, band) row per band out."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            ids = batch.column("id").to_pylist()
            scopes = batch.column("scope").to_pylist()
            sets = [shingles(t or "", cfg.ngram) for t in batch.column("text").to_pylist()]
            keep = [i for i, s in enumerate(sets) if s]  # no words, nothing to compare
            sigs = signatures_of_shingles([sets[i] for i in keep], cfg.num_perm, cfg.seed)
            out_id, out_scope, out_band = [], [], []
            for row, i in enumerate(keep):
                for key in band_keys(sigs[row], cfg.bands, cfg.rows):
                    out_id.append(ids[i])
                    out_scope.append(scopes[i])
                    out_band.append(key)
            yield pa.RecordBatch.from_arrays([pa.array(out_id, pa.string()), pa.array(out_scope, pa.string()),
                                              pa.array(out_band, pa.string())], schema=_BAND_ARROW)
    return run


_SIM_SCHEMA = StructType([StructField("src", StringType()), StructField("dst", StringType()),
                          StructField("similarity", DoubleType())])
_SIM_ARROW = pa.schema([("src", pa.string()), ("dst", pa.string()), ("similarity", pa.float64())])


def _verify_partition(ngram: int, measure: str):
    """mapInArrow function: (src, dst, src_text, dst_text) in, (src, dst, similarity) out."""
    similarity = MEASURES[measure]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            a = batch.column("src_text").to_pylist()
            b = batch.column("dst_text").to_pylist()
            sims = [similarity(shingles(x or "", ngram), shingles(y or "", ngram)) for x, y in zip(a, b)]
            yield pa.RecordBatch.from_arrays([batch.column("src"), batch.column("dst"),
                                              pa.array(sims, pa.float64())], schema=_SIM_ARROW)
    return run


def _persist(df: DataFrame) -> DataFrame:
    return df.persist(StorageLevel.MEMORY_AND_DISK)


def mark_near_duplicates(spark: SparkSession, docs: DataFrame, cfg: NearDedupConfig) -> tuple[DataFrame, dict]:
    """All rows of `docs` plus status, reason, detail, duplicate_of and minhash_cluster.

    `docs` needs id (unique, content-derived), source and text; quality_ft is used when present.
    Rows that arrive already rejected (a `status` column other than kept, e.g. exact duplicates)
    keep their status and take no part. Returns (rows, info) where info holds only counts."""
    cfg.validate()
    has_status = "status" in docs.columns
    base = docs
    for col in ("status", "reason", "detail", "duplicate_of"):
        if col not in base.columns:
            base = base.withColumn(col, F.lit(KEPT) if col == "status" else F.lit(None).cast("string"))
    info = {"candidate_pairs": 0, "verified_pairs": 0, "components": 0, "capped_buckets": 0, "removed": 0,
            "cc_iterations": 0}
    if not cfg.enabled:
        return base.withColumn("minhash_cluster", F.lit(None).cast("string")), info

    live = docs.where(F.col("status") == KEPT) if has_status else docs
    scope = F.col("source").cast("string") if cfg.scope == "source" else F.lit("*")
    texts = live.select(F.col("id").cast("string").alias("id"), F.coalesce(scope, F.lit("")).alias("scope"),
                        F.col("text").cast("string").alias("text"))

    # 1. Band rows → buckets → star edges to each bucket's smallest id.
    bands = texts.mapInArrow(_band_partition(cfg), _BAND_SCHEMA)
    bucket = Window.partitionBy("scope", "band")
    members = (bands.withColumn("_size", F.count(F.lit(1)).over(bucket))
                    .withColumn("_head", F.min("id").over(bucket)))
    members = _persist(members.where(F.col("_size") > 1))
    capped = members.where(F.col("_size") > cfg.max_bucket).select("scope", "band").distinct().count()
    edges = _persist(members.where((F.col("_size") <= cfg.max_bucket) & (F.col("id") != F.col("_head")))
                            .select(F.col("_head").alias("src"), F.col("id").alias("dst")).distinct())
    info["capped_buckets"] = capped
    info["candidate_pairs"] = edges.count()
    members.unpersist()
    if capped:
        log.warning("near dedup: %d LSH buckets larger than max_bucket=%d skipped (boilerplate?)",
                    capped, cfg.max_bucket)

    # 2. Exact Jaccard (or containment) of the same shingles for every candidate edge.
    if cfg.verify:
        t = texts.select("id", "text")
        pairs = (edges.join(t.withColumnRenamed("id", "src").withColumnRenamed("text", "src_text"), "src")
                      .join(t.withColumnRenamed("id", "dst").withColumnRenamed("text", "dst_text"), "dst")
                      .select("src", "dst", "src_text", "dst_text"))
        sims = pairs.mapInArrow(_verify_partition(cfg.ngram, cfg.measure), _SIM_SCHEMA)
        kept_edges = _persist(sims.where(F.col("similarity") >= cfg.threshold).select("src", "dst"))
        info["verified_pairs"] = kept_edges.count()
        edges.unpersist()
    else:
        kept_edges = edges
        info["verified_pairs"] = info["candidate_pairs"]

    # 3. Components, 4. one survivor each.
    labels, info["cc_iterations"] = connected_components(kept_edges)
    quality = (F.col("quality_ft").cast("double") if "quality_ft" in docs.columns
               else F.lit(None).cast("double"))
    ranked = labels.join(live.select(F.col("id").cast("string").alias("id"), quality.alias("_q")), "id")
    order = Window.partitionBy("component").orderBy(F.col("_q").desc_nulls_last(), F.col("id").asc())
    assign = (ranked.withColumn("_survivor", F.first("id").over(order))
                    .select("id", F.col("component").alias("_cluster"), "_survivor"))
    assign = assign.localCheckpoint(eager=True)
    kept_edges.unpersist()
    info["components"] = assign.select("_cluster").distinct().count()
    info["removed"] = assign.where(F.col("id") != F.col("_survivor")).count()

    dup = F.col("_survivor").isNotNull() & (F.col("id") != F.col("_survivor"))
    out = (base.join(assign, "id", "left")
               .withColumn("status", F.when(dup, F.lit(REJECTED)).otherwise(F.col("status")))
               .withColumn("reason", F.when(dup, F.lit(REASON)).otherwise(F.col("reason")))
               .withColumn("detail", F.when(dup, F.concat(F.lit("near duplicate of "), F.col("_survivor"),
                                                          F.lit(" in cluster "), F.col("_cluster")))
                                      .otherwise(F.col("detail")))
               .withColumn("duplicate_of", F.when(dup, F.col("_survivor")).otherwise(F.col("duplicate_of")))
               .withColumnRenamed("_cluster", "minhash_cluster")
               .select(*base.columns, "minhash_cluster"))
    log.info("near dedup: %s", info)
    return out, info
