"""The stage runner: a long job as a sum of finished units, resumable after a kill.

Every stage has a fingerprint: a hash of its config section, the models it loads and the
fingerprint of its input (the input files' sizes and versions for extract, the previous stage's
fingerprint after that). `DATA/_state/<stage>.json` records a finished stage's fingerprint, so a
rerun of the same command skips a stage whose inputs and config are unchanged, and a config change
re-runs that stage and every one after it (their input fingerprints change with it).

Inside a stage, work units (pipeline/run/units.py) write to `DATA/_work/<stage>/` and leave a marker
when done; a rerun after a crash runs only the units without one. When all are done the stage is
committed: its folders are swapped into place (`DATA/<output>/`, `DATA/rejected/stage=<stage>/`),
its stats written, its state recorded. A stage that cannot be cut into units (dedup) is one unit.

This module is Spark glue, like pipeline/run/spark.py: units run in Spark tasks, one task each.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from typing import Callable

from pipeline.run.progress import Reporter, progress_line, spark_tasks_line
from pipeline.run.stats import StageStats, load_stats, top_reasons
from pipeline.run.repeats import LOCAL_MAX_ROWS, check_unique, repeated_ids
from pipeline.run.units import UnitDirs, finished_units, parquet_files, replace_dir, write_json_atomic

STATE_DIR = "_state"
WORK_DIR = "_work"
COMMITTING = "COMMITTING"


def say(message: str) -> None:
    print(message, flush=True)  # stdout is a pipe under spark-submit: a long run must show as it goes


def fingerprint(*parts) -> str:
    """A stable hash of JSON-able parts (dataclasses included)."""
    def plain(o):
        if dataclasses.is_dataclass(o):
            return dataclasses.asdict(o)
        return str(o)
    text = json.dumps(parts, sort_keys=True, default=plain)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def path_identity(path: str) -> list:
    """What says a local file or folder changed: names, sizes and modification times."""
    if not os.path.exists(path):
        return [path, None]
    if os.path.isfile(path):
        st = os.stat(path)
        return [path, st.st_size, st.st_mtime_ns]
    out = []
    for root, _, files in sorted(os.walk(path)):
        for fn in sorted(files):
            st = os.stat(os.path.join(root, fn))
            out.append([os.path.relpath(os.path.join(root, fn), path), st.st_size, st.st_mtime_ns])
    return [path, out]


def read_state(data_dir: str, stage: str) -> dict | None:
    try:
        with open(os.path.join(data_dir, STATE_DIR, f"{stage}.json"), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def input_fingerprint(data_dir: str, previous_stage: str, previous_output: str) -> str:
    """The previous stage's recorded fingerprint, or (its output made elsewhere) its listing."""
    state = read_state(data_dir, previous_stage)
    if state and os.path.isdir(os.path.join(data_dir, previous_output)):
        return state["fingerprint"]
    return fingerprint(path_identity(os.path.join(data_dir, previous_output)))


def emptied_line(stats: StageStats) -> str:
    """What the log says when a stage drops every document it got: the later stages still run, on an
    empty input, and write empty outputs and their stats."""
    reasons = ", ".join(f"{r} {n}" for r, n in top_reasons([stats], 3))
    return (f"{stats.stage}: kept none of its {stats.records_in} documents ({reasons}); the stages after it "
            f"run on an empty input and write empty outputs")


@dataclasses.dataclass
class StageOutcome:
    stats: StageStats
    status: str          # ran | resumed | skipped
    units: int = 0
    reused: int = 0
    wall_s: float = 0.0  # this run's time on the stage (a skipped stage: the check only)


