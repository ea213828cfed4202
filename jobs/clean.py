"""Stage 2: normalise and clean text, identify the language, add heuristic signals, apply the rules."""
from __future__ import annotations

import os
import time

from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from pipeline.batches import clean_columns, clean_partition
from pipeline.langid import default_model_path
from pipeline.spark import finish_stage, get_spark, input_stats, text_bytes


def run(spark, cfg, data_dir: str):
    t0 = time.time()
    src = os.path.join(data_dir, "extracted")
    docs = spark.read.parquet(src)
    n_in, bytes_in = input_stats(docs, text_bytes())
    out_ddl = ", ".join([f"`{f.name}` {f.dataType.simpleString()}" for f in docs.schema.fields] +
                        [f"`{name}` {kind}" for name, kind, _ in clean_columns()])
    model = default_model_path()
    rows = docs.mapInArrow(clean_partition(cfg.clean, model, to_arrow_schema(docs.schema)),
                           StructType.fromDDL(out_ddl))
    return finish_stage(spark, "clean", rows, data_dir, "cleaned", t0=t0, input_desc=src,
                        records_in=n_in, bytes_in=bytes_in)


if __name__ == "__main__":
    from jobs.common import parse_args

    cfg, data = parse_args(__doc__)
    print(run(get_spark("glassbox-clean", cfg.spark), cfg, data).summary())
