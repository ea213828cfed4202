"""`make clean-dedup` SIGKILLed (its whole process group) mid-extract and again mid-dedup, then run
again with the same command: the result equals an uninterrupted run's (same kept ids, same rejected
ids with the same reasons, same stats totals), finished units are reused and finished stages skipped.

The interrupted run reads its inputs from an object store (s3:// paths on moto's S3 server on
127.0.0.1), in byte ranges, while the uninterrupted one read the local files whole: the same result
also shows that neither where the files are nor how they are cut changes any id."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from tests.conftest import make
from tests.s3_fixtures import s3_server, sample_bucket, sample_config  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow


def corpus_result(data: Path) -> dict:
    """What must not depend on how the run went: ids kept, ids dropped and why, every stage's books."""
    kept = ds.dataset(str(data / "dedup"), format="parquet").to_table(columns=["id"]).column("id").to_pylist()
    rej = ds.dataset(str(data / "rejected"), format="parquet", partitioning="hive").to_table(
        columns=["id", "stage", "reason"]).to_pylist()
    totals = {}
    for stage in ("extract", "clean", "score", "dedup"):
        s = json.loads((data / "stats" / f"{stage}.json").read_text())
        totals[stage] = {k: s[k] for k in ("records_in", "records_out", "rejected", "unreadable", "bytes_out")}
    return {"kept": sorted(kept), "rejected": sorted((r["stage"], r["id"], r["reason"]) for r in rej),
            "totals": totals}


def _start(config: Path, data: Path, log: Path, env: dict) -> subprocess.Popen:
    fh = open(log, "a")
    # Its own session: the process group is make, spark-submit, the JVM and the Python driver.
    return make("clean-dedup", f"CONFIG={config}", f"DATA={data}", "SPARK_MASTER=local[2]",
                env_extra={**env, "GLASSBOX_PROGRESS_S": "2"}, stdout=fh, stderr=subprocess.STDOUT,
                start_new_session=True)


def _kill_group_when(proc: subprocess.Popen, ready, what: str, timeout: float = 600) -> None:
    deadline = time.time() + timeout
    while not ready():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def _markers(data: Path) -> list[Path]:
    d = data / "_work" / "extract" / "units"
    return list(d.glob("*.json")) if d.is_dir() else []


def test_killed_run_resumes_to_the_uninterrupted_result(sample_local_run, sample_bucket, tmp_path):  # noqa: F811
    reference, proc = sample_local_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # The sample in the store, with small ranges so that its big WARCs are many units.
    config = sample_config(tmp_path / "sample-s3.yaml", "s3://sample/crawl/*.warc.gz",
                           "s3://sample/dumps/*.json.gz", extra="  split_bytes: 65536\n")
    env = sample_bucket.env()
    data, log = tmp_path / "data", tmp_path / "run.log"

    # 1. killed mid-extract: some units finished, the stage not.
    run = _start(config, data, log, env)
    _kill_group_when(run, lambda: len(_markers(data)) >= 1, "the first finished extract unit")
    finished = len(_markers(data))
    assert not (data / "_state" / "extract.json").exists()

    # 2. the same command again, killed mid-dedup.
    log.write_text("")
    run = _start(config, data, log, env)
    _kill_group_when(run, lambda: "dedup: running" in log.read_text(), "the dedup stage")
    out = log.read_text()
    assert "units finished earlier with the same inputs and config, reused" in out, out[-3000:]
    extract_stats = json.loads((data / "stats" / "extract.json").read_text())
    units, reused = extract_stats["extra"]["units"], extract_stats["extra"]["units_reused"]
    assert finished <= reused < units, (finished, reused, units)
    assert "[extract]" in out and "docs/s" in out  # progress lines while units ran

    # 3. again: the finished stages are skipped, dedup runs whole from scored/.
    log.write_text("")
    run = _start(config, data, log, env)
    assert run.wait(timeout=900) == 0, log.read_text()[-4000:]
    out = log.read_text()
    for stage in ("extract", "clean", "score"):
        assert f"{stage}: finished earlier with the same inputs and config; skipped" in out
    assert "dedup    ran" in out
    assert corpus_result(data) == corpus_result(reference)
    assert not (data / "_work").exists()
    files = set(ds.dataset(str(data / "extracted"), format="parquet").to_table(columns=["input_file"])
                .column("input_file").to_pylist())
    assert files and all(f.startswith("s3://sample/") for f in files)

    # 4. a finished run again: nothing to do, Spark does not even start.
    rerun = make("clean-dedup", f"CONFIG={config}", f"DATA={data}", "SPARK_MASTER=local[2]", env_extra=env)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert rerun.stdout.count("skipped (") == 4 and "no Spark: nothing to do" in rerun.stdout
    print(f"extract units: {units}, finished before the kill: {finished}, reused: {reused}")