class StageContext:
    """One stage's (or one phase's) work folder, fingerprint and unit scheduling."""

    def __init__(self, spark, stage: str, data_dir: str, fp: str, phase: str | None = None, log=say):
        self.spark, self.stage, self.data_dir, self.fingerprint, self.log = spark, stage, data_dir, fp, log
        self.phase = phase
        self.dirs = UnitDirs(os.path.join(data_dir, WORK_DIR, stage + (f"-{phase}" if phase else "")))
        self.units_total = self.units_reused = 0
        self._prepare()

    def _prepare(self) -> None:
        fp_file = os.path.join(self.dirs.work, "FINGERPRINT")
        try:
            with open(fp_file, encoding="utf-8") as fh:
                same = fh.read().strip() == self.fingerprint
        except OSError:
            same = False
        if not same:  # units of other inputs or another config are not ours to reuse
            shutil.rmtree(self.dirs.work, ignore_errors=True)
        self.dirs.make()
        with open(fp_file, "w", encoding="utf-8") as fh:
            fh.write(self.fingerprint + "\n")

    def sub(self, phase: str, fp: str) -> "StageContext":
        return StageContext(self.spark, self.stage, self.data_dir, fp, phase=phase, log=self.log)

    @property
    def committing(self) -> bool:
        """A commit began (its folders may be in place already): the units' files may be gone, their markers stand."""
        return os.path.exists(os.path.join(self.dirs.work, COMMITTING))

    @property
    def label(self) -> str:
        return self.stage + (f" {self.phase}" if self.phase else "")

    def run_units(self, units: list[dict], fn: Callable[[dict, UnitDirs, str], dict]) -> list[dict]:
        """Run `fn(unit, dirs, fingerprint) -> marker` for every unit not finished earlier, one Spark
        task per unit, and return every unit's marker (small: counts only, never documents)."""
        done = finished_units(self.dirs, self.fingerprint, require_output=not self.committing)
        names = {u["name"] for u in units}
        todo = [u for u in units if u["name"] not in done]
        self.units_total, self.units_reused = len(units), len(names & set(done))
        if self.units_reused:
            self.log(f"{self.label}: {self.units_reused} of {len(units)} units finished earlier with the same "
                     f"inputs and config, reused; {len(todo)} to run")
        else:
            self.log(f"{self.label}: {len(units)} units")
        markers = [done[n] for n in sorted(names & set(done))]
        if todo:
            markers += self._run_on_spark(todo, fn)
        return markers

    def _run_on_spark(self, todo: list[dict], fn) -> list[dict]:
        sc = self.spark.sparkContext
        acc_units, acc_docs, acc_weight = sc.accumulator(0), sc.accumulator(0), sc.accumulator(0)
        work, fp = self.dirs.work, self.fingerprint

        def task(units):
            dirs = UnitDirs(work).make()
            out = []
            for u in units:
                marker = fn(u, dirs, fp)
                acc_units.add(1)
                acc_docs.add(marker["records_in"])
                acc_weight.add(u.get("weight", 0))
                out.append(marker)
            return out

        t0 = time.time()
        total, weight_total = len(todo), sum(u.get("weight", 0) for u in todo)
        line = lambda: progress_line(self.label, acc_units.value, total, acc_docs.value, time.time() - t0,
                                     acc_weight.value, weight_total)
        sc.setJobDescription(f"{self.label}: {total} units")
        with Reporter(line):
            markers = sc.parallelize(todo, len(todo)).mapPartitions(task).collect()
        sc.setJobDescription(None)
        return markers

    def parquet_units(self, folder: str) -> list[dict]:
        """One unit per Parquet file of a previous stage's output (its name carried over)."""
        units = []
        for fn in sorted(os.listdir(folder)):
            if fn.endswith(".parquet") and not fn.startswith(("_", ".")):
                p = os.path.join(folder, fn)
                units.append({"name": fn[:-len(".parquet")], "path": p, "weight": os.path.getsize(p)})
        units.sort(key=lambda u: (-u["weight"], u["name"]))
        return units

    def commit(self, output: str, markers: list[dict], t0: float, input_desc: str,
               extra: dict | None = None, units: tuple[int, int] | None = None) -> StageStats:
        """Check the books, swap the stage's folders into place, write its stats. `units`: the
        (total, reused) to report when another phase of the stage holds the costly units."""
        stats = StageStats(stage=self.stage, records_in=0, records_out=0, input=input_desc,
                           output=os.path.join(self.data_dir, output))
        for m in markers:
            stats.records_in += m["records_in"]
            stats.records_out += m["records_out"]
            stats.bytes_in += m["bytes_in"]
            stats.bytes_out += m["bytes_out"]
            for key in ("rejected", "unreadable"):
                target = getattr(stats, key)
                for r, n in m[key].items():
                    target[r] = target.get(r, 0) + n
        stats.rejected, stats.unreadable = dict(sorted(stats.rejected.items())), dict(sorted(stats.unreadable.items()))
        total, reused = units or (self.units_total, self.units_reused)
        stats.extra = {**(extra or {}), "units": total, "units_reused": reused}
        stats.check()
        self.check_unique_ids(stats.records_out)
        self.check_unique_ids(sum(stats.rejected.values()) + sum(stats.unreadable.values()), self.dirs.rejected)
        open(os.path.join(self.dirs.work, COMMITTING), "w").close()
        replace_dir(self.dirs.out, os.path.join(self.data_dir, output))
        replace_dir(self.dirs.rejected, os.path.join(self.data_dir, "rejected", f"stage={self.stage}"))
        stats.wall_s = round(time.time() - t0, 2)
        stats.write(self.data_dir)
        return stats

    def check_unique_ids(self, rows: int, folder: str | None = None) -> None:
        """One id, one row (pipeline/run/repeats.py) in the kept files about to be committed, or in `folder` (its
        rejected rows): read in this process when they are few, by a Spark job otherwise."""
        folder = folder or self.dirs.out
        files = parquet_files(folder)
        if rows <= LOCAL_MAX_ROWS:
            repeated = repeated_ids(files)
        else:
            from pipeline.run.spark import repeated_ids_spark
            repeated = repeated_ids_spark(self.spark, files)
        check_unique(self.stage, repeated, f"its output ({folder})")

    def discard(self) -> None:
        shutil.rmtree(self.dirs.work, ignore_errors=True)


