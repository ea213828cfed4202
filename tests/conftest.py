import os
from collections import Counter
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
FIXTURES = REPO / "tests" / "fixtures"


SHARED_SKIP = "shared data not available"     # every skip for a missing ../shared/data file starts so


def shared(*parts: str) -> Path:
    """A file of ../shared/data, or skip: the suite must also run where that folder is absent."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{SHARED_SKIP}: {p}")
    return p


def pytest_terminal_summary(terminalreporter):
    """One line for the tests that need ../shared/data (real third-party pages, WARCs, benchmarks) when it is
    absent, instead of a reason per test."""
    reasons = [str(r.longrepr[2]) if isinstance(r.longrepr, tuple) else str(r.longrepr)
               for r in terminalreporter.stats.get("skipped", [])]
    shared_missing = sorted({why.split(": ", 2)[-1] for why in reasons if SHARED_SKIP in why})
    if shared_missing:
        n = sum(SHARED_SKIP in why for why in reasons)
        terminalreporter.write_line(
            f"{n} tests skipped: {SHARED_SKIP} ({SHARED_DATA} holds the real third-party data of "
            f"../shared/data/README.md; {len(shared_missing)} paths missing, e.g. {shared_missing[0]})")
    others = Counter(why.removeprefix("Skipped: ") for why in reasons if SHARED_SKIP not in why)
    for why, n in sorted(others.items()):
        terminalreporter.write_line(f"{n} test{'s' * (n != 1)} skipped: {why}")


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
