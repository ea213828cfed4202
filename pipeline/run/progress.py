"""Progress lines a person can follow on a long run: units done / total, documents per second, and
an estimate of the time left, printed from a driver thread while a stage's Spark job runs."""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable

DEFAULT_EVERY_S = float(os.environ.get("GLASSBOX_PROGRESS_S", "10"))


def fmt_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def progress_line(stage: str, done: int, total: int, docs: int, elapsed: float, weight_done: float,
                  weight_total: float) -> str:
    """`weight` is what the units cost (their bytes): the estimate follows it, not the unit count."""
    rate = docs / elapsed if elapsed > 0 else 0.0
    line = f"  [{stage}] {done}/{total} units, {docs:,} docs, {rate:,.0f} docs/s, {fmt_duration(elapsed)} elapsed"
    if 0 < weight_done < weight_total:
        line += f", about {fmt_duration(elapsed * (weight_total - weight_done) / weight_done)} left"
    elif done and done < total:
        line += f", about {fmt_duration(elapsed * (total - done) / done)} left"
    return line


class Reporter:
    """Calls `line()` every `every` seconds in a daemon thread until stopped; `with` friendly."""

    def __init__(self, line: Callable[[], str | None], every: float = DEFAULT_EVERY_S, out=None):
        self._line, self._every, self._out = line, every, out or sys.stdout
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="glassbox-progress", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            try:
                text = self._line()
            except Exception:  # progress must never take the job down (e.g. during shutdown)
                continue
            if text:
                print(text, file=self._out, flush=True)

    def __enter__(self) -> "Reporter":
        if self._every > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


def spark_tasks_line(spark, stage: str, t0: float) -> Callable[[], str | None]:
    """For a stage run as one unit (dedup): the running Spark stages' tasks done / total, with an
    estimate for each from the time since it was first seen."""
    tracker = spark.sparkContext.statusTracker()
    first_seen: dict[int, float] = {}

    def line() -> str | None:
        now = time.time()
        parts = []
        for sid in sorted(tracker.getActiveStageIds()):
            info = tracker.getStageInfo(sid)
            if info is None:
                continue
            seen = first_seen.setdefault(sid, now)
            part = f"spark stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks"
            if 0 < info.numCompletedTasks < info.numTasks:
                left = (now - seen) * (info.numTasks - info.numCompletedTasks) / info.numCompletedTasks
                part += f", about {fmt_duration(left)} left"
            parts.append(part)
        running = "; ".join(parts) or "between Spark jobs"
        return f"  [{stage}] {running}; {fmt_duration(now - t0)} elapsed"
    return line
