"""Spark's Python daemon with the heavy imports done once, before it forks a worker per task.

PySpark forks every Python worker from one daemon process. The stock daemon has imported only
pyspark, so each new worker (one per core at the start of a stage, and again after workers sat
idle for a minute) pays for importing trafilatura, lxml, numpy, pyarrow and fastText before its
first record. Importing them here makes every fork start warm. Enabled with
`spark.python.daemon.module=pipeline.run.spark_daemon` (see pipeline.run.spark.DEFAULT_CONF).
"""
import importlib

for _module in ("pyarrow", "pyarrow.parquet", "trafilatura", "pipeline.extract.batches", "pipeline.clean.batches",
                "pipeline.score.batches", "pipeline.run.units", "pipeline.extract.html", "pipeline.clean.stage", "pipeline.clean.langid", "pipeline.dedup.exact"):
    try:
        importlib.import_module(_module)
    except Exception:  # a missing extra must not take the daemon, and so every Python task, down
        pass

from pyspark.daemon import manager  # noqa: E402

if __name__ == "__main__":
    manager()
