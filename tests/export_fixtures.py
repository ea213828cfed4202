"""Real tiny training runs for the export and evaluation tests, trained once per test run.

The trainer-test corpus (tests/train_fixtures.py: WikiText-2 text, a sentencepiece BPE tokenizer, two sources)
and one tiny model (grouped-query attention: 4 query heads, 2 key/value heads) trained four steps from the same
seed by one process and by TP=2 x PP=2 (torchrun, 4 processes, gloo), with validation (held-out documents) at
steps 2 and 4 and complete checkpoints at steps 2 and 4. Adam's eps is EQUIVALENCE_EPS (tests/train_fixtures.py
argues it): then the two layouts train the same weights within WEIGHT_ATOL, so their exports must agree.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import once
from train_fixtures import EQUIVALENCE_EPS, REPO, make_dataset

CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64}
train: {steps: 4, micro_batch_size: 2, global_batch_size: 8, seed: 7}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4, eps: EPS}
schedule: {kind: cosine, warmup_steps: 1}
checkpoint: {every: 2, keep: 0}
log: {every: 2}
eval: {every: 2, samples_per_source: 8}
""".replace("EPS", repr(EQUIVALENCE_EPS))
LAYOUTS = {"one": (1, 1), "tp2pp2": (2, 2)}
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}

_SHARED: dict = {}


def train_run(root: Path, manifest: Path, config: Path, name: str, tp: int, pp: int) -> Path:
    n = tp * pp
    if n == 1:
        launch = [sys.executable, "-m", "train.pretrain"]
    else:
        launch = [str(Path(sys.executable).parent / "torchrun"), "--standalone", f"--nproc_per_node={n}",
                  "-m", "train.pretrain"]
    cmd = launch + ["--config", str(config), "--manifest", str(manifest), "--run-dir", str(root / name),
                    "--set", f"parallel.tp={tp}", "--set", f"parallel.pp={pp}"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, env=ENV)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return root / name


def tiny_runs() -> dict:
    """{"root", "manifest", "one": run dir, "tp2pp2": run dir}; trained once per test run (tests/once.py).
    Read them; what a test writes goes elsewhere (exported() writes under a folder of its own process)."""
    if not _SHARED:
        def build(root: Path) -> dict:
            manifest = make_dataset(root / "data", total_tokens=60_000, max_seq_len=32)
            config = root / "tiny.yaml"
            config.write_text(CONFIG)
            runs = {name: str(train_run(root, manifest, config, name, tp, pp)) for name, (tp, pp) in LAYOUTS.items()}
            return {"root": str(root), "manifest": str(manifest), **runs}

        _SHARED.update({k: Path(v) for k, v in once.built_once("export-tiny-runs", build, {"trainer"}).items()})
    return _SHARED


def exported(name: str, step: int | None = None) -> Path:
    """The export (in this process) of a tiny run's checkpoint, once."""
    from train.export.export import export

    runs = tiny_runs()
    key = ("export", name, step)
    if key not in _SHARED:
        if "exports" not in _SHARED:
            _SHARED["exports"] = Path(tempfile.mkdtemp(prefix="glassbox-exports-"))
            atexit.register(shutil.rmtree, _SHARED["exports"], True)
        out = _SHARED["exports"] / f"{name}-{step or 'latest'}"
        status, _ = export(runs[name], out, step=step)
        assert status == 0
        _SHARED[key] = out
    return _SHARED[key]
