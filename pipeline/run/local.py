"""Small jobs without the JVM: the same stages in plain Python processes (issue 42).

A `make clean-dedup` on a few thousand records spends most of its time before the first record: the JVM, the
Spark session, the Python workers. The stages need Spark for little: every unit of extract, clean and score is
a plain-Python function run in one task each (pipeline/run/units.py), the score distributions and the local dedup
path are one task each, and only big inputs need Spark's own jobs (percentiles over more than 50,000 scores, the
distributed dedup, the id checks over millions of rows). `LocalSession` stands in for the Spark session where the
stages use it as a task scheduler: `sparkContext.parallelize(items, n).mapPartitions(f).collect()` (and `.map`,
accumulators, job descriptions) run the partitions in a pool of forked Python processes, one per core of
`SPARK_MASTER` (`local[N]`, `local[*]`), the same functions writing the same files. Anything else a stage asks of
it (`spark.read`, a DataFrame) starts a real session then, says so in the log, and goes on with Spark.

`choose_executor` makes the choice before anything starts: the local processes when the master is local and the
inputs are smaller than `GLASSBOX_LOCAL_MAX_BYTES` (`make clean-dedup LOCAL_MAX_BYTES=...`); `GLASSBOX_EXECUTOR`
(`EXECUTOR=local|spark`) forces one. Semantic dedup (a Spark job) or the distributed dedup path asked for start
Spark in the dedup stage alone: the stages before it keep the local processes. The choice and its reason go to
the log and to stats/run.json. Both write the same files (tests/test_local_executor.py compares them file by file);
the units, markers and fingerprints are the same, so a run interrupted under one resumes under the other.

No pyspark import here (the record-level rule): a real session comes from a factory the caller gives.
"""
from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import re
import time
from typing import Callable, Iterable

DEFAULT_LOCAL_MAX_BYTES = 256 << 20   # input files (compressed, as listed): below it, no JVM
EXECUTORS = ("auto", "local", "spark")
# Imported once in the driver before the pool forks, rather than once in every worker: pyarrow imports pandas the
# first time a unit builds a batch from rows (RecordBatch.from_pylist: every extract unit), and pq.read_table
# imports pyarrow.dataset (and pandas) in the driver's checks anyway; about half a second of CPU per process, which
# on 2 cores was a tenth of a small incremental `make clean-dedup` (issue 42).
PRELOAD = ("pandas", "pyarrow.dataset")

_DELTAS: dict[int, int] = {}   # in a pool worker: what its task added to each accumulator


def _dumps(obj) -> bytes:
    """Task functions are closures: the caller passes a pickler that takes them (jobs/clean_dedup.py: PySpark's
    cloudpickle, the one Spark ships tasks with); this default takes module-level functions only."""
    return pickle.dumps(obj)


def master_cores(master: str) -> int | None:
    """Cores of a local master (`local` 1, `local[N]` N, `local[*]` all); None for a cluster."""
    if master == "local":
        return 1
    m = re.fullmatch(r"local\[(\*|\d+)(?:,\s*\d+)?\]", master.strip())
    if not m:
        return None
    return os.cpu_count() or 1 if m.group(1) == "*" else max(1, int(m.group(1)))


def input_bytes(cfg) -> int:
    return sum(int(f.size or 0) for s in cfg.sources.values() for f in s.inputs)


def choose_executor(cfg, env=os.environ) -> tuple[str, str]:
    """("local" or "spark", why) for `make clean-dedup`, from the config's input files, SPARK_MASTER and the
    GLASSBOX_EXECUTOR / GLASSBOX_LOCAL_MAX_BYTES settings."""
    # Semantic dedup and the distributed dedup path are Spark jobs of the dedup stage alone: extract, clean and
    # score still run without the JVM, and the dedup stage starts the session it needs (LocalSession.real).
    later = ("; dedup starts Spark for its semantic step" if cfg.dedup.semantic.enabled else
             "; dedup starts Spark for its distributed path (dedup.local_max_bytes is 0)"
             if cfg.dedup.local_max_bytes <= 0 else "")
    return choose_by_size(input_bytes(cfg), "input files", env, later)


