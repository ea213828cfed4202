"""`make pretrain` as a user runs it, killed hard: the whole process group (make, torchrun and both ranks)
gets SIGKILL after a checkpoint, the same command is run again, and the loss rows after the resume must
equal those of an uninterrupted run. A checkpoint is either complete and marked, or ignored."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from train.loop.metrics import read_metrics
from train_fixtures import make_dataset

pytestmark = pytest.mark.slow

# Two data-parallel ranks, so the kill hits a real process group; a checkpoint every 20 steps, a metrics row
# every 5, so the kill comes at about step 25, long before the end (120) even on a loaded machine.
CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64}
parallel: {tp: 1, pp: 1, dp: 2}
train: {steps: 120, micro_batch_size: 2, global_batch_size: 8, seed: 11}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4, grad_clip: 1.0}
schedule: {kind: cosine, warmup_steps: 3}
checkpoint: {every: 20, keep: 0}
log: {every: 5}
eval: {every: 50, samples_per_source: 4}
"""


def _cmd(cfg, manifest, run):
    return ["make", "--no-print-directory", "pretrain", f"CONFIG={cfg}", f"MANIFEST={manifest}", f"RUN={run}"]


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    return {**env, "OMP_NUM_THREADS": "1"}


def _steps(run):
    try:
        return [r["step"] for r in read_metrics(run)]
    except (FileNotFoundError, ValueError):
        return []


def _processes_of(run) -> list[int]:
    """Pids of live processes whose command line names this run directory (make, torchrun, the ranks)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(run).encode() in (proc / "cmdline").read_bytes() \
                    and (proc / "stat").read_text().split(")")[-1].split()[0] != "Z":
                pids.append(int(proc.name))
        except OSError:          # gone while we looked
            pass
    return pids


def _complete(run):
    return sorted(p.parent.name for p in (run / "checkpoints").glob("step_*/complete.json"))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    manifest = make_dataset(root / "data", total_tokens=40_000, max_seq_len=32)
    cfg = root / "faults.yaml"
    cfg.write_text(CONFIG)
    return root, cfg, manifest


def test_sigkill_process_group_then_same_command_resumes(setup):
    root, cfg, manifest = setup
    ref = subprocess.run(_cmd(cfg, manifest, root / "ref"), cwd=REPO, env=_env(), capture_output=True,
                         text=True, timeout=900)
    assert ref.returncode == 0, ref.stdout[-3000:] + ref.stderr[-3000:]

    run = root / "killed"
    proc = subprocess.Popen(_cmd(cfg, manifest, run), cwd=REPO, env=_env(), start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 900
        # after the step-20 checkpoint is marked complete and a few more steps ran, before the end
        while not (_complete(run) and max(_steps(run) or [0]) >= 25):
            assert proc.poll() is None, proc.stdout.read()[-3000:]
            assert time.time() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # The ranks run in sessions of their own (torchrun's), so the kill reaches them through their lifeline:
    # they must all be gone soon after, however loaded the machine; only then is the last row final.
    deadline = time.time() + 120
    while _processes_of(run):
        assert time.time() < deadline, f"training ranks survived the kill of their process group: {_processes_of(run)}"
        time.sleep(0.2)
    killed_at = max(_steps(run))
    assert killed_at < 120, "the run finished before the kill"
    marked = _complete(run)
    # Every checkpoint folder is either marked complete or will be ignored on resume.
    newest = int(marked[-1].split("_")[1])
    assert newest <= killed_at

    again = subprocess.run(_cmd(cfg, manifest, run), cwd=REPO, env=_env(), capture_output=True, text=True,
                           timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"resuming from step {newest}" in again.stdout
    rows, ref_rows = read_metrics(run, None), read_metrics(root / "ref", None)
    assert [(r["kind"], r["step"]) for r in rows] == [(r["kind"], r["step"]) for r in ref_rows]
    for a, b in zip(rows, ref_rows):
        for key in ("loss", "grad_norm", "val_loss"):
            if key in b:
                assert a[key] == b[key], (a["step"], key, a[key], b[key])
    # every checkpoint left on disk is complete: the one torn by the kill was rewritten or never begun
    for ckpt in (run / "checkpoints").glob("step_*"):
        assert (ckpt / "complete.json").is_file(), f"{ckpt} has no complete.json"
        assert json.loads((ckpt / "complete.json").read_text())["step"] == int(ckpt.name.split("_")[1])
