"""`make clean-dedup`: extract → clean → score → dedup as one Spark application, resumable.

Each stage reads the previous stage's Parquet, so any of them can also be rerun alone
(jobs/extract.py, jobs/clean.py, jobs/score.py, jobs/dedup.py with the same --config and --data).
Rerunning this command after a crash continues where it stopped: finished stages whose inputs and
config are unchanged are skipped, finished work units of the interrupted stage are reused
(pipeline/run/runner.py). --fresh (FRESH=1) starts over.

`make clean-dedup` runs this file with Python and the spark-submit command line after `--or-submit`: a small
job runs its stages in local Python processes without a JVM (pipeline/run/local.py says when and why); a bigger
one replaces this process with that spark-submit command, as before. Submitted with spark-submit directly it
always runs on Spark.
"""
from __future__ import annotations

import os
import sys
import time

DRIVER_START = time.time()  # before the heavy imports: the bench splits the command's time with it

from jobs import clean, dedup, extract, score  # noqa: E402
from jobs.common import executor_for, local_session, parse_args, split_submit  # noqa: E402
from pipeline.run.local import choose_executor  # noqa: E402
from pipeline.run.runner import Runner  # noqa: E402
from pipeline.run.spark import get_spark  # noqa: E402
from pipeline.run.stats import nothing_kept_line  # noqa: E402
from pipeline.run.units import write_json_atomic  # noqa: E402


STAGES = (extract.SPEC, clean.SPEC, score.SPEC, dedup.SPEC)


def main(argv=None) -> None:
    # make clean-dedup: choose between local processes and the spark-submit command after --or-submit
    argv, submit = split_submit(list(sys.argv[1:] if argv is None else argv))
    cfg, data, fresh = parse_args(__doc__, argv, fresh=True)
    if submit is not None:   # make's one config check (the config error, if any, was parse_args' last word)
        print(cfg.summary(), flush=True)
        os.makedirs(os.path.join(data, "spark-events"), exist_ok=True)   # make's EVENT_LOG, for any session started
    executor, reason = executor_for(lambda: choose_executor(cfg), submit, __file__, argv)
    t_checked = time.time()
    make_spark = lambda: get_spark("glassbox-clean-dedup", cfg.spark)  # noqa: E731
    if executor == "local":
        session, cores = local_session(submit, make_spark)
        print(f"executor: local Python processes x{cores}, no JVM ({reason})", flush=True)
        runner = Runner(session, cfg, data, fresh=fresh)
    else:
        print(f"executor: Spark ({reason})", flush=True)
        runner = Runner(make_spark, cfg, data, fresh=fresh)
    for spec in STAGES:
        runner.run(spec)
    t_end = time.time()
    master = runner.spark.sparkContext.master if runner.started_spark else "no Spark: nothing to do"
    if executor == "local" and runner.started_spark:
        if runner.spark.started_spark:
            master += f" (and a Spark session, {runner.spark.started_real_s:.1f}s to start)"
        runner.spark.stop()
    stats = [o.stats for o in runner.outcomes]
    first, last = stats[0], stats[-1]
    print(f"\nclean-dedup: {cfg.path} -> {data}  ({t_end - DRIVER_START:.1f}s in the driver, {master})")
    print(runner.table())
    stage_s = sum(o.wall_s for o in runner.outcomes)
    print(f"  driver: imports and config check {t_checked - DRIVER_START:.1f}s, Spark session "
          f"{runner.session_s:.1f}s, stages {stage_s:.1f}s, between stages "
          f"{max(0.0, t_end - t_checked - runner.session_s - stage_s):.1f}s")
    for d in stats[2].extra.get("distributions", []):
        if d["source"] == "*" and (d["quality"] or d["perplexity"]):
            q, p = d["quality"] or {}, d["perplexity"] or {}
            qm = f"{q['p50']:.3f}" if q.get("p50") is not None else "- (no classifier for it)"
            pm = f"{p['p50']:.0f}" if p.get("p50") is not None else "- (no KenLM model for it)"
            print(f"  score [{d['lang']}] {d['documents']} docs: quality median {qm}, "
                  f"perplexity median {pm} (buckets in stats/score.json)")
    print(f"  kept {last.records_out} of {first.records_in} input records "
          f"({last.bytes_out / 1e6:.2f} MB of text); documents in {data}/dedup, "
          f"dropped ones with their reasons in {data}/rejected, counts in {data}/stats")
    nothing = nothing_kept_line(stats)  # the last line: an empty result is a result, said plainly (exit 0)
    write_json_atomic(f"{data}/stats/run.json", {
        "driver_started_at": DRIVER_START, "config_checked_at": t_checked, "session_s": runner.session_s,
        "finished_at": t_end, "master": master, "executor": executor, "executor_reason": reason,
        "stages": [{"stage": o.stats.stage, "status": o.status, "wall_s": o.wall_s, "units": o.units,
                    "units_reused": o.reused, "records_in": o.stats.records_in,
                    "records_out": o.stats.records_out} for o in runner.outcomes],
        "nothing_kept": nothing})
    if nothing:
        print(nothing)


if __name__ == "__main__":
    main()
