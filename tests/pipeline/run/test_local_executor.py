"""Small jobs without the JVM (pipeline/run/local.py): the choice, the stand-in scheduler, and the demo's config
run both ways, compared file by file."""
from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.config import load_config
from pipeline.run.local import PRELOAD, LocalSession, choose_executor, master_cores

REPO = Path(__file__).resolve().parents[3]


def test_master_cores():
    assert master_cores("local") == 1
    assert master_cores("local[3]") == 3
    assert master_cores("local[*]") == (os.cpu_count() or 1)
    assert master_cores("local[2, 4]") == 2
    assert master_cores("spark://127.0.0.1:7077") is None


def test_choice_and_its_reason():
    cfg = load_config(REPO / "examples" / "sample.yaml")
    kind, why = choose_executor(cfg, {})
    assert kind == "local" and "no JVM" in why
    assert choose_executor(cfg, {"GLASSBOX_LOCAL_MAX_BYTES": "1000"})[0] == "spark"
    assert choose_executor(cfg, {"GLASSBOX_EXECUTOR": "spark"}) == ("spark", "EXECUTOR=spark asked for it")
    assert choose_executor(cfg, {"GLASSBOX_EXECUTOR": "local", "GLASSBOX_LOCAL_MAX_BYTES": "1000"})[0] == "local"
    assert choose_executor(cfg, {"SPARK_MASTER": "spark://h:7077"})[0] == "spark"
    semantic = types.SimpleNamespace(**{**vars(cfg), "dedup": types.SimpleNamespace(
        local_max_bytes=cfg.dedup.local_max_bytes, semantic=types.SimpleNamespace(enabled=True))})
    # semantic dedup is a Spark job of the dedup stage alone: the stages before it still run without the JVM
    kind, why = choose_executor(semantic, {})
    assert kind == "local" and "no JVM before the dedup stage; dedup starts Spark for its semantic step" in why, why
    distributed = types.SimpleNamespace(**{**vars(cfg), "dedup": types.SimpleNamespace(
        local_max_bytes=0, semantic=types.SimpleNamespace(enabled=False))})
    assert "dedup starts Spark for its distributed path" in choose_executor(distributed, {})[1]
    assert choose_executor(semantic, {"SPARK_MASTER": "spark://h:7077"})[0] == "spark"
    with pytest.raises(ValueError, match="GLASSBOX_EXECUTOR"):
        choose_executor(cfg, {"GLASSBOX_EXECUTOR": "yarn"})


def _square_all(it):
    return [x * x for x in it]


def test_tasks_in_local_processes_as_spark_runs_them():
    from pyspark import cloudpickle

    started = []
    session = LocalSession(2, lambda: started.append(1), cloudpickle.dumps)
    try:
        sc = session.sparkContext
        acc = sc.accumulator(0)

        def task(items):
            out = []
            for x in items:
                acc.add(x)
                out.append((x, os.getpid()))
            return out
        got = sc.parallelize(list(range(10)), 4).mapPartitions(task).collect()
        assert [x for x, _ in got] == list(range(10))      # partition order, as Spark's collect
        assert acc.value == 45                              # additions come back with each task
        assert os.getpid() not in {p for _, p in got}      # more than one partition: in the pool
        assert sc.parallelize([3], 1).map(lambda x: x + 1).collect() == [4]   # one task: in this process
        assert sc.parallelize([1, 2, 3], 2).mapPartitions(_square_all).collect() == [1, 4, 9]
        with pytest.raises(ZeroDivisionError):
            sc.parallelize([0, 1], 2).map(lambda x: 1 / x).collect()
        assert not started                                  # nothing asked for a real session
        # imported before the fork, not once per worker on its first unit (issue 42: a small command's fixed cost)
        assert sc.parallelize([0, 1], 2).map(lambda _: all(m in sys.modules for m in PRELOAD)).collect() == [True] * 2
    finally:
        session.stop()


# ---- the demo's config both ways -------------------------------------------------------------------------

_VARYING = {"wall_s", "finished_at", "written_at", "input", "output", "driver_started_at", "config_checked_at",
            "session_s", "master", "executor", "executor_reason", "stages"}


def _plain(obj, data: str):
    if isinstance(obj, dict):
        return {k: _plain(v, data) for k, v in obj.items() if k not in _VARYING}
    if isinstance(obj, list):
        return [_plain(v, data) for v in obj]
    return obj.replace(data, "DATA") if isinstance(obj, str) else obj


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not str(p.relative_to(root)).startswith("spark-events"))


def _demo_config(tmp_path: Path) -> Path:
    """The demo's config, its paths made absolute, with a per-page deadline no loaded machine reaches: a page that
    ran past 10 s on one run and not on the other would be a difference of the machine's load, not of the path."""
    text = (REPO / "examples" / "sample.yaml").read_text()
    assert "timeout_s: 10 " in text
    text = text.replace("timeout_s: 10 ", "timeout_s: 900 ")
    for folder in ("examples/", "quality_models/"):
        text = text.replace(f'"{folder}', f'"{REPO}/{folder}').replace(f" {folder}", f" {REPO}/{folder}")
    config = tmp_path / "sample.yaml"
    config.write_text(text)
    return config


