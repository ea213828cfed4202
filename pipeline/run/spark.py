"""The Spark glue every job shares: the session, atomic Parquet writes, and closing a stage's books.

Imported only by jobs/ and tests; the record-level modules never import pyspark.
"""
from __future__ import annotations

import os
import sys
import time

from pyspark import SparkConf, StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipeline.rows import KEPT, UNREADABLE
from pipeline.run.repeats import EXAMPLES, ReadAgain, check_unique
from pipeline.run.stats import AccountingError, StageStats

# Settings every run gets; a config's `spark:` section and spark-submit --conf override them.
DEFAULT_CONF = {
    "spark.sql.parquet.compression.codec": "zstd",
    "spark.sql.session.timeZone": "UTC",
    # Small Arrow batches keep a Python worker's memory flat when documents are large.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "512",
    "spark.sql.adaptive.enabled": "true",
    # Let adaptive execution coalesce the partitions of cached results too: a small cached table
    # (dedup marks, candidate edges) is otherwise read back as spark.sql.shuffle.partitions tasks.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.faulthandler.enabled": "true",
    "spark.sql.debug.maxToStringFields": "500",  # wide signal schemas are not worth a warning
}
# On one machine the executors run this very environment, so their Python workers can fork from a
# daemon that has already imported trafilatura, lxml and fastText. A cluster's executors may not
# have `pipeline` importable before --py-files arrive, so there the stock daemon stays.
LOCAL_CONF = {"spark.python.daemon.module": "pipeline.run.spark_daemon"}


def get_spark(app_name: str, extra_conf: dict[str, str] | None = None) -> SparkSession:
    """A session on SPARK_MASTER (default local[*]) unless spark-submit already chose a master."""
    conf = SparkConf()  # picks up spark-submit's --master and --conf
    builder = SparkSession.builder.appName(app_name)
    master = conf.get("spark.master", None) or os.environ.get("SPARK_MASTER", "local[*]")
    if not conf.contains("spark.master"):
        builder = builder.master(master)
    # Executors must run this interpreter (the project's venv), not whatever `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    defaults = {**DEFAULT_CONF, **(LOCAL_CONF if master.startswith("local") else {})}
    for key, value in {**defaults, **(extra_conf or {})}.items():
        if not conf.contains(key) or key in (extra_conf or {}):
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
    return spark


def _hadoop_path(spark: SparkSession, path: str):
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p, p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def write_parquet_atomic(spark: SparkSession, df: DataFrame, path: str) -> None:
    """Write to a sibling folder, then swap it in: a crash never leaves half a stage, a rerun never
    leaves stale shards of the previous run next to new ones."""
    tmp = path.rstrip("/") + ".__writing"
    df.write.mode("overwrite").option("compression", "zstd").parquet(tmp)
    final, fs = _hadoop_path(spark, path)
    staged, _ = _hadoop_path(spark, tmp)
    if fs.exists(final):
        fs.delete(final, True)
    fs.mkdirs(final.getParent())
    if not fs.rename(staged, final):
        raise IOError(f"could not move {tmp} to {path}")


def input_stats(df: DataFrame, bytes_col) -> tuple[int, int]:
    row = df.agg(F.count(F.lit(1)).alias("n"), F.sum(bytes_col).alias("b")).first()
    return int(row["n"]), int(row["b"] or 0)


def text_bytes(col: str = "text"):
    """UTF-8 size of a string column (length() counts characters, not bytes)."""
    return F.coalesce(F.octet_length(F.col(col)), F.lit(0))


