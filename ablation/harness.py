"""lm-eval tasks on proxies large enough for them to mean something (harness.min_params): each finished proxy
is exported once (`glassbox export`, with its consistency check) and scored by `glassbox evaluate harness`,
both as subprocesses, the way a user runs them. The export sits in the run's `export-step<N>/` and the scores in
its `eval/harness.json`, reused while the tasks and the limit are the same.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

# metric names where lower is better; every other harness metric (acc, acc_norm, exact_match, f1, ...) is higher
LOWER_IS_BETTER = ("perplexity", "bits_per_byte", "byte_perplexity", "word_perplexity", "loss")


def lower_is_better(metric: str) -> bool:
    return metric.split(",")[0] in LOWER_IS_BETTER


def _run(cmd: list[str], log_file: str) -> None:
    with open(log_file, "a", encoding="utf-8") as log:
        log.write(f"\n== {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        with open(log_file, encoding="utf-8", errors="replace") as fh:
            tail = fh.read()[-3000:]
        raise RuntimeError(f"{' '.join(cmd[2:4])} failed (exit {proc.returncode}); {log_file} ends:\n{tail}")


def proxy_scores(run: str, step: int, tasks: list[str], limit: int | None, log_file: str) -> dict[str, float]:
    """{"task/metric": value} of one finished proxy (standard errors left out)."""
    export_dir = os.path.join(run, f"export-step{step}")
    result_file = os.path.join(export_dir, "eval", "harness.json")
    result = None
    if os.path.isfile(result_file):
        with open(result_file, encoding="utf-8") as fh:
            result = json.load(fh)
        if result.get("tasks") != list(tasks) or result.get("limit") != limit:
            result = None
    if result is None:
        cli = [sys.executable, "-m", "glassbox.cli"]
        if not os.path.isdir(export_dir):
            _run(cli + ["export", run, "--out", export_dir, "--step", str(step)], log_file)
        _run(cli + ["evaluate", "harness", export_dir, "--tasks", ",".join(tasks)]
             + (["--limit", str(limit)] if limit else []), log_file)
        with open(result_file, encoding="utf-8") as fh:
            result = json.load(fh)
    out = {}
    for task, metrics in sorted((result.get("results") or {}).items()):
        for k, v in sorted(metrics.items()):
            if k in ("alias", "name", "sample_len") or "stderr" in k or not isinstance(v, (int, float)):
                continue
            out[f"{task}/{k.removesuffix(',none')}"] = float(v)
    return out
