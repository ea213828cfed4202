"""Stage 1: read every source file into documents (HTML extraction for WARC), one Spark task a file."""
from __future__ import annotations

import os
import time

from pipeline.batches import EXTRACT_DDL, extract_partition
from pipeline.spark import finish_stage, get_spark

FILES_DDL = "path string, source string, format string, text_field string, id_field string"


def run(spark, cfg, data_dir: str):
    t0 = time.time()
    files = [(path, name, src.format, src.text_field, src.id_field) for path, name, src in cfg.input_files()]
    # Biggest files first, so one large file does not start last and hold the stage up.
    files.sort(key=lambda f: (-os.path.getsize(f[0]), f[0]))
    listing = spark.sparkContext.parallelize(files, max(1, len(files))).toDF(FILES_DDL)
    rows = listing.mapInArrow(extract_partition(cfg.extract), EXTRACT_DDL)
    return finish_stage(spark, "extract", rows, data_dir, "extracted", t0=t0,
                        input_desc=f"{len(files)} files ({', '.join(sorted(cfg.sources))})")


if __name__ == "__main__":
    from jobs.common import parse_args

    cfg, data = parse_args(__doc__)
    print(run(get_spark("glassbox-extract", cfg.spark), cfg, data).summary())