def choose_by_size(size: int, what: str, env=os.environ, later: str = "") -> tuple[str, str]:
    """("local" or "spark", why) for a job reading `size` bytes of `what`: the local processes when the master
    is local and the size at most GLASSBOX_LOCAL_MAX_BYTES; GLASSBOX_EXECUTOR forces one. `later`: a step that
    starts Spark after all, said in the reason."""
    asked = (env.get("GLASSBOX_EXECUTOR") or "auto").strip().lower()
    if asked not in EXECUTORS:
        raise ValueError(f"GLASSBOX_EXECUTOR (EXECUTOR=) must be one of {', '.join(EXECUTORS)}, got {asked!r}")
    if asked == "spark":
        return "spark", "EXECUTOR=spark asked for it"
    master = env.get("SPARK_MASTER") or "local[*]"
    if master_cores(master) is None:
        return "spark", f"SPARK_MASTER={master} is a cluster"
    if asked == "local":
        return "local", f"EXECUTOR=local asked for it ({size / 1e6:.1f} MB of {what}){later}"
    limit = int(env.get("GLASSBOX_LOCAL_MAX_BYTES") or DEFAULT_LOCAL_MAX_BYTES)
    if size > limit:
        return "spark", f"{size / 1e6:.1f} MB of {what}, more than LOCAL_MAX_BYTES={limit}"
    return "local", (f"{size / 1e6:.1f} MB of {what}, at most LOCAL_MAX_BYTES={limit}: "
                     + (f"no JVM before the dedup stage{later}" if later else "no JVM needed"))


# ---- the stand-in for the session --------------------------------------------------------------

class LocalAccumulator:
    """Spark's accumulator semantics: a task's additions reach the driver when the task ends."""
    _ids = itertools.count()

    def __init__(self, value=0):
        self.id, self.value, self._pid = next(self._ids), value, os.getpid()

    def add(self, n) -> None:
        if os.getpid() == self._pid:
            self.value += n
        else:
            _DELTAS[self.id] = _DELTAS.get(self.id, 0) + n

    def __getstate__(self):
        return {"id": self.id, "value": 0, "_pid": self._pid}


