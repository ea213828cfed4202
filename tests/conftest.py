import os
from collections import Counter
import subprocess
import sys
from pathlib import Path

import pytest

import once

REPO = Path(__file__).resolve().parents[1]
# ../shared/data beside the checkout; GLASSBOX_SHARED_DATA points elsewhere (a git worktree one level deeper)
SHARED_DATA = Path(os.environ.get("GLASSBOX_SHARED_DATA") or REPO.parent / "shared" / "data")
FIXTURES = REPO / "tests" / "fixtures"


# The suite's JVMs (Spark drivers, spark-submit's launcher, a standalone cluster) live seconds: the C1 compiler
# alone runs them on about 40 % less CPU than C1 + C2 (a `make clean-dedup` of the sample: 14.8 -> 8.9 CPU
# seconds, 16.1 -> 11.3 s wall on 2 cores), and the suite is CPU-bound. A user's JVM keeps the default.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")

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
    from pipeline.run.spark import get_spark

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
def sample_local_run():
    """`make clean-dedup` on the bundled sample with a local master, once per test run (tests/once.py):
    (data dir, completed process). Read it, never write to it."""
    def build(folder: Path) -> dict:
        proc = make("clean-dedup", f"DATA={folder}", "SPARK_MASTER=local[2]")
        return {"args": proc.args, "returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}

    done = once.built_once("sample-local", build, starts={"jvm"})
    proc = subprocess.CompletedProcess(done["args"], done["returncode"], done["stdout"], done["stderr"])
    return Path(os.environ[once.ENV]) / "sample-local", proc


# ---- what a test starts matches its markers ------------------------------------------------------------
# `make test-fast` deselects the spark, slow and trainer tests and must then start no JVM and no trainer.
# Every process a test starts (or a fixture it sets up: a module's shared run counts for each test using it)
# is classified here; a test that starts a trainer without the `trainer` or `slow` marker, or a JVM without
# `spark` or `slow`, errors at teardown, naming what it started.
import re  # noqa: E402

_REQUIRED = {"trainer": ("trainer", "slow"), "jvm": ("spark", "slow")}
_TRAINER = re.compile(r"train\.pretrain|train\.launch|torchrun|reshard_worker")
_JVM = re.compile(r"spark-submit|spark-class|(^|/)java( |$)|start-(master|worker)\.sh")
_MAKE_TRAINER = {"pretrain", "demo"}
_MAKE_JVM = {"clean-dedup", "tokenize", "mix", "demo", "spark-cluster", "bench", "bench-e2e", "bench-dedup"}
_recording: list | None = None        # what the test or fixture running now started
_fixture_kinds: dict[tuple, set] = {}  # (where it is defined, fixture name) -> what its setup started
_real_popen_init = subprocess.Popen.__init__


def launch_kinds(args) -> set[str]:
    """{"trainer", "jvm"} that a command line starts (make targets included; `make -n` starts nothing)."""
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    argv = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in argv]
    words = " ".join(argv)
    kinds = set()
    if _TRAINER.search(words):
        kinds.add("trainer")
    if _JVM.search(words):
        kinds.add("jvm")
    if argv and Path(argv[0].split()[0]).name == "make" and not ({"-n", "--dry-run"} & set(argv)):
        targets = {a for a in argv[1:] if not a.startswith("-") and "=" not in a}
        kinds |= {"trainer"} if targets & _MAKE_TRAINER else set()
        kinds |= {"jvm"} if targets & _MAKE_JVM else set()
    return kinds


def _recording_popen_init(self, args, *a, **kw):
    if _recording is not None:
        _recording.append(launch_kinds(args))
    _real_popen_init(self, args, *a, **kw)


subprocess.Popen.__init__ = _recording_popen_init


def _note_started(kinds: set) -> None:
    """What a fixture built by another worker started (tests/once.py), as if started here."""
    if _recording is not None:
        _recording.append(kinds)


def pytest_configure(config):
    once.report_started = _note_started
    if not hasattr(config, "workerinput"):      # the run's main process: the xdist controller, or the only one
        once.start_run()


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        once.end_run()


def _fixture_key(fixturedef) -> tuple:
    """Fixtures are told apart by where they are defined too: two modules may each have a `reference`."""
    return fixturedef.baseid, fixturedef.argname


def _used_fixtures(item) -> list[tuple]:
    """The fixtures a test sets up: for each name, the definition that wins (the closest one)."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return [_fixture_key(defs[name][-1]) for name in item.fixturenames if defs.get(name)]


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    global _recording
    outer, _recording = _recording, []
    try:
        return (yield)
    finally:
        started = set().union(*_recording)
        _fixture_kinds.setdefault(_fixture_key(fixturedef), set()).update(started)
        if outer is not None:
            outer.append(started)
        _recording = outer


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    global _recording
    _recording = []
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    global _recording
    started = set().union(*(_recording or [])).union(*(_fixture_kinds.get(f, set()) for f in _used_fixtures(item)))
    _recording = None
    marks = {m.name for m in item.iter_markers()}
    missing = [kind for kind in sorted(started) if not marks & set(_REQUIRED[kind])]
    result = yield
    if missing:
        pytest.fail(f"{item.nodeid} starts {' and '.join(missing)} processes without a marker for them "
                    f"(add {' / '.join(_REQUIRED[k][0] for k in missing)}; make test-fast must start none)",
                    pytrace=False)
    return result


def pytest_collection_modifyitems(items):
    """The files with slow tests first, then those that start a JVM or a trainer, the rest last: under
    pytest-xdist (`make test`) a long file is then never the last thing left running on one worker while
    the other worker idles. The order within a file stays as written."""
    items_of: dict = {}
    for item in items:
        items_of.setdefault(item.path, []).append(item)
    cost = {}
    for i, (path, in_file) in enumerate(items_of.items()):
        marks = {m.name for it in in_file for m in it.iter_markers()}
        cost[path] = (0 if "slow" in marks else 1 if marks & {"spark", "trainer"} else 2, i)
    items.sort(key=lambda it: cost[it.path])
