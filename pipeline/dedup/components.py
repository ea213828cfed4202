"""Connected components of an undirected graph held as a Spark DataFrame of edges (the plain-Python half,
`union_find` and `keep_best_first`, is pipeline/dedup/clusters.py: the no-Spark path uses it too).

Every node ends up pointing at the smallest id of its component. Ids are strings compared
lexicographically; the result depends only on the edge set, never on partitioning or task order.
`keep_best_first` then picks the documents to keep inside each component. Components, two ways, same
answer:
- `union_find`, plain Python, for a graph one task can hold (the usual near-duplicate graph: its edges
  are a fraction of the documents): the caller runs it in one executor task, one Spark stage instead
  of a dozen shuffles per iteration;
- `connected_components`, the large-star / small-star iteration (Kiveris et al., "Connected Components
  in MapReduce and Beyond", 2014) over the cluster: O(log n) iterations, no machine holds the graph.
Nothing but counts reaches the driver.
"""
from __future__ import annotations

import logging
from typing import Iterable

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


log = logging.getLogger(__name__)


def _oriented(edges: DataFrame) -> DataFrame:
    """(src, dst) with src > dst, no self loops, no duplicates."""
    return (edges.where(F.col("src") != F.col("dst"))
                 .select(F.greatest("src", "dst").alias("src"), F.least("src", "dst").alias("dst"))
                 .distinct())


def _large_star(e: DataFrame) -> DataFrame:
    """For every node u with m = min(N(u) ∪ {u}): connect each larger neighbour v > u to m."""
    both = e.unionByName(e.select(F.col("dst").alias("src"), F.col("src").alias("dst")))
    m = both.groupBy("src").agg(F.least(F.min("dst"), F.first("src")).alias("m"))
    return _oriented(both.join(m, "src").where(F.col("dst") > F.col("src"))
                         .select(F.col("dst").alias("src"), F.col("m").alias("dst")))


def _small_star(e: DataFrame) -> DataFrame:
    """For every node u with smaller neighbours N: connect N ∪ {u} to m = min(N)."""
    m = e.groupBy("src").agg(F.min("dst").alias("m"))  # e is oriented: every dst < src
    j = e.join(m, "src")
    return _oriented(j.select(F.col("dst").alias("src"), F.col("m").alias("dst"))
                      .unionByName(j.select("src", F.col("m").alias("dst"))))


def _cut(df: DataFrame, reliable: bool) -> DataFrame:
    """Materialize and drop the lineage: a real checkpoint when the caller set a checkpoint dir."""
    return df.checkpoint(eager=True) if reliable else df.localCheckpoint(eager=True)


# 2M edges of two 32-character ids: about 0.5 GB of Python objects in the one task that holds them.
def connected_components(edges: DataFrame, max_iterations: int = 100,
                         checkpoint_every: int = 2) -> tuple[DataFrame, int]:
    """`edges` has string columns src, dst. Returns ((id, component), iterations) by the
    large-star / small-star iteration: one row per node that appears in an edge, component = the
    smallest id of its component."""
    edges = edges.select(F.col("src").cast("string"), F.col("dst").cast("string"))
    spark = edges.sparkSession
    reliable = spark.sparkContext.getCheckpointDir() is not None
    e = _cut(_oriented(edges), reliable)
    iterations = 0
    while True:
        iterations += 1
        if iterations > max_iterations:
            raise RuntimeError(f"connected components did not converge in {max_iterations} iterations")
        new = _small_star(_large_star(e))
        new = (_cut(new, reliable) if iterations % checkpoint_every == 0
               else new.persist(StorageLevel.MEMORY_AND_DISK))
        # Edges present in one set and not the other; 0 means a fixed point (every component a star).
        changed = (new.withColumn("_n", F.lit(True))
                      .join(e.withColumn("_o", F.lit(True)), ["src", "dst"], "full_outer")
                      .where(F.col("_n").isNull() | F.col("_o").isNull()).count())
        log.info("connected components: iteration %d, %d edges changed", iterations, changed)
        e.unpersist()
        e = new
        if changed == 0:
            break
    labels = e.select(F.col("src").alias("id"), F.col("dst").alias("component")).unionByName(
        e.select(F.col("dst").alias("id"), F.col("dst").alias("component"))).distinct()
    return labels, iterations