@dataclasses.dataclass
class StageSpec:
    name: str
    output: str
    identity: Callable       # cfg -> what the stage's fingerprint covers besides its input
    run: Callable            # (spark, cfg, data_dir, ctx) -> StageStats
    previous: tuple[str, str] | None = None  # (stage, output folder) it reads
    units: bool = True       # False: the stage is one unit (rerun whole after a crash)
    also_writes: tuple[str, ...] = ()  # other folders of its output (a finished stage without them reruns)


class Runner:
    """Runs stages in order, skipping finished unchanged ones; prints progress and a table.

    `spark` is a session or a function that makes one: then Spark starts only when a stage has
    work to do, so rerunning a finished command costs a config check, not a JVM."""

    def __init__(self, spark, cfg, data_dir: str, fresh: bool = False, log=say):
        self._spark, self.cfg, self.data_dir, self.log = spark, cfg, data_dir, log
        self.session_s = 0.0
        self.outcomes: list[StageOutcome] = []
        if fresh:
            for d in (STATE_DIR, WORK_DIR):
                shutil.rmtree(os.path.join(data_dir, d), ignore_errors=True)
            log(f"FRESH: recorded stages and unfinished units in {data_dir} removed; starting over")
        os.makedirs(os.path.join(data_dir, STATE_DIR), exist_ok=True)

    @property
    def spark(self):
        if callable(self._spark):
            t0 = time.time()
            self._spark = self._spark()
            self.session_s = time.time() - t0
        return self._spark

    @property
    def started_spark(self) -> bool:
        return not callable(self._spark)

    def stage_fingerprint(self, spec: StageSpec) -> str:
        upstream = input_fingerprint(self.data_dir, *spec.previous) if spec.previous else ""
        return fingerprint(spec.name, upstream, spec.identity(self.cfg))

    def run(self, spec: StageSpec, force: bool = False) -> StageOutcome:
        """Run a stage, or skip it when it finished earlier with this fingerprint (unless `force`)."""
        t0 = time.time()
        fp = self.stage_fingerprint(spec)
        state = read_state(self.data_dir, spec.name)
        stats_file = os.path.join(self.data_dir, "stats", f"{spec.name}.json")
        outputs = (spec.output, *spec.also_writes)
        if (not force and state and state.get("fingerprint") == fp and os.path.exists(stats_file)
                and all(os.path.isdir(os.path.join(self.data_dir, o)) for o in outputs)):
            self.log(f"{spec.name}: finished earlier with the same inputs and config; skipped "
                     f"({os.path.join(self.data_dir, spec.output)}, stats/{spec.name}.json)")
            outcome = StageOutcome(load_stats(self.data_dir, spec.name), "skipped",
                                   wall_s=round(time.time() - t0, 2))
            self.outcomes.append(outcome)
            return outcome
        state_file = os.path.join(self.data_dir, STATE_DIR, f"{spec.name}.json")
        if os.path.exists(state_file):
            os.remove(state_file)  # from here on the recorded result is stale until this stage ends
        spark = self.spark  # started here, on the first stage with work, and not counted in its time
        t0 = time.time()
        self.log(f"{spec.name}: running")
        if spec.units:
            ctx = StageContext(spark, spec.name, self.data_dir, fp, log=self.log)
            stats = spec.run(spark, self.cfg, self.data_dir, ctx)
            units, reused = ctx.units_total, ctx.units_reused
            ctx.discard()
            try:
                os.rmdir(os.path.join(self.data_dir, WORK_DIR))  # only when no other stage left units
            except OSError:
                pass
        else:
            with Reporter(spark_tasks_line(spark, spec.name, t0)):
                stats = spec.run(spark, self.cfg, self.data_dir, None)
            units, reused = 1, 0
        write_json_atomic(state_file, {"stage": spec.name, "fingerprint": fp, "finished_at": time.time(),
                                       "wall_s": stats.wall_s, "units": units, "units_reused": reused})
        outcome = StageOutcome(stats, "resumed" if reused else "ran", units, reused, round(time.time() - t0, 2))
        self.outcomes.append(outcome)
        if stats.records_in and not stats.records_out:
            self.log(emptied_line(stats))
        return outcome

    def table(self) -> str:
        head = f"  {'stage':<8} {'status':<8} {'units':>6} {'reused':>6} {'in':>8} {'out':>8} " \
               f"{'rejected':>8} {'unread.':>7} {'wall s':>8} {'docs/s':>8}"
        lines = [head]
        for o in self.outcomes:
            s = o.stats
            rate = f"{s.records_in / o.wall_s:,.0f}" if o.status != "skipped" and o.wall_s > 0 else "-"
            lines.append(f"  {s.stage:<8} {o.status:<8} {o.units or '-':>6} {o.reused or '-':>6} "
                         f"{s.records_in:>8} {s.records_out:>8} {sum(s.rejected.values()):>8} "
                         f"{sum(s.unreadable.values()):>7} {o.wall_s:>8.1f} {rate:>8}")
        return "\n".join(lines)