@pytest.mark.slow
def test_demo_config_both_ways_writes_the_same_files(tmp_path):
    from conftest import make

    config = _demo_config(tmp_path)
    local, spark_data = tmp_path / "local", tmp_path / "spark"
    run = make("clean-dedup", f"CONFIG={config}", f"DATA={local}", "SPARK_MASTER=local[2]")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "executor: local Python processes x2, no JVM" in run.stdout
    run = make("clean-dedup", f"CONFIG={config}", f"DATA={spark_data}", "SPARK_MASTER=local[2]", "EXECUTOR=spark")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "executor: Spark (EXECUTOR=spark asked for it)" in run.stdout
    assert list((spark_data / "spark-events").iterdir()), "no Spark event log written"

    runs = {k: json.loads((d / "stats" / "run.json").read_text()) for k, d in (("local", local), ("spark", spark_data))}
    assert runs["local"]["executor"] == "local" and "no JVM needed" in runs["local"]["executor_reason"]
    assert runs["spark"]["executor"] == "spark" and runs["spark"]["master"] == "local[2]"

    names = _files(local)
    assert names == _files(spark_data)
    assert any(n.startswith("dedup_index/") for n in names) and any(n.startswith("rejected/") for n in names)
    for name in names:
        a, b = local / name, spark_data / name
        if name.endswith(".parquet"):
            ta, tb = pq.read_table(a), pq.read_table(b)
            assert ta.schema.equals(tb.schema) and ta.equals(tb), name   # same rows, same order, same file
        elif name.endswith(".json"):   # fingerprints included: a run begun one way resumes the other
            assert _plain(json.loads(a.read_text()), str(local)) == _plain(json.loads(b.read_text()), str(spark_data)), name
        else:
            assert a.read_bytes() == b.read_bytes(), name


# ---- incremental dedup as a whole command (issue 42) ------------------------------------------------------

def test_incremental_command_runs_without_the_jvm_and_decides_as_the_full_run(tmp_path, monkeypatch):
    """`make clean-dedup` of a new crawl B with `dedup.against: [A]` takes the local executor (the choice counts
    B's input files, not A, whose index the dedup stage reads a file at a time) and starts no Spark at any stage;
    its decisions on B are those of the whole command over A and B together from scratch, where that run ranks
    A's documents first too (bench/incremental_whole.py's check: no classifier scores, A's ids sorting first)."""
    sys.path.insert(0, str(REPO))
    from bench.incremental_dedup import agreement, crawls, decisions
    from bench.incremental_whole import ground_ids, write_config, write_jsonl
    from jobs import clean_dedup

    old, new = crawls(40, 10, seed=3)
    again = {d["id"] for d in new if d["id"].startswith("a")}
    ground_ids(old, old=True)
    ground_ids([d for d in new if d["id"] not in again], old=False)
    first = {d["id"]: d for d in old}
    for d in new:
        if d["id"] in again:   # a record of A fetched again: its id and text
            d["sid"], d["did"] = first[d["id"]]["sid"], first[d["id"]]["did"]
    write_jsonl(old, tmp_path / "in" / "A")
    write_jsonl(new, tmp_path / "in" / "B")
    cfg = {name: write_config(tmp_path / f"{name}.yaml", [tmp_path / "in" / f for f in folders], against, False)
           for name, folders, against in (("a", "A", []), ("b", "B", [tmp_path / "A"]), ("full", "AB", []))}

    monkeypatch.chdir(REPO)
    for k, v in (("SPARK_MASTER", "local[2]"), ("GLASSBOX_EXECUTOR", "auto"), ("PYSPARK_SUBMIT_ARGS", "pyspark-shell")):
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("GLASSBOX_LOCAL_MAX_BYTES", raising=False)
    monkeypatch.setattr(clean_dedup, "get_spark", lambda *a, **k: pytest.fail("a Spark session was started"))
    monkeypatch.setattr(os, "execv", lambda *a: pytest.fail(f"spark-submit was chosen: {a}"))
    runs = {}
    for name, data in (("a", "A"), ("b", "B"), ("full", "full")):
        clean_dedup.main(["--config", str(cfg[name]), "--data", str(tmp_path / data), "--or-submit", "spark-submit"])
        runs[name] = json.loads((tmp_path / data / "stats" / "run.json").read_text())
        assert runs[name]["executor"] == "local" and runs[name]["master"].endswith("no JVM"), runs[name]
    dedup_b = json.loads((tmp_path / "B" / "stats" / "dedup.json").read_text())
    assert dedup_b["extra"]["path"] == "local"
    assert dedup_b["extra"]["against"]["indexes"] == [str(tmp_path / "A" / "dedup_index")]

    refetched = {d["did"] for d in new if d["id"] in again}
    inc, full = decisions(tmp_path / "B"), decisions(tmp_path / "full")
    ag = agreement(inc, full, {d["did"] for d in new} - refetched)
    assert ag["removed_incremental"] > 10 and (ag["precision"], ag["recall"], ag["pairs"]) == (1.0, 1.0, 1.0), ag
    assert refetched and refetched <= set(inc)   # A's records again: removed, never kept twice
