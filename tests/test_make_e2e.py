"""`make clean-dedup` as a user runs it: the bundled sample (local processes, no JVM), a bad config."""
import json

import pytest

from tests.conftest import make

pytestmark = pytest.mark.slow


def test_make_clean_dedup_on_the_sample(sample_local_run):
    tmp_path, proc = sample_local_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "clean-dedup:" in proc.stdout and "kept" in proc.stdout
    for stage in ("extract", "clean", "dedup"):
        s = json.loads((tmp_path / "stats" / f"{stage}.json").read_text())
        assert s["records_in"] == s["records_out"] + sum(s["rejected"].values()) + sum(s["unreadable"].values())
    assert list((tmp_path / "dedup").glob("*.parquet"))
    # a sample this small runs without the JVM (pipeline/run/local.py); the Spark run of the same config, its
    # event log and the file-by-file comparison: tests/pipeline/run/test_local_executor.py
    run = json.loads((tmp_path / "stats" / "run.json").read_text())
    assert run["executor"] == "local" and "no JVM" in proc.stdout


def test_bad_config_fails_before_spark_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("sources:\n  web:\n    format: warc\n    paths: ['examples/sample/*.warc.gz']\n"
                   "clean:\n  langauges: [en]\n")
    proc = make("clean-dedup", f"CONFIG={bad}", f"DATA={tmp_path / 'out'}")
    assert proc.returncode != 0
    assert "clean.langauges: unknown key" in proc.stderr
    assert "SparkContext" not in proc.stderr and not (tmp_path / "out").exists()
