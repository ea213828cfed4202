"""What a checkpoint costs the training loop: synchronous against background (``checkpoint.async``) saves.

The trainer (one process, tp = pp = dp = 1) trains the same model and data three ways: saving every
``--every`` steps synchronously, the same in the background, and saving only at the end (the floor). From
``metrics.jsonl`` (each row's wall ``time``): the interval between the rows of a saving step and the next is
the step plus what the save kept the loop waiting; the bench prints, per mode, the median extra wall per save
over the floor's median step interval, and the wall per step over all steps (the background writer shares the
machine's cores with training: on a busy CPU its cost moves into the steps that follow instead of vanishing).

    .venv/bin/python bench/checkpoint_save.py [--steps 30] [--every 5] [--d-model 384] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONFIG = """
model: {{n_layers: 4, d_model: {d}, n_heads: 8, vocab_multiple: 64}}
data: {{seq_len: 128}}
train: {{steps: {steps}, micro_batch_size: 8, global_batch_size: 8, seed: 1}}
optimizer: {{lr: 1.0e-3, min_lr: 1.0e-4}}
schedule: {{kind: cosine, warmup_steps: 2}}
checkpoint: {{every: {every}, keep: 2}}
log: {{every: 10, sample_every: 0, telemetry: false}}
"""


def run(tmp: Path, manifest: Path, name: str, d: int, steps: int, every: int, async_write: bool, threads: int):
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(CONFIG.format(d=d, steps=steps, every=every))
    out = tmp / name
    cmd = [sys.executable, "-m", "train.pretrain", str(out), "--config", str(cfg), "--manifest", str(manifest),
           "--set", f"checkpoint.async={'true' if async_write else 'false'}"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                       env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    if r.returncode:
        raise SystemExit(r.stdout[-3000:] + r.stderr[-3000:])
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    rows = [x for x in rows if x.get("kind", "train") == "train"]
    ckpt = out / "checkpoints" / f"step_{steps:08d}"
    size = sum(f.stat().st_size for f in ckpt.iterdir())
    return rows, size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--d-model", type=int, default=384)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        subprocess.run([sys.executable, "bench/synthetic_manifest.py", "--out", str(tmp / "data"), "--vocab", "8000",
                        "--tokens", "2e6", "--seq-len", "128", "--shards", "2"], cwd=REPO, check=True,
                       capture_output=True)
        manifest = next((tmp / "data" / "manifests").glob("*.json"))
        floor_rows, size = run(tmp, manifest, "floor", a.d_model, a.steps, 0, False, a.threads)
        gaps = lambda rows: {r2["step"]: r2["time"] - r1["time"] for r1, r2 in zip(rows, rows[1:])}  # noqa: E731
        floor = statistics.median(gaps(floor_rows)[s] for s in range(3, a.steps + 1))
        print(f"model d_model {a.d_model}, 4 layers; checkpoint {size / 2**20:.1f} MiB; floor: "
              f"{floor * 1000:.0f} ms per step (median row interval, no save)")
        print(f"{'mode':<12} {'extra wall per save (ms, median)':>34} {'wall per step, all steps (ms)':>31}")
        for mode in ("sync", "async"):
            rows, _ = run(tmp, manifest, mode, a.d_model, a.steps, a.every, mode == "async", a.threads)
            g = gaps(rows)
            after = [g[s + 1] - floor for s in range(a.every, a.steps, a.every) if s + 1 in g]
            per_step = (rows[-1]["time"] - rows[1]["time"]) / (len(rows) - 2)
            print(f"{mode:<12} {statistics.median(after) * 1000:>34.0f} {per_step * 1000:>31.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
