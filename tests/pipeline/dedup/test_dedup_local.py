"""The dedup stage's local path (pipeline/dedup/local.py, one Spark task) against its distributed path
(jobs/dedup.py with dedup.local_max_bytes 0) on the same scored/ input: the same kept rows in the same
dedup/ part files and order, the same rejected rows with the same reasons, the same stats."""
import dataclasses
import json
import os
import random
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.near_dedup import planted_corpus
from jobs import dedup
from pipeline.config import load_config
from pipeline.run.spark_layout import spark_partition_of, spark_string_hash
from tests.conftest import REPO

pytestmark = pytest.mark.spark


def test_spark_string_hash_matches_spark(spark):
    from pyspark.sql import functions as F

    rng = random.Random(3)
    alphabet = "abcXYZ09 .-_é字ß€😀\u0301"
    strings = ["a" * n for n in range(41)] + ["".join(rng.choice(alphabet) for _ in range(n)) for n in range(41)]
    got = spark_string_hash([s.encode("utf-8") for s in strings]).tolist()
    rows = spark.createDataFrame([(i, s) for i, s in enumerate(strings)], "i int, s string")
    want = [r["h"] for r in rows.select("i", F.hash("s").alias("h")).orderBy("i").collect()]
    assert got == want
    # the partition repartition(n, "s") picks: pmod(hash, n); spark_partition_id() reads it back
    placed = rows.repartition(5, "s").select("i", F.spark_partition_id().alias("p")).orderBy("i").collect()
    assert spark_partition_of(strings, 5).tolist() == [r["p"] for r in placed]


def test_which_path(tmp_path):
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["x" * 3000, "y" * 3000]}), tmp_path / "part-0.parquet")
    files = [str(tmp_path / "part-0.parquet")]
    assert dedup.takes_local_path(_config(64 << 20), files)
    assert not dedup.takes_local_path(_config(0), files)      # 0: always distributed
    assert not dedup.takes_local_path(_config(1000), files)   # more text than the limit
    assert not dedup.takes_local_path(_config(64 << 20), [])  # nothing to read: the distributed path says so
    semantic = dataclasses.replace(_config(0).dedup.semantic, enabled=True)
    assert not dedup.takes_local_path(_config(64 << 20, semantic=semantic), files)


def test_the_path_threshold_is_not_part_of_the_stage_identity():
    """Both paths write the same files, so a changed local_max_bytes must not rerun a finished dedup;
    a setting that changes the output does."""
    from jobs.dedup import SPEC as DEDUP
    from pipeline.run.runner import fingerprint
    ident = lambda cfg: fingerprint(DEDUP.identity(cfg))
    assert ident(_config(0)) == ident(_config(64 << 20)) == ident(_config(1))
    assert ident(_config(0)) != ident(_config(0, shards=_config(0).dedup.shards + 1))


def _config(local_max_bytes: int, **dedup_changes):
    cfg = load_config(REPO / "examples" / "sample.yaml", base=REPO)
    return dataclasses.replace(cfg, dedup=dataclasses.replace(cfg.dedup, local_max_bytes=local_max_bytes,
                                                              **dedup_changes))


def _parts(folder) -> dict[str, tuple[list[str], list[dict]]]:
    """part number -> its columns and its rows in file order (Spark names files part-NNNNN-<uuid>-c000...,
    the local path part-NNNNN...)."""
    tables = {f[:len("part-00000")]: pq.read_table(os.path.join(folder, f))
              for f in sorted(os.listdir(folder)) if f.startswith("part-")}
    return {k: (t.column_names, t.to_pylist()) for k, t in tables.items()}


def _rejected(data) -> dict[str, dict]:
    rows = pq.read_table(os.path.join(data, "rejected", "stage=dedup")).to_pylist()
    return {r["id"]: r for r in rows}


def _stats(data) -> dict:
    stats = json.loads((data / "stats" / "dedup.json").read_text())
    for key in ("wall_s", "input", "output"):
        stats.pop(key)
    return stats


def _both_paths(spark, scored_files, tmp_path, **dedup_changes):
    """Run the stage on a copy of `scored_files` both ways; returns (local data dir, distributed data dir)."""
    dirs = []
    for name, limit in (("local", 64 << 20), ("distributed", 0)):
        data = tmp_path / name
        (data / "scored").mkdir(parents=True)
        for f in scored_files:
            shutil.copy(f, data / "scored")
        stats = dedup.run(spark, _config(limit, **dedup_changes), str(data))
        assert stats.extra["path"] == name
        dirs.append(data)
    return dirs


def _assert_same(local, distributed):
    assert _parts(local / "dedup") == _parts(distributed / "dedup")
    assert _rejected(local) == _rejected(distributed)
    a, b = _stats(local), _stats(distributed)
    assert a["extra"].pop("path") == "local" and b["extra"].pop("path") == "distributed"
    assert a == b


def test_local_path_equals_distributed_on_the_sample(spark, sample_local_run, tmp_path):
    data, proc = sample_local_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((data / "stats" / "dedup.json").read_text())["extra"]["path"] == "local"
    scored = sorted((data / "scored").glob("*.parquet"))
    local, distributed = _both_paths(spark, scored, tmp_path)
    _assert_same(local, distributed)
    # the make run (its own JVM, the runner around the stage) wrote the same too
    assert _parts(data / "dedup") == _parts(local / "dedup")
    assert _rejected(data) == _rejected(local)
    assert sum(_stats(local)["rejected"].values()) > 0


def test_local_path_equals_distributed_on_planted_near_duplicates(spark, tmp_path):
    docs, _ = planted_corpus(400, seed=5)
    rng = random.Random(5)
    rows = []
    for i, d in enumerate(docs):
        # two sources (scope), qualities with nulls (survivor choice)
        rows.append({"id": d["id"], "source": "web" if i % 5 else "books", "text": d["text"],
                     "quality_ft": None if i % 7 == 0 else round(rng.random(), 3)})
    for d in rows[:30:3]:  # exact copies under other ids
        rows.append({**d, "id": "copy-" + d["id"], "text": d["text"].upper() + " !"})
    for size, base in ((26, rows[1]), (45, rows[2])):  # templates: buckets past 20 (stars), past 30 (capped)
        rows += [{**base, "id": f"t{size}-{k:03d}", "text": f"{base['text']} item {k} of {size}",
                  "quality_ft": round(rng.random(), 3)} for k in range(size)]
    rng.shuffle(rows)
    src = tmp_path / "in"
    src.mkdir()
    for k in range(3):
        pq.write_table(pa.Table.from_pylist(rows[k::3]), src / f"part-{k}.parquet")
    near_cfg = dataclasses.replace(_config(0).dedup.near, max_bucket=30)
    local, distributed = _both_paths(spark, sorted(src.glob("*.parquet")), tmp_path, near=near_cfg)
    _assert_same(local, distributed)
    stats = _stats(local)
    near = stats["extra"]["near"]
    print(stats)
    assert stats["rejected"]["exact_duplicate"] == 10
    assert near["removed"] > 50 and near["capped_buckets"] > 0
