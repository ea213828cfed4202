"""Argument handling shared by the job entry points (check the config before Spark starts), the stage specs
the runner chains (pipeline/run/runner.py), and make's choice for a job between local processes and the
spark-submit command it passes after --or-submit."""
from __future__ import annotations

import argparse
import os
import sys

from pipeline.config import ConfigError, PipelineConfig, load_config


def parse_args(description: str, argv: list[str] | None = None,
               fresh: bool = False) -> tuple[PipelineConfig, str] | tuple[PipelineConfig, str, bool]:
    """(config, data dir), plus the --fresh flag when `fresh` (the chained command takes it)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--config", required=True, help="pipeline YAML/JSON (sources, extract, clean, dedup)")
    ap.add_argument("--data", required=True, help="output folder (extracted/, cleaned/, dedup/, rejected/, stats/)")
    if fresh:
        ap.add_argument("--fresh", action="store_true",
                        help="forget finished stages and units in --data and start over")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        sys.exit(2)
    data = os.path.abspath(args.data)
    for i, where in enumerate(cfg.dedup.against):
        if where.rstrip("/") in (data, os.path.join(data, "dedup_index")):
            print(f"config error: {args.config}: dedup.against[{i}]: {where} is this run's own --data folder; "
                  "a corpus is deduplicated against earlier ones, not against itself", file=sys.stderr)
            sys.exit(2)
    return (cfg, data, args.fresh) if fresh else (cfg, data)


def run_alone(spec, doc: str, argv: list[str] | None = None) -> None:
    """A stage as its own job (`spark-submit jobs/<stage>.py`): it always runs, on the previous
    stage's output, and reuses units an interrupted run of the same stage left."""
    from pipeline.run.runner import Runner
    from pipeline.run.spark import get_spark

    cfg, data = parse_args(doc, argv)
    outcome = Runner(get_spark(f"glassbox-{spec.name}", cfg.spark), cfg, data).run(spec, force=True)
    print(outcome.stats.summary())
    print_nothing_kept(data, spec.name)


def print_nothing_kept(data: str, stage: str) -> None:
    """A stage run alone that kept nothing says so last, with the reasons of the stages up to it."""
    from pipeline.run.stats import load_chain, nothing_kept_line

    line = nothing_kept_line(load_chain(data, stage))
    if line:
        print(line)


# ---- make's jobs: local processes for a small job, else the spark-submit command given after --or-submit ----

OR_SUBMIT = "--or-submit"
REASON_ENV = "GLASSBOX_EXECUTOR_REASON"   # why the spark-submit this process runs under was chosen


def split_submit(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """(the job's own arguments, the spark-submit command after --or-submit, or None: submitted directly)."""
    if OR_SUBMIT not in argv:
        return argv, None
    k = argv.index(OR_SUBMIT)
    return argv[:k], argv[k + 1:]


def executor_for(choose, submit: list[str] | None, script: str, argv: list[str]) -> tuple[str, str]:
    """("local" or "spark", why). Run by make (`submit` given): `choose()` decides, and "spark" replaces this
    process with the spark-submit command running `script` with `argv`. Submitted directly: Spark, for the
    reason the make process gave when it handed over."""
    if submit is None:
        return "spark", os.environ.get(REASON_ENV, "submitted with spark-submit")
    try:
        executor, reason = choose()
    except ValueError as e:
        print(f"config error: {e}", file=sys.stderr)
        sys.exit(2)
    if executor == "spark":
        os.environ[REASON_ENV] = reason
        os.execv(submit[0], submit + [os.path.abspath(script)] + argv)
    return executor, reason


def local_session(submit: list[str], make_spark):
    """(a factory of the local executor's session, its cores); a step that needs Spark after all starts it with
    the options make would have submitted."""
    import shlex

    from pyspark import cloudpickle  # tasks travel to the local processes as Spark ships them

    from pipeline.run.local import LocalSession, master_cores

    cores = master_cores(os.environ.get("SPARK_MASTER") or "local[*]")
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", shlex.join(submit[1:] + ["pyspark-shell"]))
    return (lambda: LocalSession(cores, make_spark, cloudpickle.dumps)), cores
