"""Stage 2: normalise and clean text, identify the language, add heuristic signals, apply the rules.
One work unit per Parquet file of extracted/."""
from __future__ import annotations

import functools
import os
import time

import pyarrow as pa

from pipeline.clean.batches import clean_partition, clean_schema
from pipeline.clean.langid import default_model_path
from pipeline.clean.languages import load_table
from pipeline.run.runner import Runner, StageSpec, path_identity
from pipeline.run.units import parquet_unit


def lid_model() -> str:
    """The language-ID model file the units read. Under spark-submit the driver imports pipeline/ from
    build/pipeline.zip, where no model lies beside the package: the units read the copy spark-submit ships
    (--files models/lid.176.ftz), so that copy is the one identified, as in a run without the JVM
    (pipeline/run/local.py), and both give the stage the same fingerprint."""
    path = default_model_path()
    shipped = os.path.abspath(os.path.join("models", path.name))
    return shipped if not path.exists() and os.path.exists(shipped) else str(path)


def identity(cfg) -> dict:
    # the calibration table's content, not its name: a new built-in table re-runs the stage
    return {"clean": cfg.clean, "lid_model": path_identity(lid_model()),
            "calibration": load_table(cfg.clean.calibration)}


def clean_unit(unit: dict, dirs, fp: str, clean_cfg, model: str) -> dict:
    def transform(schema: pa.Schema):
        return clean_partition(clean_cfg, model, schema), clean_schema(schema)
    return parquet_unit(unit["path"], transform, unit, dirs, fp)


def run(spark, cfg, data_dir: str, ctx=None):
    if ctx is None:  # called alone (tests, benches): through the runner, which always runs it
        return Runner(spark, cfg, data_dir).run(SPEC, force=True).stats
    t0 = time.time()
    src = os.path.join(data_dir, "extracted")
    markers = ctx.run_units(ctx.parquet_units(src),
                            functools.partial(clean_unit, clean_cfg=cfg.clean, model=str(default_model_path())))
    return ctx.commit("cleaned", markers, t0, input_desc=src)


SPEC = StageSpec("clean", "cleaned", identity, run, previous=("extract", "extracted"))

if __name__ == "__main__":
    from jobs.common import run_alone

    run_alone(SPEC, __doc__)
