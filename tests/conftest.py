import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
FIXTURES = REPO / "tests" / "fixtures"


def shared(*parts: str) -> Path:
    """A file of ../shared/data, or skip: the suite must also run where that folder is absent."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared data not available: {p}")
    return p


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every integration test (starting a JVM costs seconds)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "conf"))
    from pipeline.spark import get_spark

    os.environ["SPARK_MASTER"] = "local[2]"
    session = get_spark("glassbox-tests", {"spark.ui.enabled": "false",
                                           "spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()


def make(*args, timeout=900, env_extra: dict | None = None, **popen):
    """`make ARGS` in the repository as a user runs it: without this process's Spark settings
    (`env_extra`: variables the user would have set, e.g. credentials)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.update(env_extra or {})
    cmd = ["make", "--no-print-directory", *args]
    if popen:
        return subprocess.Popen(cmd, cwd=REPO, env=env, text=True, **popen)
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def sample_local_run(tmp_path_factory):
    """`make clean-dedup` on the bundled sample with a local master, once per session:
    (data dir, completed process)."""
    data = tmp_path_factory.mktemp("sample-local")
    proc = make("clean-dedup", f"DATA={data}", "SPARK_MASTER=local[2]")
    return data, proc