def finish_stage(spark: SparkSession, stage: str, rows: DataFrame, data_dir: str, out_dir: str,
                 t0: float, input_desc: str, records_in: int | None = None, bytes_in: int | None = None,
                 shards: int | None = None, extra: dict | None = None) -> StageStats:
    """Split a stage's rows into kept documents and rejected/unreadable records, write both, and
    check the books: every input record must come out as exactly one row, no two kept rows may share
    an id, and the kept Parquet on disk must hold as many rows as were counted kept, or the stage fails.

    `records_in` is counted on the stage's input by the caller; the extract stage, whose input is
    files, passes None and every row it produced (one per record seen) counts as an input."""
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    out_path = os.path.join(data_dir, out_dir)
    rej_path = os.path.join(data_dir, "rejected", f"stage={stage}")
    try:
        # One pass over the stage's rows gives every count; the writes then read the cached rows.
        size = F.coalesce(F.col("payload_bytes"), F.lit(0)) if records_in is None else text_bytes()
        counts = rows.groupBy("status", "reason").agg(
            F.count(F.lit(1)).alias("n"), F.sum(size).alias("size"),
            F.sum(text_bytes()).alias("text_bytes"), F.count_distinct("id").alias("ids")).collect()
        if any(r["status"] == KEPT and r["ids"] != r["n"] for r in counts):  # one id, one row
            check_unique_ids_df(stage, rows.filter(F.col("status") == KEPT), f"its output {out_path}")
        if any(r["status"] != KEPT and r["ids"] != r["n"] for r in counts):  # in rejected/ too (within a reason)
            check_unique_ids_df(stage, rows.filter(F.col("status") != KEPT), f"its rejected rows {rej_path}")
        # Columns that only describe a drop (why, duplicate of what) stay with the rejected rows.
        kept = rows.filter(F.col("status") == KEPT).drop("status", "reason", "detail", "duplicate_of")
        if shards:
            # A fixed hash layout sorted by id: the same input gives the same rows in the same files
            # and order (not the same bytes: Spark's Parquet footers vary between JVMs).
            kept = kept.repartition(shards, "id").sortWithinPartitions("id")
        write_parquet_atomic(spark, kept, out_path)
        write_parquet_atomic(spark, rows.filter(F.col("status") != KEPT), rej_path)
    finally:
        rows.unpersist()

    records_out, bytes_out = 0, 0
    rejected: dict[str, int] = {}
    unreadable: dict[str, int] = {}
    for r in counts:
        if r["status"] == KEPT:
            records_out, bytes_out = int(r["n"]), int(r["text_bytes"] or 0)
        else:
            target = unreadable if r["status"] == UNREADABLE else rejected
            target[r["reason"] or "unknown"] = target.get(r["reason"] or "unknown", 0) + int(r["n"])
    if records_in is None:
        records_in = sum(int(r["n"]) for r in counts)
        bytes_in = sum(int(r["size"] or 0) for r in counts)
    written = spark.read.parquet(out_path).count()  # footers only: cheap
    if written != records_out:
        raise AccountingError(f"stage {stage}: counted {records_out} kept rows but {out_path} holds {written}")
    stats = StageStats(stage=stage, records_in=records_in, records_out=records_out,
                       rejected=dict(sorted(rejected.items())), unreadable=dict(sorted(unreadable.items())),
                       bytes_in=bytes_in or 0, bytes_out=bytes_out, wall_s=round(time.time() - t0, 2),
                       input=input_desc, output=out_path, extra=extra or {})
    stats.check()
    stats.write(data_dir)
    return stats


# ---- one id, one row at a size one process should not hold (pipeline/run/repeats.py does it below) ----------

def _ids_of_files(spark: SparkSession, files: list[str], places: list[int] | None = None) -> DataFrame:
    """(id, input_file, f: the file's place in `files` or `places[k]`, r: the row's place in its file). Files are
    matched by name (unit files are named uniquely in their folder), as Spark shows paths as URIs."""
    names = spark.createDataFrame(
        [(os.path.basename(p), k if places is None else places[k]) for k, p in enumerate(files)], "name string, f int")
    df = spark.read.parquet(*files)
    origin = F.col("input_file").cast("string") if "input_file" in df.columns else F.lit(None).cast("string")
    rows = df.select(F.col("id").cast("string").alias("id"), origin.alias("input_file"),
                     F.element_at(F.split("_metadata.file_path", "/"), -1).alias("name"),
                     F.col("_metadata.row_index").alias("r"))
    return rows.join(F.broadcast(names), "name").drop("name")


