"""What a dedup step decided, as a small table joined back onto the rows once.

A marks table has one row per document a step has something to say about: (id, reason, detail,
duplicate_of, minhash_cluster); reason null means "kept, but in a near-duplicate component" (only
minhash_cluster set). Applying marks is one join (the marks are small: broadcast) and one projection;
a chain of withColumn calls would make Spark analyse the whole plan again for every column.
"""
from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipeline.rows import BOOKKEEPING_COLUMNS, KEPT, REJECTED

MARK_COLUMNS = ("reason", "detail", "duplicate_of", "minhash_cluster")


def marks(df: DataFrame, reason, detail, duplicate_of, minhash_cluster=None) -> DataFrame:
    """A marks table over `df` (which has `id`): each argument a Column, a literal string or None."""
    def col(e):
        if e is None:
            return F.lit(None).cast("string")
        return F.lit(e) if isinstance(e, str) else e.cast("string")

    return df.select("id", *(col(e).alias(c) for c, e in zip(MARK_COLUMNS, (reason, detail, duplicate_of,
                                                                            minhash_cluster))))


def combine(*tables: DataFrame | None) -> DataFrame | None:
    """One marks table from several whose removals do not overlap (each step works on the survivors
    of the one before): per id, the non-null value of every column."""
    tables = [t for t in tables if t is not None]
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    return reduce(DataFrame.unionByName, tables).groupBy("id").agg(*(F.max(c).alias(c) for c in MARK_COLUMNS))


def apply_marks(rows: DataFrame, table: DataFrame | None) -> DataFrame:
    """`rows` with status, reason, detail, duplicate_of and minhash_cluster: a row with a marked
    reason becomes rejected with it; a row that arrives already rejected keeps what it had."""
    have = set(rows.columns)
    if table is None:
        joined = rows.select("*", *(F.lit(None).cast("string").alias("_m_" + c) for c in MARK_COLUMNS))
    else:
        joined = rows.join(table.select("id", *(F.col(c).alias("_m_" + c) for c in MARK_COLUMNS)), "id", "left")
    status = F.col("status") if "status" in have else F.lit(KEPT)
    hit = F.col("_m_reason").isNotNull() & (status == KEPT)
    new = {"status": F.when(hit, F.lit(REJECTED)).otherwise(status)}
    for c in MARK_COLUMNS:
        old = F.col(c) if c in have else F.lit(None).cast("string")
        new[c] = (F.coalesce(F.col("_m_" + c), old) if c == "minhash_cluster"
                  else F.when(hit, F.col("_m_" + c)).otherwise(old))
    order = [c for c in rows.columns] + [c for c in (*BOOKKEEPING_COLUMNS, "minhash_cluster") if c not in have]
    return joined.select(*(new[c].alias(c) if c in new else F.col(c) for c in order))
