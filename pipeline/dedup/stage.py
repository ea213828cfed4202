"""The dedup stage (jobs/dedup.py submits it; the stage runner records it like the others). Exact
(normalized-text hash; the lowest id survives), then near duplicates (MinHash LSH + exact-Jaccard verification + connected components; the best-scored document of a
component survives, and so does any member not within the threshold of a kept one), then, when
enabled, semantic duplicates (embeddings + k-means). Each step works on the survivors of the one
before; every removed document goes to rejected/ with its reason and `duplicate_of`.

The text is read by Python once: one pass computes every document's exact hash, shingle hashes and
LSH band keys (cached on local disk); the steps after it move only ids, hashes and counts, and the
final write joins the (few) marks back onto the rows.

With `dedup.against`, the documents of corpora already built come first (pipeline/dedup/against.py:
repeats of their records, exact copies, then near duplicates with the old documents ranked first), read
from their indexes, never recomputed nor rewritten. Every run writes its own index, DATA/dedup_index
(pipeline/dedup/index.py), for the crawls after it.

An input with less text than `dedup.local_max_bytes` (counted from the Parquet footers) takes the local
path instead: pipeline/dedup/local.py makes the same decisions and writes the same files in one Spark
task, without the distributed path's dozens of small jobs. With semantic dedup enabled the distributed
path always runs (its embedding step is a Spark job over the near-dedup survivors).
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import time

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipeline.dedup.earlier import against_info
from pipeline.dedup.index import INDEX_DIR, finish, key_settings, open_index, writing_dir
from pipeline.dedup.marks import apply_marks, combine, marks
from pipeline.dedup.sketch import SKETCH_COLUMNS
from pipeline.dedup.near import sketch_rows, near_status_marks
from pipeline.dedup.local import dedup_files, input_text_bytes
from pipeline.rows import EXACT_DUPLICATE, KEPT, SEMANTIC_DUPLICATE
from pipeline.run.runner import StageSpec
from pipeline.run.spark import finish_stage, input_stats, text_bytes
from pipeline.run.stats import StageStats
from pipeline.run.units import parquet_files


def exact_marks(fp: DataFrame) -> DataFrame:
    """(id, duplicate_of) for every document whose exact hash a smaller id already has: ids are
    unique hashes, so "lowest id wins" picks the same survivor on every run."""
    first = F.min("id").over(Window.partitionBy("exact_hash"))
    return (fp.select("id", first.alias("_first")).where(F.col("id") != F.col("_first"))
              .select("id", F.col("_first").alias("duplicate_of")))


def takes_local_path(cfg, files: list[str]) -> bool:
    """Whether the input is small enough for the one-task path (and nothing needs the distributed one)."""
    limit = cfg.dedup.local_max_bytes
    return bool(files) and limit > 0 and not cfg.dedup.semantic.enabled and input_text_bytes(files, limit) <= limit


def local_path_workers(sc) -> int:
    """Processes the local path may sketch in: its task is the only one running, so on a local master all
    of its cores (local[N]: N; the no-JVM executor: its cores); on a cluster, the one core of its task."""
    from pipeline.run.local import master_cores

    cores = getattr(sc, "cores", None)  # pipeline/run/local.py's LocalContext
    return max(1, int(cores if cores else master_cores(str(sc.master)) or 1))


def run_local(spark, cfg, data_dir: str, files: list[str], t0: float) -> StageStats:
    """The local path in one Spark task (on a cluster: on an executor, which reaches DATA as the units
    of the other stages do); only counts come back to the driver."""
    out_path = os.path.join(data_dir, "dedup")
    rej_path = os.path.join(data_dir, "rejected", "stage=dedup")
    near_cfg = cfg.dedup.near if cfg.dedup.near.enabled else None
    exact, shards = cfg.dedup.exact, cfg.dedup.shards
    against, settings = earlier_indexes(cfg), key_settings(cfg.dedup)
    workers = local_path_workers(spark.sparkContext)
    spark.sparkContext.setJobDescription(f"dedup: {len(files)} files in one task (local path, {workers} sketch processes)")
    counts = (spark.sparkContext.parallelize([0], 1)
              .map(lambda _: dedup_files(files, out_path, rej_path, exact, near_cfg, shards, against=against,
                                         index_to=data_dir, settings=settings, workers=workers)).collect()[0])
    stats = StageStats(stage="dedup", records_in=counts["records_in"], records_out=counts["records_out"],
                       rejected=counts["rejected"], bytes_in=counts["bytes_in"], bytes_out=counts["bytes_out"],
                       wall_s=round(time.time() - t0, 2), input=os.path.join(data_dir, "scored"),
                       output=out_path, extra={**counts["info"], "path": "local"})
    stats.check()
    stats.write(data_dir)
    return stats


def run_dedup(spark, cfg, data_dir: str) -> StageStats:
    """The stage's work: scored/ -> dedup/ and rejected/stage=dedup/, by the local or the distributed path."""
    t0 = time.time()
    src = os.path.join(data_dir, "scored")
    files = parquet_files(src)
    # the index describes the output about to be replaced: until the new one is written there is none
    shutil.rmtree(os.path.join(data_dir, INDEX_DIR), ignore_errors=True)
    if takes_local_path(cfg, files):
        return run_local(spark, cfg, data_dir, files, t0)
    docs = spark.read.parquet(src)
    near_cfg, sem_cfg = cfg.dedup.near, cfg.dedup.semantic
    info: dict = {"exact": {}, "path": "distributed"}
    checkpoints = os.path.join(data_dir, "_checkpoints")
    spark.sparkContext.setCheckpointDir(checkpoints)  # components on a big graph cut their lineage here
    rows = sketch_rows(docs, near_cfg).persist(StorageLevel.DISK_ONLY)
    try:
        n_in, bytes_in = input_stats(rows, text_bytes())  # the one pass over the text, cached on disk
        if not n_in:  # nothing to compare: no step runs, the same (empty) files are written
            info["empty_input"] = True
        indexes = earlier_indexes(cfg)
        earlier, old = (None, None), None
        live = rows
        if indexes and n_in:  # earlier corpora first: their documents win (pipeline/dedup/earlier.py)
            from pipeline.dedup.against import earlier_marks, old_rows

            old = old_rows(spark, indexes).persist(StorageLevel.DISK_ONLY)
            earlier = tuple(m.persist(StorageLevel.MEMORY_AND_DISK) if m is not None else None
                            for m in earlier_marks(rows, old, cfg.dedup.exact))
            for m in earlier:
                if m is not None:
                    live = live.join(m.select("id"), "id", "left_anti")
        if indexes:
            info["against"] = against_info(indexes)
        exact = exact_marks(live).persist(StorageLevel.MEMORY_AND_DISK) if cfg.dedup.exact and n_in else None
        live = live.join(exact, "id", "left_anti") if exact is not None else live
        near = None
        if near_cfg.enabled and n_in:
            from pipeline.dedup.near import near_marks

            compared = live
            if old is not None:
                from pipeline.dedup.against import old_candidates

                # cached: the buckets and both sides of the verification read it
                compared = live.select("id", "_scope", "_q", "shingles", "bands", F.lit(False).alias("_old")).unionByName(
                    old_candidates(rows, old, near_cfg.scope == "source")).persist(StorageLevel.MEMORY_AND_DISK)
            near, info["near"] = near_marks(spark, compared, near_cfg)
        semantic = None
        if sem_cfg.enabled and n_in:
            from pipeline.dedup.semantic import mark_semantic_duplicates

            if near is not None:
                live = live.join(near.where(F.col("duplicate_of").isNotNull()).select("id"), "id", "left_anti")
            sem_rows, info["semantic"] = mark_semantic_duplicates(spark, live.drop(*SKETCH_COLUMNS), sem_cfg)
            semantic = marks(sem_rows.where(F.col("status") != KEPT), SEMANTIC_DUPLICATE, F.col("detail"),
                             F.col("duplicate_of"))
        table = combine(
            *earlier,
            marks(exact, EXACT_DUPLICATE, F.concat(F.lit("duplicate of "), F.col("duplicate_of")),
                  F.col("duplicate_of")) if exact is not None else None,
            near_status_marks(near) if near is not None else None,
            semantic)
        out = apply_marks(rows.drop("_scope", "_q", "shingles", "bands"), table)
        stats = finish_stage(spark, "dedup", out, data_dir, "dedup", t0=t0, input_desc=src,
                             records_in=n_in, bytes_in=bytes_in, shards=cfg.dedup.shards, extra=info)
        write_index(spark, cfg, data_dir, rows, table, indexes)  # after the books balance, as on the local path
        stats.wall_s = round(time.time() - t0, 2)
        stats.write(data_dir)
        return stats
    finally:
        rows.unpersist()
        spark.catalog.clearCache()  # the steps' cached marks
        shutil.rmtree(checkpoints, ignore_errors=True)


