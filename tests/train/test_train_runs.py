"""Whole training runs through torchrun: parallel layouts against one process, and resuming.

Numerical equivalence (the torchtitan way: match the single-device loss curve). The same tiny model
(grouped-query attention, intra-document attention on the packed rows, z-loss on, gradient clipping active), seed, data and global batch are trained for
six steps by one process and by TP=2 and PP=2 x DP=2 (with activation checkpointing), all gloo and fp32;
TP=2 x PP=2 x DP=2 (8 processes on 2 cores, the suite's costliest launch) is checked once, against one
process too, by tests/train/checkpoint/test_train_reshard.py, whose resharding runs start from it.

Tolerance: relative 1e-5 on loss, grad_norm and val_loss. In fp32 the layouts differ only in the order of
summations: tensor parallelism splits each row-parallel matmul and the vocabulary softmax into partial sums
joined by an all-reduce, data parallelism averages gradients across ranks, and gradient accumulation splits
the batch differently. Each reordering changes a result by a few ulps (fp32 epsilon 1.2e-7). Adam would turn
that noise into steps of +-lr wherever a gradient element is ~0 by cancellation, so these runs use Adam's eps
at EQUIVALENCE_EPS (tests/train_fixtures.py argues the bound); over six steps losses then stay near 1e-6
relative (measured: <= 5e-7) and merged weights within WEIGHT_ATOL. Every real bug class is orders of magnitude larger:
a missing all-reduce changes the very first forward loss by O(1), a gradient scaled by the wrong data or
tensor parallel factor changes grad_norm by 2x and the step-2 loss by ~1e-3, clipping that ignores the
sharded parameters changes grad_norm by ~30%.

Resume: a run stopped after step 2 (STEPS=2) and continued gives bit-identical losses, with a busy loop on every
core while it runs (the uninterrupted reference ran without); a run whose rank 0
is SIGKILLed after step 3 (between checkpoints, with a stale half-written checkpoint directory left behind)
resumes from step 2 and matches the uninterrupted run. The samples each rank actually read (``data.log_consumed``)
prove the committed steps consumed exactly the first steps x global_batch samples of the index, each once.
"""
import json
import zlib

import numpy as np
import pytest
import torch

from train.checkpoint.store import load_llama_state_dict
from train.data.manifest import read_manifest
from train.data.sample_index import DataOrder
from train.data.shards import ShardCache
from train.loop.metrics import read_metrics
from train_fixtures import EQUIVALENCE_EPS, cpu_hog, launch, make_dataset, weight_mismatches

CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64, document_masking: true}
data: {log_consumed: true}
train: {steps: 6, micro_batch_size: 2, global_batch_size: 8, seed: 7}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4, grad_clip: 0.5, z_loss: 1.0e-3, eps: EPS}
schedule: {kind: cosine, warmup_steps: 2}
checkpoint: {every: 2, keep: 0}
log: {every: 3}
eval: {every: 3, samples_per_source: 8}
""".replace("EPS", repr(EQUIVALENCE_EPS))
G, STEPS = 8, 6
REL = 1e-5


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    manifest = make_dataset(root / "data", total_tokens=60_000, max_seq_len=32)
    cfg = root / "tiny.yaml"
    cfg.write_text(CONFIG)
    return root, cfg, manifest


def train(setup, run, nproc=1, sets=(), steps=None, env=None, check=True):
    root, cfg, manifest = setup
    return launch(manifest, cfg, root / run, nproc=nproc, sets=sets, steps=steps, env=env, check=check)


@pytest.fixture(scope="module")
def reference(setup):
    root = setup[0]
    train(setup, "ref")
    return read_metrics(root / "ref", None)


def _compare(rows, ref, rel=REL):
    assert [(r["kind"], r["step"]) for r in rows] == [(r["kind"], r["step"]) for r in ref]
    for a, b in zip(rows, ref):
        for key in ("loss", "grad_norm", "ce", "z_loss", "val_loss", "val_loss_wiki", "val_loss_prose"):
            if key in b:
                assert a[key] == pytest.approx(b[key], rel=rel, abs=1e-7), (a["step"], key, a[key], b[key])


@pytest.mark.trainer
def test_reference_run_is_sane(setup, reference):
    kernels = json.loads((setup[0] / "ref" / "run.json").read_text())["invocations"][-1]["kernels"]
    assert kernels == {"engine": "single_stage", "compile": False, "attention": "cpu", "optimizer": "AdamW (fused)",
                       "document_masking": "SDPA with a block-diagonal causal mask",
                       "cpu_threads": kernels["cpu_threads"]} and kernels["cpu_threads"] >= 1
    train_rows = [r for r in reference if r["kind"] == "train"]
    assert [r["step"] for r in train_rows] == list(range(1, STEPS + 1))
    assert train_rows[-1]["loss"] < train_rows[0]["loss"]
    assert any(r["grad_norm"] > 0.5 for r in train_rows)        # clipping is active in the comparison
    assert all(r["z_loss"] > 0 and r["loss"] == pytest.approx(r["ce"] + r["z_loss"], rel=1e-5) for r in train_rows)
    assert [r["step"] for r in reference if r["kind"] == "val"] == [3, 6]


@pytest.mark.parametrize("tp, pp, dp, extra", [  # TP2 x PP2 x DP2 (8 ranks): tests/train/checkpoint/test_train_reshard.py
    pytest.param(2, 1, 1, [], id="tp2"),
    # ... with checkpoints written in the background (checkpoint.async: their completion is a collective)
    pytest.param(1, 2, 2, ["train.activation_checkpointing=true", "checkpoint.async=true"],
                 id="pp2-dp2-activation-checkpointing-async-checkpoints"),
])
@pytest.mark.trainer
def test_parallel_layout_matches_one_process(setup, reference, tp, pp, dp, extra):
    run = f"tp{tp}pp{pp}dp{dp}"
    train(setup, run, nproc=tp * pp * dp,
          sets=[f"parallel.tp={tp}", f"parallel.pp={pp}", f"parallel.dp={dp}", *extra])
    _compare(read_metrics(setup[0] / run, None), reference)
    engine = json.loads((setup[0] / run / "run.json").read_text())["invocations"][-1]["kernels"]["engine"]
    assert engine == ("single_stage" if pp == 1 else "pipeline")
    # The final checkpoint, tensor slices merged, is the one-process model's: with Adam's eps at EQUIVALENCE_EPS
    # the weights agree within WEIGHT_ATOL (argued in tests/train_fixtures.py), while a slice in the wrong place
    # is off by ~init std 0.02 (tests/train/export/test_export.py proves the comparison catches that).
    ours = load_llama_state_dict(setup[0] / run / "checkpoints" / "step_00000006", n_layers=2)
    ref = load_llama_state_dict(setup[0] / "ref" / "checkpoints" / "step_00000006", n_layers=2)
    assert weight_mismatches(ours, ref) == []
    from train.checkpoint.store import complete_checkpoints, verify
    assert [s for s, d in complete_checkpoints(setup[0] / run) if verify(d) is None] == [2, 4, 6]


def _consumed(run_dir):
    rows = []
    for f in sorted((run_dir / "consumed").glob("dp*.jsonl")):
        rows += [json.loads(x) for x in f.read_text().splitlines()]
    return rows


def _check_cursor(setup, run, resumed_at):
    """Committed reads: steps before the resume from the first invocation, the rest from the resumed one.
    Together they are the index prefix [0, STEPS * G), each sample once, with the indexed tokens."""
    root, _, manifest = setup
    rows = _consumed(root / run)
    committed = [r for r in rows if (r["step"] < resumed_at and r["run_start"] == 0)
                 or (r["step"] >= resumed_at and r["run_start"] == resumed_at)]
    samples = sorted(s for r in committed for s in r["samples"])
    assert samples == list(range(STEPS * G))
    for r in committed:                                          # samples g of step s: s*G <= g < (s+1)*G
        assert all(r["step"] * G <= s < (r["step"] + 1) * G for s in r["samples"])
    m = read_manifest(manifest)
    order = DataOrder.load(m, ShardCache(manifest.parent.parent / "token_cache", m.vocab_size, m.eos_id),
                           root / run / "data_order")
    for r in committed:
        assert r["crc32"] == zlib.crc32(np.stack([order.sample(s) for s in r["samples"]]).tobytes())
    return rows


@pytest.mark.trainer
def test_stop_and_continue_is_bit_identical(setup, reference):
    """On a loaded machine (the reference ran without the load): the thread count is pinned (train/loop/threads.py)."""
    root = setup[0]
    with cpu_hog():
        train(setup, "resume", steps=2)
        assert [r["step"] for r in read_metrics(root / "resume")] == [1, 2]
        r = train(setup, "resume")
    assert "resuming from step 2" in r.stdout
    rows = read_metrics(root / "resume")
    _compare(rows, [x for x in reference if x["kind"] == "train"], rel=0)
    _check_cursor(setup, "resume", resumed_at=2)
    again = train(setup, "resume")                               # already done: nothing to do
    assert "nothing to do" in again.stdout


@pytest.mark.trainer
def test_sigkill_mid_run_resumes_from_last_complete_checkpoint(setup, reference):
    root = setup[0]
    sets = ["parallel.dp=2"]
    r = train(setup, "killed", nproc=2, sets=sets, env={"GLASSBOX_FAULT_AFTER_STEP": "3"}, check=False)
    assert r.returncode != 0
    assert [x["step"] for x in read_metrics(root / "killed")] == [1, 2, 3]
    ckpts = root / "killed" / "checkpoints"
    assert (ckpts / "step_00000002" / "complete.json").is_file() and not (ckpts / "step_00000004").exists()
    # A checkpoint that was being written when the machine died: files, but no complete.json.
    (ckpts / "step_00000004").mkdir()
    (ckpts / "step_00000004" / "layer_00-model_00-model_states.pt").write_bytes(b"torn")
    r = train(setup, "killed", nproc=2, sets=sets)
    assert "resuming from step 2" in r.stdout and "moved to metrics.discarded.jsonl" in r.stdout
    _compare(read_metrics(root / "killed", None), reference)
    assert [x["step"] for x in read_metrics(root / "killed")] == list(range(1, STEPS + 1))
    assert (ckpts / "step_00000004" / "complete.json").is_file()     # rewritten whole this time
    rows = _check_cursor(setup, "killed", resumed_at=2)
    assert any(x["run_start"] == 0 and x["step"] == 2 for x in rows)    # step 3 was read, then redone
