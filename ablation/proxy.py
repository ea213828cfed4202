"""Proxy models: ordinary trainer runs (`python -m train.pretrain`), one per (variant, seed).

Every proxy gets the same trainer config, with only `train.seed` and `train.steps` set on its command line
(steps = the token budget / (global batch x seq_len)), and its seed's manifest. A proxy whose run holds a
complete checkpoint at the last step is finished and reused; any other existing run directory is resumed by
the trainer itself from its newest complete checkpoint. The process count is the config's tp x pp x dp, so a
GPU or a larger layout is a change of the proxy config only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from glassbox.contracts import metrics_row_kinds
from train.loop.lifeline import die_with_parent


def run_name(variant: str, seed: int) -> str:
    return f"{variant}-s{seed}"


def finished_step(run: str) -> int | None:
    """The step of the run's newest complete checkpoint (None: nothing saved yet)."""
    from train.checkpoint.store import latest_complete

    if not os.path.isdir(run):
        return None
    done = latest_complete(Path(run))
    return done[0] if done else None


def command(run: str, config: str, manifest: str, seed: int, steps: int, world_size: int) -> list[str]:
    if world_size == 1:
        head = [sys.executable, "-m", "train.pretrain"]
    else:
        head = [sys.executable, "-m", "train.launch", "--standalone", f"--nproc_per_node={world_size}",
                "-m", "train.pretrain"]
    return head + [run, "--config", config, "--manifest", manifest, "--steps", str(steps),
                   "--set", f"train.seed={seed}", "--set", f"train.steps={steps}"]


def train(run: str, config: str, manifest: str, seed: int, steps: int, world_size: int, log_file: str,
          env: dict | None = None) -> dict:
    """Train (or resume, or reuse) one proxy; -> {"status": trained | resumed | reused, "wall_s"}."""
    step = finished_step(run)
    if step is not None and step >= steps:
        return {"status": "reused", "wall_s": 0.0}
    status = "resumed" if os.path.isdir(run) else "trained"
    os.makedirs(os.path.dirname(log_file), exist_ok=True)
    t0 = time.time()
    with open(log_file, "a", encoding="utf-8") as log:
        log.write(f"\n== {' '.join(command(run, config, manifest, seed, steps, world_size))}\n")
        log.flush()
        # a killed ablation takes its trainer with it: a rerun must not find a second one writing the same run
        proc = subprocess.run(command(run, config, manifest, seed, steps, world_size), stdout=log,
                              stderr=subprocess.STDOUT, preexec_fn=die_with_parent, env=env)
    if proc.returncode != 0 or (finished_step(run) or 0) < steps:
        tail = Path(log_file).read_text(errors="replace")[-3000:]
        raise RuntimeError(f"proxy {run} failed (exit {proc.returncode}); its log {log_file} ends:\n{tail}")
    return {"status": status, "wall_s": round(time.time() - t0, 1)}


def read_metrics(run: str) -> list[dict]:
    rows = []
    p = os.path.join(run, "metrics.jsonl")
    if not os.path.isfile(p):
        return rows
    with open(p, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict):
                rows.append(r)
    return rows


def curve(rows: list[dict]) -> list[list[float]]:
    """[tokens, training loss] of every step (the last row of a step wins: a resumed run may repeat one)."""
    by_step = {}
    for r in rows:
        if "train" in metrics_row_kinds(r) and isinstance(r.get("loss"), (int, float)) and "step" in r:
            by_step[int(r["step"])] = [float(r.get("tokens") or 0), float(r["loss"])]
    return [by_step[s] for s in sorted(by_step)]


def epochs(manifest_path: str, rows: list[dict], tokens_trained: int) -> dict[str, dict]:
    """Per source: tokens available, planned epochs (the manifest) and realized epochs (the run's cumulative
    share of the tokens trained, from its telemetry)."""
    with open(manifest_path, encoding="utf-8") as fh:
        man = json.load(fh)
    last = {}
    for r in rows:
        for k, v in r.items():
            if k.startswith("share_") and not k.startswith("share_target_") and isinstance(v, (int, float)):
                last[k[len("share_"):]] = float(v)
    out = {}
    for name, s in sorted(man["sources"].items()):
        avail = int(s["available_tokens"])
        realized = last.get(name)
        out[name] = {"available_tokens": avail, "planned_epochs": float(s["epochs"]),
                     "share": float(s["weight"]),
                     "realized_epochs": round(realized * tokens_trained / avail, 4) if realized is not None and avail
                     else None}
    return out
