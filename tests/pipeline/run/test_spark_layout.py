"""Spark's hashes in numpy (pipeline/run/spark_layout.py) against Spark's own: the local paths write what Spark
would write only if these agree bit for bit. (The Murmur3 `hash()` is checked in tests/pipeline/dedup/test_dedup_local.py.)"""
import random

import pytest

from pipeline.run.spark_layout import hash_layout, spark_partition_of, spark_xxhash64

pytestmark = pytest.mark.spark


def test_xxhash64_of_a_literal_and_a_string_matches_spark(spark):
    from pyspark.sql import functions as F

    rng = random.Random(5)
    alphabet = "abcXYZ09 .-_é字ß€😀\u0301"
    # every tail of XXH64 (stripes of 32 bytes, 8- and 4-byte words, single bytes) and non-ASCII text
    strings = ["a" * n for n in range(70)] + ["".join(rng.choice(alphabet) for _ in range(n)) for n in range(70)]
    rows = spark.createDataFrame([(i, s) for i, s in enumerate(strings)], "i int, s string")
    for first in (0, 7, 1234, -5, 2**31 - 1, 2**31, -(2**40)):   # an int literal, and longs beyond the int range
        want = [r["h"] for r in rows.select("i", F.xxhash64(F.lit(first), "s").alias("h")).orderBy("i").collect()]
        assert spark_xxhash64(first, strings).tolist() == want, first


def test_hash_layout_is_spark_repartition_sorted_by_id():
    ids = [f"{random.Random(k).getrandbits(64):016x}" for k in range(200)]
    order, spans = hash_layout(ids, 3)
    part = spark_partition_of(ids, 3)
    assert sorted(order) == list(range(200))
    for p, (name, lo, hi) in enumerate(spans):
        rows = order[lo:hi]
        assert name == f"part-{p:05d}.zstd.parquet" and {int(part[r]) for r in rows} == {p}
        assert [ids[r] for r in rows] == sorted(ids[r] for r in rows)
    assert hash_layout([], 4) == ([], [("part-00000.zstd.parquet", 0, 0)])
