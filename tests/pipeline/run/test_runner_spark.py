"""The stage runner on a real local Spark session: finished unchanged stages are skipped, a config
change reruns the stage it touches and those after it, FRESH starts over, a stage interrupted at
commit time finishes its commit, and the books of a stage come from its units' markers."""
import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from jobs import clean, extract
from pipeline.config import parse_config
from pipeline.run.runner import COMMITTING, Runner, StageContext
from tests.conftest import REPO

pytestmark = pytest.mark.spark
SAMPLE = REPO / "examples" / "sample"


def _cfg(**sections):
    raw = {"sources": {"web": {"format": "warc", "paths": [str(SAMPLE / "whirlwind.warc.gz"),
                                                          str(SAMPLE / "IAH-urls-wget.warc.gz")]},
                       "cc": {"format": "jsonl", "paths": [str(SAMPLE / "jsonl" / "*.json.gz")]}}}
    raw.update(sections)
    return parse_config(raw)


def _run(spark, cfg, data, fresh=False):
    lines = []
    runner = Runner(spark, cfg, str(data), fresh=fresh, log=lines.append)
    statuses = [runner.run(spec).status for spec in (extract.SPEC, clean.SPEC)]
    return statuses, lines, runner


def test_skip_invalidate_and_fresh(spark, tmp_path):
    data = tmp_path / "data"
    assert _run(spark, _cfg(), data)[0] == ["ran", "ran"]
    first = json.loads((data / "stats" / "clean.json").read_text())
    statuses, lines, runner = _run(spark, _cfg(), data)
    assert statuses == ["skipped", "skipped"]
    assert any("extract: finished earlier with the same inputs and config; skipped" in l for l in lines)
    assert "skipped" in runner.table()
    # A clean setting changes: extract stays, clean reruns (and its result follows the setting).
    statuses, _, _ = _run(spark, _cfg(clean={"min_lang_score": 0.99}), data)
    assert statuses == ["skipped", "ran"]
    assert json.loads((data / "stats" / "clean.json").read_text())["records_out"] < first["records_out"]
    # An extract setting changes: both rerun (clean's input changed with it).
    assert _run(spark, _cfg(extract={"timeout_s": 20}), data)[0] == ["ran", "ran"]
    # FRESH: everything reruns, even unchanged.
    statuses, lines, _ = _run(spark, _cfg(extract={"timeout_s": 20}), data, fresh=True)
    assert statuses == ["ran", "ran"] and lines[0].startswith("FRESH")
    assert json.loads((data / "stats" / "clean.json").read_text())["records_out"] == first["records_out"]
    assert not (data / "_work").exists()


def test_books_and_files_come_from_units(spark, tmp_path):
    data = tmp_path / "data"
    _run(spark, _cfg(extract={"split_bytes": 8000}), data)
    s = json.loads((data / "stats" / "extract.json").read_text())
    assert s["extra"]["units"] > 3 and s["extra"]["units_reused"] == 0
    kept = ds.dataset(str(data / "extracted"), format="parquet").to_table()
    rejected = ds.dataset(str(data / "rejected" / "stage=extract"), format="parquet").to_table()
    assert kept.num_rows == s["records_out"] and rejected.num_rows == s["records_in"] - s["records_out"]
    assert len(set(kept.column("id").to_pylist())) == kept.num_rows
    assert "status" not in kept.column_names and "reason" in rejected.column_names
    assert sorted(p.name for p in (data / "cleaned").iterdir()) == sorted(p.name for p in (data / "extracted").iterdir())


def test_interrupted_commit_is_finished_by_the_rerun(spark, tmp_path):
    """Killed between swapping the stage's folders into place and recording it: the rerun reuses
    every unit's marker and completes the commit instead of extracting again."""
    data = tmp_path / "data"
    cfg = _cfg()
    runner = Runner(spark, cfg, str(data), log=lambda *_: None)
    fp = runner.stage_fingerprint(extract.SPEC)
    ctx = StageContext(spark, "extract", str(data), fp, log=lambda *_: None)
    extract.run(spark, cfg, str(data), ctx)  # swaps the folders in; the runner never records it
    assert Path(ctx.dirs.work, COMMITTING).exists() and not Path(ctx.dirs.out).exists()
    before = (data / "stats" / "extract.json").read_text()
    outcome = Runner(spark, cfg, str(data), log=lambda *_: None).run(extract.SPEC)
    assert outcome.status == "resumed" and outcome.reused == outcome.units > 0
    assert json.loads((data / "stats" / "extract.json").read_text())["records_out"] == json.loads(before)["records_out"]


def test_dedup_run_alone_records_its_state(spark, tmp_path):
    """jobs/dedup.py submitted alone goes through the stage runner like the other stages: its state is
    recorded, so the chain (make clean-dedup) skips it afterwards instead of running it again."""
    from jobs import dedup, score

    data = tmp_path / "data"
    _run(spark, _cfg(), data)
    score.run(spark, _cfg(), str(data))
    stats = dedup.run(spark, _cfg(), str(data))
    assert (data / "_state" / "dedup.json").exists() and stats.records_out > 0
    outcome = Runner(spark, _cfg(), str(data), log=lambda _: None).run(dedup.SPEC)
    assert outcome.status == "skipped" and outcome.stats.records_out == stats.records_out
