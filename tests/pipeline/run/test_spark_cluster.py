"""`make clean-dedup` on a real Spark standalone cluster (a master and two workers on 127.0.0.1), with
one worker killed while the dedup stage runs: the job must still finish, with the same kept ids and
the same rejected reasons as a local run of the same input."""
import json
import os
import signal
import socket
import subprocess
import time

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO, make

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _free_base_port() -> int:
    """A port P with P and P+1000..P+1002 free (master, its UI, two worker UIs)."""
    for base in range(7300, 7900, 7):
        ports = (base, base + 1000, base + 1001, base + 1002)
        try:
            socks = []
            for p in ports:
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports for a test cluster")


def _outcome(data):
    kept = sorted(pq.read_table(data / "dedup", columns=["id"]).column("id").to_pylist())
    rej = pq.read_table(data / "rejected", columns=["id", "reason"]).to_pylist()
    return kept, sorted((r["id"], r["reason"]) for r in rej)


def _lines(path):
    """An event log's lines; Spark 4 compresses event logs with zstd by default."""
    import pyarrow as pa

    codec = "zstd" if path.suffix == ".zstd" else None
    with pa.input_stream(str(path), compression=codec) as fh:
        return fh.read().decode("utf-8").splitlines()


@pytest.fixture
def cluster(tmp_path):
    port = _free_base_port()
    env = {"CLUSTER_DIR": str(tmp_path / "cluster"), "SPARK_CLUSTER_PORT": str(port)}
    up = make("spark-cluster", *(f"{k}={v}" for k, v in env.items()), timeout=300)
    try:
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        yield f"spark://127.0.0.1:{port}", tmp_path / "cluster"
    finally:
        make("spark-cluster-stop", f"CLUSTER_DIR={tmp_path / 'cluster'}", timeout=120)


def test_worker_killed_during_dedup(cluster, sample_local_run, tmp_path):
    master, cluster_dir = cluster
    local_data, local = sample_local_run
    assert local.returncode == 0, local.stderr[-3000:]
    data = tmp_path / "on-cluster"
    # The distributed dedup path (its shuffles are what a lost executor interrupts), not the one-task local one.
    config = tmp_path / "distributed.yaml"
    config.write_text((REPO / "examples" / "sample.yaml").read_text().replace("dedup:\n", "dedup:\n  local_max_bytes: 0\n", 1))
    log = open(tmp_path / "make.log", "w")
    proc = make("clean-dedup", f"CONFIG={config}", f"DATA={data}", f"SPARK_MASTER={master}", stdout=log,
                stderr=subprocess.STDOUT)
    victim = int((cluster_dir / "worker-1.pid").read_text())
    try:
        # The score stage's stats are written as the dedup stage starts, in the same application.
        deadline = time.time() + 900
        while not (data / "stats" / "score.json").exists():
            assert proc.poll() is None, (tmp_path / "make.log").read_text()[-3000:]
            assert time.time() < deadline, "the score stage never finished"
            time.sleep(0.2)
        assert not (data / "stats" / "dedup.json").exists()
        os.kill(victim, signal.SIGKILL)  # the worker JVM; its executor follows it down
        rc = proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    out = (tmp_path / "make.log").read_text()
    assert rc == 0, out[-4000:]
    with pytest.raises(ProcessLookupError):
        os.kill(victim, 0)
    # The application saw its executor go: the event log records the removal.
    # (Spark 4 writes a folder per application: eventlog_v2_<app>/events_<n>_<app>[.zstd])
    events = [json.loads(line) for f in (data / "spark-events").rglob("events_*") for line in _lines(f)]
    assert any(e["Event"] == "SparkListenerExecutorRemoved" for e in events), "no executor was lost"
    assert json.loads((data / "stats" / "dedup.json").read_text())["extra"]["path"] == "distributed"
    assert _outcome(data) == _outcome(local_data)
