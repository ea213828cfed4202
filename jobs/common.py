"""Argument handling shared by the job entry points (check the config before Spark starts), and the
stage specs the runner chains (pipeline/run/runner.py)."""
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