def later_copies_spark(spark: SparkSession, files: list[str]) -> dict[str, list[tuple[int, str, str | None]]]:
    """`later_copies` of pipeline/run/repeats.py as a Spark job: only the later copies reach the driver."""
    if not files:
        return {}
    order = Window.partitionBy("id").orderBy("f", "r")
    rows = (_ids_of_files(spark, files)
            .withColumn("_n", F.row_number().over(order))
            .withColumn("_origin", F.first("input_file").over(order))
            .where(F.col("_n") > 1).select("f", "r", "id", "_origin").collect())
    out: dict[str, list[tuple[int, str, str | None]]] = {}
    for row in rows:
        out.setdefault(files[row["f"]], []).append((int(row["r"]), row["id"], row["_origin"]))
    return {f: sorted(v) for f, v in out.items()}


def read_again_spark(spark: SparkSession, units: list[tuple[str, str | None]]) -> ReadAgain:
    """`read_again` of pipeline/run/repeats.py as a Spark job: only the rows it moves or leaves out reach the driver."""
    if not units:
        return ReadAgain()
    rejected = [(r, i) for i, (_, r) in enumerate(units) if r]
    rows = _ids_of_files(spark, [k for k, _ in units]).withColumn("kind", F.lit(0))
    if rejected:
        rows = rows.unionByName(_ids_of_files(spark, [r for r, _ in rejected], [i for _, i in rejected])
                                .withColumn("kind", F.lit(1)))
    many = rows.groupBy("id").count().where(F.col("count") > 1).select("id")
    rows = rows.join(many, "id", "left_semi")
    order = ("f", "kind", "r")
    whole = Window.partitionBy("id").orderBy(*order).rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    first_kept = F.first(F.when(F.col("kind") == 0, F.col("input_file")), ignorenulls=True)
    rows = (rows.withColumn("_nk", F.row_number().over(Window.partitionBy("id", "kind").orderBy(*order)))
            .withColumn("_origin", first_kept.over(whole))
            .withColumn("_cand", (F.col("kind") == 1) | (F.col("_nk") > 1)))  # a row that wants the id's rejected row
    rows = rows.withColumn("_nc", F.row_number().over(Window.partitionBy("id", "_cand").orderBy(*order)))
    moved = F.col("_cand") & ((F.col("_nc") > 1) | (F.col("kind") == 0))  # the first rejected row of an id stays
    found = rows.where(moved).select("id", "f", "r", "kind", "_origin", "_nc").collect()
    plan = ReadAgain()
    for row in found:
        file = units[row["f"]][row["kind"]]
        if row["_nc"] > 1:
            plan.left_out.setdefault(file, []).append(int(row["r"]))
        elif row["kind"] == 0:
            plan.repeated.setdefault(file, []).append((int(row["r"]), row["id"], row["_origin"]))
    return ReadAgain({k: sorted(v) for k, v in plan.repeated.items()}, {k: sorted(v) for k, v in plan.left_out.items()})


def repeated_ids_spark(spark: SparkSession, files: list[str], limit: int = EXAMPLES) -> dict[str, int]:
    """A few ids that occur in more than one row of `files` (empty: one id, one row)."""
    if not files:
        return {}
    found = (spark.read.parquet(*files).groupBy("id").count().where(F.col("count") > 1)
             .orderBy("id").limit(limit).collect())
    return {r["id"]: int(r["count"]) for r in found}


def check_unique_ids_df(stage: str, kept: DataFrame, where: str) -> None:
    """The same check on a DataFrame of kept rows (the distributed dedup path, before it writes)."""
    found = kept.groupBy("id").count().where(F.col("count") > 1).orderBy("id").limit(EXAMPLES).collect()
    check_unique(stage, {r["id"]: int(r["count"]) for r in found}, where)
