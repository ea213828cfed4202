"""Stage 1: read every source file into documents (HTML extraction for WARC). One work unit per
file, or per byte range of a gzipped WARC/WET file bigger than `extract.split_bytes`, so one big
file uses every core; each unit writes its own Parquet files (pipeline/run/units.py)."""
from __future__ import annotations

import functools
import time

from pipeline.extract.batches import EXTRACT_ARROW, extract_batches
from pipeline.run.runner import Runner, StageSpec
from pipeline.extract.splits import plan_extract_units
from pipeline.run.units import run_unit


def identity(cfg) -> dict:
    """What the stage's result depends on: the settings and every input file's size and version."""
    return {"extract": cfg.extract,
            "sources": [[name, s.format, s.text_field, s.id_field, [[f.path, f.size, f.version] for f in s.inputs]]
                        + ([s.engine] if s.engine else [])  # as before where no source names its engine
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
    return ctx.commit("extracted", markers, t0,
                      input_desc=f"{files} files in {len(units)} units ({', '.join(sorted(cfg.sources))})")


SPEC = StageSpec("extract", "extracted", identity, run)

if __name__ == "__main__":
    from jobs.common import run_alone

    run_alone(SPEC, __doc__)
