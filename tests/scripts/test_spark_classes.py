"""The make targets' Spark driver maps its classes from the archive `make setup` wrote
(build/spark-classes.jsa, scripts/spark_classes.py), and still runs without it."""
from __future__ import annotations

import os
import subprocess

import pytest

from conftest import REPO, make

ARCHIVE = REPO / "build" / "spark-classes.jsa"
JOB = "import sys; from pipeline.run.spark import get_spark; s = get_spark('t'); " \
      "print('sum', s.sparkContext.parallelize(range(10), 2).map(lambda x: x).sum()); s.stop()"


def _submit(tmp_path, archive_present: bool = True) -> tuple[subprocess.CompletedProcess, list[str]]:
    command = make("-s", "spark-submit-command").stdout.strip()
    assert "-Dlog4j2.configurationFile=" in command and "SPARK_CONF_DIR" not in command
    if not archive_present:  # the same command line where no archive was made
        command = command.replace(str(ARCHIVE), str(tmp_path / "missing.jsa"))
    job = tmp_path / "job.py"
    job.write_text(JOB)
    log = tmp_path / "classes.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["JAVA_TOOL_OPTIONS"] = f"-Xlog:class+load=info:file={log}"
    done = subprocess.run(["bash", "-c", f"{command} --master 'local[1]' {job}"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    return done, log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(not ARCHIVE.exists(), reason="no Spark class archive: `make setup` could not make one "
                    "with this JVM (see build/spark-classes.log)")
@pytest.mark.spark
def test_make_targets_load_spark_classes_from_the_archive(tmp_path):
    done, lines = _submit(tmp_path)
    assert done.returncode == 0 and "sum 45" in done.stdout, done.stderr[-2000:]
    spark = [ln for ln in lines if " org.apache.spark." in ln]
    shared = [ln for ln in spark if "shared objects file" in ln]
    assert len(spark) > 1000 and len(shared) > 0.5 * len(spark), (len(shared), len(spark))
    assert "warning" not in done.stderr.lower().replace("warning: using incubator modules", "")


@pytest.mark.spark
def test_spark_runs_the_same_without_the_archive(tmp_path):
    done, lines = _submit(tmp_path, archive_present=False)
    assert done.returncode == 0 and "sum 45" in done.stdout, done.stderr[-2000:]
    assert not [ln for ln in lines if " org.apache.spark." in ln and "shared objects file (top)" in ln]
