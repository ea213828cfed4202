"""Stage 1: read every source file into documents (HTML extraction for WARC). One work unit per
file, or per byte range of a gzipped WARC/WET file bigger than `extract.split_bytes`, so one big
file uses every core; each unit writes its own Parquet files (pipeline/run/units.py). A record read
twice (the same id from two files) is one row: a second, cheap phase moves the later kept copies to
rejected/ and leaves out the copies of records rejected already (pipeline/extract/repeats.py); it runs only
when there are some."""
from __future__ import annotations

import functools
import time

from pipeline.extract.batches import EXTRACT_ARROW, extract_batches
from pipeline.extract.repeats import find_later_copies, resolve_unit, second_units
from pipeline.run.repeats import ReadAgain
from pipeline.run.runner import Runner, StageSpec, fingerprint
from pipeline.extract.splits import plan_extract_units
from pipeline.run.units import run_unit


def identity(cfg) -> dict:
    """What the stage's result depends on: the settings and every input file's size and version."""
    return {"extract": cfg.extract,
            "sources": [[name, s.format, s.text_field, s.id_field, [[f.path, f.size, f.version] for f in s.inputs]]
                        + ([s.engine] if s.engine else [])  # as before where no source names its engine
                        # a text dump's rows now carry its url and metadata: read again, once
                        + ([s.url_field] if s.format in ("jsonl", "parquet") else [])
                        for name, s in sorted(cfg.sources.items())]}


def extract_unit(unit: dict, dirs, fp: str, extract_cfg) -> dict:
    return run_unit(unit, extract_batches(unit, extract_cfg), EXTRACT_ARROW, dirs, fp,
                    size_column="payload_bytes")


def run(spark, cfg, data_dir: str, ctx=None):
    if ctx is None:  # called alone (tests, benches): through the runner, which always runs it
        return Runner(spark, cfg, data_dir).run(SPEC, force=True).stats
    t0 = time.time()
    units = plan_extract_units(cfg)
    markers = ctx.run_units(units, functools.partial(extract_unit, extract_cfg=cfg.extract))
    files = len({u["path"] for u in units})
    desc = f"{files} files in {len(units)} units ({', '.join(sorted(cfg.sources))})"
    listed_twice = {p: n for s in cfg.sources.values() for p, n in s.listed_more_than_once.items()}
    extra = {"inputs_listed_more_than_once": listed_twice} if listed_twice else {}
    if listed_twice:
        ctx.log(f"extract: {len(listed_twice)} input files matched more than one pattern of their source and "
                f"were read once: {', '.join(sorted(listed_twice)[:3])}")
    # a commit interrupted after its swap: what it swapped in was checked already
    plan = ReadAgain() if ctx.committing else find_later_copies(spark, units, markers, ctx.dirs.out, ctx.dirs.rejected)
    if not plan:
        return ctx.commit("extracted", markers, t0, input_desc=desc, extra=extra)
    again = sum(len(v) for v in plan.repeated.values())
    left_out = sum(len(v) for v in plan.left_out.values())
    ctx.log(f"extract: records were read more than once: {again} later copies of kept records rejected as "
            f"repeated_record, {left_out} copies of records that have their row already (rejected at every "
            "reading, or read more than twice) left out")
    if left_out:
        extra = {**extra, "read_again_left_out": left_out}
    second = ctx.sub("repeats", fingerprint(ctx.fingerprint, sorted(plan.repeated.items()),
                                            sorted(plan.left_out.items())))
    markers = second.run_units(second_units(units, markers, ctx.dirs.out, ctx.dirs.rejected, plan), resolve_unit)
    stats = second.commit("extracted", markers, t0, input_desc=desc, extra=extra,
                          units=(ctx.units_total, ctx.units_reused))
    second.discard()
    return stats


SPEC = StageSpec("extract", "extracted", identity, run)

if __name__ == "__main__":
    from jobs.common import run_alone

    run_alone(SPEC, __doc__)
