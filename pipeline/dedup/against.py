"""A new crawl against corpora already built (`dedup.against`) on the distributed dedup path: the same
decisions as the no-Spark path (pipeline/dedup/earlier.py says which, in which order), as DataFrames.

The old indexes are read by the Python workers, one file per task, through the same reader as the
no-Spark path (local disk or an object store: Spark's own s3a connector is not needed). Only the old rows
that can meet a new document are kept: the same id, the same exact hash, or a band key in common.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.dedup.clusters import OLD_RANK
from pipeline.dedup.index import SCHEMA, IndexRef
from pipeline.dedup.marks import marks
from pipeline.read.storage import open_input
from pipeline.rows import EXACT_DUPLICATE, REPEATED_RECORD

_OLD = pa.schema(list(SCHEMA) + [pa.field("_where", pa.string())])
_OLD_SPARK = "id string, source string, exact_hash string, bands array<bigint>, shingles binary, _where string"


def _read_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: (path, where) rows in; every row of those index files out."""
    for batch in batches:
        for path, where in zip(batch.column("path").to_pylist(), batch.column("where").to_pylist()):
            with open_input(path) as fh:
                table = pq.ParquetFile(fh).read().cast(SCHEMA)
            table = table.append_column("_where", pa.array([where] * table.num_rows, pa.string()))
            yield from table.to_batches(max_chunksize=4096)


def old_rows(spark: SparkSession, indexes: list[IndexRef]) -> DataFrame:
    """Every document of the indexes: (id, source, exact_hash, bands, shingles, _where)."""
    files = [(path, ref.where) for ref in indexes for path in ref.files]
    listing = spark.createDataFrame(files, "path string, where string").repartition(max(1, len(files)))
    return listing.mapInArrow(_read_files, _OLD_SPARK)


def earlier_marks(rows: DataFrame, old: DataFrame, exact: bool) -> tuple[DataFrame, DataFrame | None]:
    """Marks tables (pipeline/dedup/marks.py) of this run's documents whose id an old corpus holds
    (repeated_record), and, with `exact`, of those whose exact hash one holds (exact_duplicate of the
    smallest old id with it)."""
    repeated = rows.select("id").join(old.select("id", "_where"), "id").dropDuplicates(["id"])
    again = marks(repeated, REPEATED_RECORD, F.concat(F.lit("the same record is in "), F.col("_where")), F.col("id"))
    if not exact:
        return again, None
    first = old.groupBy("exact_hash").agg(F.min("id").alias("_first"), F.min_by("_where", "id").alias("_w"))
    hit = (rows.join(repeated.select("id"), "id", "left_anti").select("id", "exact_hash")
           .join(first, "exact_hash"))
    return again, marks(hit, EXACT_DUPLICATE,
                        F.concat(F.lit("duplicate of "), F.col("_first"), F.lit(" in "), F.col("_w")), F.col("_first"))


def old_candidates(rows: DataFrame, old: DataFrame, by_source: bool) -> DataFrame:
    """The old documents that share a band key with any of this run's documents (in any scope, as the no-Spark
    path reads them), as sketch rows (id, _scope, _q, shingles, bands, _old) ranked above every new one; old
    documents with this run's ids are left out (the same records: repeated_record)."""
    keys = rows.select(F.explode("bands").alias("band")).distinct()
    olds = old.join(rows.select("id"), "id", "left_anti").select("id", "source", "bands", "shingles")
    hits = olds.select("id", F.explode("bands").alias("band")).join(keys, "band", "left_semi").select("id").distinct()
    scope = F.coalesce(F.col("source"), F.lit("")) if by_source else F.lit("*")
    return (olds.join(hits, "id", "left_semi")
            .select("id", scope.alias("_scope"), F.lit(OLD_RANK).alias("_q"), "shingles", "bands",
                    F.lit(True).alias("_old")))
