"""A small Spark application that touches what the pipeline's jobs touch, run once by `make setup`
under `-XX:ArchiveClassesAtExit` to write build/spark-classes.jsa.

Why: a Spark driver loads and verifies some 10,000 classes at start, which costs about 15 s of CPU
on two cores before the first task runs, time taken from the Python workers. With the classes in a
class-data-sharing archive, the JVM maps them instead (measured: a trivial spark-submit 13.4 s ->
8.7 s wall, JVM CPU 16.3 s -> 8.8 s). The archive only speeds start-up: a JVM that cannot use it
(another Java build, another classpath) ignores it and runs as before.
"""
from __future__ import annotations

import os
import sys
import tempfile

from pyspark.sql import functions as F

from pipeline.run.spark import get_spark, write_parquet_atomic


def main() -> None:
    spark = get_spark("glassbox-class-archive")
    sc = spark.sparkContext
    counted = sc.accumulator(0)

    def unit(items):  # the runner's shape: a Python task per unit, counts back to the driver
        for x in items:
            counted.add(1)
            yield {"n": x}
    assert len(sc.parallelize(range(8), 4).mapPartitions(unit).collect()) == 8
    with tempfile.TemporaryDirectory() as tmp:
        df = spark.createDataFrame([(i % 3, f"doc {i}", float(i)) for i in range(200)], "k int, text string, v double")
        write_parquet_atomic(spark, df.repartition(2, "k").sortWithinPartitions("text"), os.path.join(tmp, "a"))
        back = spark.read.parquet(os.path.join(tmp, "a"))
        rows = back.groupBy("k").agg(F.count(F.lit(1)).alias("n"),
                                     F.percentile_approx("v", [0.3, 0.6], 100_000).alias("p")).collect()
        assert sum(r["n"] for r in rows) == 200
    spark.stop()
    print(f"class archive run: ok ({counted.value} items)", file=sys.stderr)


if __name__ == "__main__":
    main()
