"""Model files shipped to executors with `spark-submit --files`."""
from __future__ import annotations

import os


def resolve_model(path: str) -> str:
    """On a cluster the model travels with `spark-submit --files`; locally it is in models/."""
    if os.path.exists(path):
        return path
    from pyspark import SparkFiles

    shipped = SparkFiles.get(os.path.basename(path))
    return shipped if os.path.exists(shipped) else path


def task_cpus() -> int | None:
    """The cores Spark gave the running task (spark.task.cpus); None outside a Spark task."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return None
    tc = TaskContext.get()
    return max(1, int(tc.cpus())) if tc is not None else None