def _set_parent_death_signal() -> None:
    """A worker dies with the driver (a killed `make clean-dedup` leaves no orphan writing units)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _run_partition(payload: bytes, index: int):
    fn, items = pickle.loads(payload)
    _DELTAS.clear()
    out = list(fn(iter(items)))
    return index, out, dict(_DELTAS)


class _Tracker:
    def __init__(self, ctx: "LocalContext"):
        self.ctx = ctx

    def _real(self):
        real = self.ctx.session._real   # a Spark session started for a step that needed one: its own stages
        return real.sparkContext.statusTracker() if real is not None else None

    def getActiveStageIds(self):
        real = self._real()
        return real.getActiveStageIds() if real is not None else [0] if self.ctx.running else []

    def getStageInfo(self, sid):
        real = self._real()
        if real is not None:
            return real.getStageInfo(sid)
        job = self.ctx.running
        if job is None:
            return None
        return type("StageInfo", (), {"numTasks": job[0], "numCompletedTasks": job[1]})()


class LocalRDD:
    def __init__(self, ctx: "LocalContext", partitions: list[list], fn: Callable[[Iterable], Iterable] | None = None):
        self.ctx, self.partitions, self.fn = ctx, partitions, fn or (lambda it: it)

    def mapPartitions(self, f) -> "LocalRDD":
        g = self.fn
        return LocalRDD(self.ctx, self.partitions, lambda it: f(g(it)))

    def map(self, f) -> "LocalRDD":
        g = self.fn
        return LocalRDD(self.ctx, self.partitions, lambda it: (f(x) for x in g(it)))

    def collect(self) -> list:
        return self.ctx.run_job(self.fn, self.partitions)


class LocalContext:
    """The part of SparkContext the stages use to schedule tasks; the rest starts a real session."""

    def __init__(self, session: "LocalSession", cores: int, dumps: Callable[[object], bytes] = _dumps):
        self.session, self.cores, self.dumps = session, cores, dumps
        self.master = f"local Python processes x{cores}, no JVM"
        self.running: list[int] | None = None
        self._pool = None

    def parallelize(self, items, n: int | None = None) -> LocalRDD:
        items = list(items)
        n = max(1, min(n or self.cores, len(items) or 1))
        parts, start = [], 0
        for k in range(n):   # as Spark slices a list: contiguous, sizes differing by one at most
            end = (len(items) * (k + 1)) // n
            parts.append(items[start:end])
            start = end
        return LocalRDD(self, parts)

    def accumulator(self, value=0) -> LocalAccumulator:
        return LocalAccumulator(value)

    def setJobDescription(self, _text) -> None:
        pass

    def setLogLevel(self, _level) -> None:
        pass

    def statusTracker(self) -> _Tracker:
        return _Tracker(self)

    def pool(self):
        if self._pool is None:
            self._pool = multiprocessing.get_context("fork").Pool(self.cores, initializer=_set_parent_death_signal)
        return self._pool

    def run_job(self, fn, partitions: list[list]) -> list:
        """The partitions' results in partition order; one partition runs in this process, more in the pool."""
        self.running = [len(partitions), 0]
        try:
            if len(partitions) == 1 or self.cores == 1:
                out = []
                for part in partitions:
                    out.extend(fn(iter(part)))
                    self.running[1] += 1
                return out
            results: dict[int, list] = {}
            payloads = [self.dumps((fn, part)) for part in partitions]
            pending = [self.pool().apply_async(_run_partition, (p, k)) for k, p in enumerate(payloads)]
            accs = _accumulators_of(fn)
            for job in pending:
                index, out, deltas = job.get()
                results[index] = out
                for acc in accs:
                    acc.value += deltas.get(acc.id, 0)
                self.running[1] += 1
            return [x for k in range(len(partitions)) for x in results[k]]
        finally:
            self.running = None

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None

    def __getattr__(self, name):
        return getattr(self.session.real().sparkContext, name)


def _accumulators_of(fn) -> list[LocalAccumulator]:
    """The accumulators a task function closes over (directly or through the functions it wraps)."""
    found, seen, todo = [], set(), [fn]
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        for cell in getattr(f, "__closure__", None) or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if isinstance(v, LocalAccumulator):
                found.append(v)
            elif callable(v):
                todo.append(v)
    return found


def _preload() -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


class LocalSession:
    """Stands in for a SparkSession: tasks in local processes; anything else starts `make_real()` once."""

    def __init__(self, cores: int, make_real: Callable[[], object], dumps: Callable[[object], bytes] = _dumps,
                 log=print):
        self._make_real, self._real, self.log = make_real, None, log
        self.sparkContext = LocalContext(self, cores, dumps)
        self.started_real_s = 0.0
        if cores > 1:
            _preload()
            self.sparkContext.pool()  # forked now, before any progress thread, with the stages' modules imported

    def real(self):
        if self._real is None:
            import traceback

            where = next((f"{f.filename.rsplit('/', 2)[-2]}/{f.name}" for f in reversed(traceback.extract_stack()[:-2])
                          if "pipeline/run/local.py" not in f.filename), "?")
            self.log(f"local executor: {where} needs a Spark job at this size; starting a Spark session")
            t0 = time.time()
            self._real = self._make_real()
            self.started_real_s = time.time() - t0
        return self._real

    @property
    def started_spark(self) -> bool:
        return self._real is not None

    def __getattr__(self, name):
        return getattr(self.real(), name)

    def stop(self) -> None:
        self.sparkContext.stop()
        if self._real is not None:
            self._real.stop()