def write_index(spark, cfg, data_dir: str, rows: DataFrame, table: DataFrame | None, indexes) -> None:
    """DATA/dedup_index (pipeline/dedup/index.py) from the sketch rows of the kept documents, in the dedup/
    files' layout; its manifest last."""
    kept = rows if table is None else rows.join(table.where(F.col("reason").isNotNull()).select("id"), "id", "left_anti")
    source = F.col("source").cast("string") if "source" in rows.columns else F.lit(None).cast("string")
    keys = kept.select("id", F.coalesce(source, F.lit("")).alias("source"), "exact_hash", "bands", "shingles")
    tmp = writing_dir(data_dir)
    shutil.rmtree(tmp, ignore_errors=True)
    (keys.repartition(cfg.dedup.shards, "id").sortWithinPartitions("id")
         .write.option("compression", "zstd").parquet(tmp))
    finish(tmp, data_dir, key_settings(cfg.dedup), indexes)


def earlier_indexes(cfg) -> list:
    """The indexes of `dedup.against`, opened and checked again (the config check did it before Spark)."""
    want = key_settings(cfg.dedup)
    return [open_index(where, want) for where in cfg.dedup.against]


def identity(cfg) -> dict:
    """What dedup's output depends on. `local_max_bytes` only chooses between two paths that write the
    same files (tests/pipeline/dedup/test_dedup_local.py), so changing it does not rerun a finished dedup.
    The earlier corpora count by their index's digest: a rebuilt one reruns the stage."""
    return {"dedup": dataclasses.replace(cfg.dedup, local_max_bytes=0),
            "against": [r.digest for r in earlier_indexes(cfg)]}


# Dedup compares documents across the whole corpus, so it is one unit: after a crash it reruns
# whole from the finished scored/ input. Its index is part of its output: without one it runs again.
SPEC = StageSpec("dedup", "dedup", identity, lambda spark, cfg, data, ctx: run_dedup(spark, cfg, data),
                 previous=("score", "scored"), units=False, also_writes=(INDEX_DIR,))
