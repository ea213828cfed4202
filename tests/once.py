"""Expensive fixtures built once per test run, not once per pytest-xdist worker (`make test` runs two).

The first worker that asks builds under a file lock, in a folder every worker of the run sees, and writes
what it built as JSON; the others wait for the lock and read that. What the builder starts (a trainer, a
JVM) is declared, so that the marker check in conftest.py sees it on every worker, not only on the one that
built. The folder is made and removed by the run's main process (conftest.py's configure hooks)."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from filelock import FileLock

ENV = "GLASSBOX_TEST_SHARED"
report_started: Callable[[set], None] = lambda kinds: None   # set by conftest.py: the marker check's recorder


def start_run() -> None:
    if ENV not in os.environ:
        os.environ[ENV] = tempfile.mkdtemp(prefix="glassbox-tests-")


def end_run() -> None:
    shutil.rmtree(os.environ.pop(ENV, ""), ignore_errors=True)


def built_once(name: str, build: Callable[[Path], dict], starts: set[str]) -> dict:
    """``build(folder)``'s JSON result, run by one process of this test run; ``starts``: what it launches
    ({"trainer", "jvm"})."""
    start_run()   # a process not started by pytest's main process (tests that import a fixture module)
    root = Path(os.environ[ENV])
    done = root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if done.exists():
            report_started(set(starts))
        else:
            folder = root / name
            shutil.rmtree(folder, ignore_errors=True)   # a build that failed half-way is started over
            folder.mkdir()
            result = build(folder)
            done.write_text(json.dumps(result))
    return json.loads(done.read_text())
