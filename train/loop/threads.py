"""CPU threads of a trainer process, fixed before torch, MKL or OpenMP load.

MKL and OpenMP may change the number of threads a kernel uses from call to call when the machine is busy
(``MKL_DYNAMIC``, ``OMP_DYNAMIC``); a matrix product summed over another number of threads rounds
differently, so a resumed run could differ from the uninterrupted one on a loaded machine only. Here both
are off and the count is fixed: ``OMP_NUM_THREADS`` when set (torchrun sets 1 per rank), else the cores
this process may use shared among the node's ranks.
"""
from __future__ import annotations

import os


def pin_cpu_threads() -> int:
    """Set the thread environment (keeping what the user set) and return the thread count."""
    os.environ.setdefault("MKL_DYNAMIC", "FALSE")
    os.environ.setdefault("OMP_DYNAMIC", "FALSE")
    if not os.environ.get("OMP_NUM_THREADS"):
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        os.environ["OMP_NUM_THREADS"] = str(max(1, cores // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    os.environ.setdefault("MKL_NUM_THREADS", os.environ["OMP_NUM_THREADS"])
    return int(os.environ["OMP_NUM_THREADS"])
