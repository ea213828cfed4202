"""Incremental dedup through the dedup stage on Spark: an index in an object store serves as one on disk, and
a killed incremental `clean-dedup` resumes to the uninterrupted result, leaving meanwhile nothing a later
crawl could take for a finished index; its distributed dedup path decides as the no-Spark one."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from bench.incremental_dedup import crawls, write_scored
from jobs import dedup
from pipeline.config import ConfigError, parse_config
from pipeline.dedup.index import INDEX_DIR, MANIFEST
from pipeline.read.ids import doc_id
from tests.conftest import REPO
from tests.pipeline.dedup.test_dedup_local import _parts, _rejected, _stats
from tests.pipeline.dedup.test_incremental_dedup import dedup as local_dedup, removed
from tests.s3_fixtures import s3_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.spark


def _config(against: list, local_max_bytes: int, **dedup_settings):
    return parse_config({"sources": {"web": {"format": "jsonl", "paths": [str(REPO / "examples" / "sample" / "jsonl" / "*")]}},
                         "dedup": {"shards": 2, "against": [str(a) for a in against], "local_max_bytes": local_max_bytes,
                                   **dedup_settings}})


def _index_rows(data: Path) -> list[tuple]:
    t = ds.dataset(str(data / INDEX_DIR), format="parquet").to_table()
    return sorted((r["id"], r["source"], r["exact_hash"], tuple(r["bands"] or ()), r["shingles"]) for r in t.to_pylist())


@pytest.fixture(scope="module")
def old_and_new(tmp_path_factory):
    root = tmp_path_factory.mktemp("inc-spark")
    old, new = crawls(60, 8, seed=11)
    # A's ids as the extract stage gives a JSONL line {"id": ..., "text": ...} of source web: B's re-fetched
    # records, read from JSONL, then have A's ids
    old = [{**d, "id": doc_id("web", d["id"], content=d["text"])} for d in old]
    write_scored(old, root / "A")
    local_dedup(root / "A")
    return root, old, new


def test_an_index_in_an_object_store(old_and_new, s3_server, tmp_path, monkeypatch):  # noqa: F811
    """The old corpus's index uploaded to a bucket (a "named index"): checked and read as one on disk."""
    root, _, new = old_and_new
    index = root / "A" / INDEX_DIR
    s3_server.upload("corpora", {f"cc-a/{p.name}": p for p in index.iterdir()})
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    cfg = _config(["s3://corpora/cc-a"], 64 << 20)
    assert cfg.dedup.against == ["s3://corpora/cc-a"]
    with pytest.raises(ConfigError, match="s3://corpora/nothing: not a Glassbox corpus"):
        _config(["s3://corpora/nothing"], 64 << 20)
    write_scored(new, tmp_path / "disk")
    local_dedup(tmp_path / "disk", [root / "A"])
    from pipeline.dedup.index import key_settings, open_index
    from pipeline.dedup.local import dedup_files
    write_scored(new, tmp_path / "store")
    data = tmp_path / "store"
    dedup_files(sorted(str(p) for p in (data / "scored").glob("*.parquet")), str(data / "dedup"),
                str(data / "rejected" / "stage=dedup"), True, cfg.dedup.near, 2,
                against=[open_index("s3://corpora/cc-a", key_settings(cfg.dedup))])
    got, want = removed(data), removed(tmp_path / "disk")
    assert got and {i: d for i, (_, d) in got.items()} == {i: d for i, (_, d) in want.items()}


@pytest.mark.slow
def test_a_killed_incremental_run_resumes_to_the_uninterrupted_result(spark, old_and_new, tmp_path):
    """`make clean-dedup`'s chain on a JSONL crawl against A, on the distributed dedup path, SIGKILLed once its
    dedup stage runs: A is untouched, the new corpus has no index a later crawl could use (refused, with what
    to do), and the same command again skips extract, clean and score and ends with what the no-Spark path
    makes of the same scored/ (the same files, rejected rows, stats and index: both paths decide alike)."""
    from jobs import clean_dedup
    from pipeline.config import load_config
    from pipeline.run.runner import Runner

    root, _, new = old_and_new
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text("".join(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in new))
    config = tmp_path / "b.yaml"
    config.write_text(json.dumps({"sources": {"web": {"format": "jsonl", "paths": [str(crawl)]}},
                                  "clean": {"languages": None, "rules": []}, "score": {"min_quality": 0.0},
                                  "dedup": {"shards": 2, "against": [str(root / "A")], "local_max_bytes": 0,
                                            "near": {"max_bucket": 30}}}))
    data, log = tmp_path / "B", tmp_path / "run.log"
    before = sorted((p, p.stat().st_mtime_ns) for p in (root / "A").rglob("*"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable, "SPARK_MASTER": "local[2]",
           "SPARK_LOCAL_IP": "127.0.0.1", "GLASSBOX_PROGRESS_S": "1"}
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "jobs.clean_dedup", "--config", str(config), "--data", str(data)],
                                cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 600
    while "dedup: running" not in log.read_text():
        assert proc.poll() is None, log.read_text()[-3000:]
        assert time.time() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert not (data / INDEX_DIR / MANIFEST).exists()
    with pytest.raises(ConfigError, match="dedup index|half-written"):
        _config([data], 64 << 20)
    assert sorted((p, p.stat().st_mtime_ns) for p in (root / "A").rglob("*")) == before

    cfg = load_config(config)
    runner = Runner(spark, cfg, str(data))
    for spec in clean_dedup.STAGES:
        runner.run(spec)
    assert [o.status for o in runner.outcomes] == ["skipped", "skipped", "skipped", "ran"]
    assert runner.outcomes[-1].stats.extra["path"] == "distributed"
    _config([data], 64 << 20)  # now an index a later crawl can use

    expected = tmp_path / "expected"
    (expected / "scored").mkdir(parents=True)
    for f in (data / "scored").glob("*.parquet"):
        pq.write_table(pq.read_table(f), expected / "scored" / f.name)
    assert dedup.run(spark, _config([root / "A"], 64 << 20, near={"max_bucket": 30}), str(expected)).extra["path"] == "local"
    assert _parts(data / "dedup") == _parts(expected / "dedup")
    assert _rejected(data) == _rejected(expected)
    a, b = _stats(data), _stats(expected)
    assert a["extra"].pop("path") == "distributed" and b["extra"].pop("path") == "local"
    assert a == b and set(a["rejected"]) == {"repeated_record", "exact_duplicate", "near_duplicate"}, a
    assert _index_rows(data) == _index_rows(expected) and len(_index_rows(data)) == a["records_out"]
    manifests = [json.loads((d / INDEX_DIR / MANIFEST).read_text()) for d in (data, expected)]
    assert manifests[0]["settings"] == manifests[1]["settings"] and manifests[0]["against"] == manifests[1]["against"]
    print(a["rejected"], a["extra"]["against"])
