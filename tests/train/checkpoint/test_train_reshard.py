"""Resuming a run in another TP x PP x DP layout (train/checkpoint/reshard.py), the torchtitan way.

Equivalence. Run R trains in one process to step 20: the reference. Run A trains in TP2 x PP2 x DP2 (8
processes, the suite's only 8-rank run) to step 10 and must match R there (every layout equals one process:
tests/train/test_train_runs.py checks the smaller ones). Copies of A at step 10 continue to step 20 in TP1 x PP1 x
DP2 (tensor and pipeline slices merged) and TP2 x PP1 x DP1 (pipeline stages and ZeRO partitions merged); a
copy of the latter as it was at step 15 (its checkpoint 20 removed) continues in TP1 x PP2 x DP2 (pipeline
and data split again, tensor merged). Losses, gradient norms and validation losses of every step must match
R's within relative 1e-5, the project's fp32 equivalence tolerance, and the weights at steps 10 and 20 R's.

Adam's eps is EQUIVALENCE_EPS (1e-4; tests/train_fixtures.py argues it): with the default 1e-8, Adam turns the
summation-order noise of near-zero gradients into steps of +-lr in single weights (issue 19), and layouts would
part by more than the tolerance within a few steps; with 1e-4 a gradient error dg moves a weight by at most
lr * dg / eps per step, far below what a loss at 1e-5 or a weight at WEIGHT_ATOL can see, while Adam still
normalises the gradients above eps (the test checks the loss falls).

What the comparisons see (measured on this model with this eps: a TP2 checkpoint resumed in TP1 for 5 steps,
against the TP2 run): done right, losses agree to 2e-7 relative and weights to 1.2e-7; with the Adam moments
lost on resume, losses part by 4e-3 and weights by 8e-3; with the two tensor halves of one weight swapped
(layer 0's q_proj), losses by 8e-5 and weights by 0.1; but with only that weight's moments swapped, losses by
2e-6, below the tolerance (early attention is nearly uniform), and weights by 1.8e-3. Hence the weights are
compared too (WEIGHT_ATOL, 1e-5), and the conversion is also tested bit for bit: a checkpoint carried through
three layouts and all three optimizer formats DeepSpeed writes (ZeRO-1 fp32, the bf16 optimizer, fp32 without
ZeRO), saved at once each time, keeps every fp32 master weight and Adam moment bit for bit.
"""
import json
import shutil

import pytest
import torch

from train.checkpoint import reshard
from train.export.weights import find_checkpoint, merge_checkpoint, meta_model, partition_dims
from train.loop.metrics import read_metrics
from train_fixtures import EQUIVALENCE_EPS, WEIGHT_ATOL, launch, make_dataset, roundtrip, weight_mismatches

pytestmark = pytest.mark.slow

CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64, document_masking: true}
train: {steps: 20, micro_batch_size: 2, global_batch_size: 8, seed: 7}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4, grad_clip: 0.5, eps: EPS, z_loss: 1.0e-3}
schedule: {kind: cosine, warmup_steps: 2}
checkpoint: {every: 5, keep: 0}
log: {every: 5, sample_every: 0}
eval: {every: 10, samples_per_source: 8}
""".replace("EPS", repr(EQUIVALENCE_EPS))
REL = 1e-5
KEYS = ("loss", "grad_norm", "ce", "z_loss", "val_loss")


def layout(tp, pp, dp, **extra):
    return [f"parallel.tp={tp}", f"parallel.pp={pp}", f"parallel.dp={dp}"] + [f"{k}={v}" for k, v in extra.items()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("reshard")
    manifest = make_dataset(root / "data", total_tokens=60_000, max_seq_len=32)
    cfg = root / "tiny.yaml"
    cfg.write_text(CONFIG)

    def go(run, sets, steps=None, **kw):
        return launch(manifest, cfg, root / run, nproc=eval_nproc(sets), sets=sets, steps=steps, **kw)

    def copy(src, dst):
        shutil.copytree(root / src, root / dst)

    out = {"root": root, "cfg": cfg, "manifest": manifest}
    go("R", layout(1, 1, 1))
    go("A", layout(2, 2, 2), steps=10)
    copy("A", "B")
    copy("A", "C")
    out["B"] = go("B", layout(1, 1, 2))
    out["C"] = go("C", layout(2, 1, 1))
    copy("C", "D")                              # C as it was at step 15: its last checkpoint removed
    shutil.rmtree(root / "D" / "checkpoints" / "step_00000020")
    out["D"] = go("D", layout(1, 2, 2))
    return out


def eval_nproc(sets):
    n = 1
    for s in sets:
        if s.startswith("parallel."):
            n *= int(s.split("=")[1])
    return n


def _rows(run):
    return read_metrics(run, None)


def _max_rel(rows, ref, first_step):
    """Largest relative difference over KEYS from ``first_step`` on: every train row, and the validation rows
    both runs have (a run stopped early also validates at its stop step)."""
    rows = {(r["kind"], r["step"]): r for r in rows if r["step"] >= first_step}
    ref = {(r["kind"], r["step"]): r for r in ref if r["step"] >= first_step}
    assert sorted(k for k in rows if k[0] == "train") == sorted(k for k in ref if k[0] == "train")
    worst = 0.0
    for key in rows.keys() & ref.keys():
        a, b = rows[key], ref[key]
        for k in KEYS:
            if k in b:
                worst = max(worst, abs(a[k] - b[k]) / max(abs(b[k]), 1e-12))
    return worst


def test_eight_ranks_match_one_process(runs):
    """TP2 x PP2 x DP2 (tensor, pipeline and data parallel with ZeRO-1 at once) trains what one process trains."""
    root = runs["root"]
    rows = _rows(root / "A")
    assert [r["step"] for r in rows if r["kind"] == "train"] == list(range(1, 11))
    worst = _max_rel(rows, [r for r in _rows(root / "R") if r["step"] <= 10], 1)
    print(f"\nTP2xPP2xDP2 vs one process, steps 1-10: max relative difference {worst:.2e}")
    assert worst <= REL, worst
    ours, ref_w = (merge_checkpoint(find_checkpoint(root / r, 10)) for r in ("A", "R"))
    assert weight_mismatches(ours, ref_w) == []


@pytest.mark.parametrize("run, since, what", [
    ("B", 11, "TP2xPP2xDP2 -> TP1xPP1xDP2 at step 10 (merge TP and PP)"),
    ("C", 11, "TP2xPP2xDP2 -> TP2xPP1xDP1 at step 10 (merge PP and DP)"),
    ("D", 16, "TP2xPP1xDP1 -> TP1xPP2xDP2 at C's step 15 (split PP and DP, merge TP)"),
])
def test_resumed_in_another_layout_matches_the_unchanged_run(runs, run, since, what):
    root = runs["root"]
    ref = _rows(root / "R")
    train = [r for r in ref if r["kind"] == "train"]
    assert [r["step"] for r in train] == list(range(1, 21)) and train[-1]["loss"] < train[10]["loss"]
    worst = _max_rel(_rows(root / run), ref, since)
    print(f"\n{what}: steps {since}-20, max relative difference to R over {', '.join(KEYS)}: {worst:.2e}")
    assert worst <= REL, (what, worst)
    assert "in a new layout" in runs[run].stdout
    ours, ref_w = (merge_checkpoint(find_checkpoint(root / r, 20)) for r in (run, "R"))
    drift = max((ours[k] - ref_w[k]).abs().max().item() for k in ref_w)
    print(f"{what}: step 20 weights, max absolute difference to R: {drift:.1e} (tolerance {WEIGHT_ATOL:g})")
    assert weight_mismatches(ours, ref_w) == [], what


def test_the_run_record_notes_the_layout_change(runs):
    root = runs["root"]
    inv = json.loads((root / "D" / "run.json").read_text())["invocations"]
    changes = [i["layout_change"] for i in inv if "layout_change" in i]
    # zero_stage by default: ZeRO-1 with data parallel ranks, none with one (fp32)
    lay = lambda tp, pp, dp: {"tp": tp, "pp": pp, "dp": dp, "zero_stage": int(dp > 1)}     # noqa: E731
    assert changes == [{"step": 10, "from": lay(2, 2, 2), "to": lay(2, 1, 1)},
                       {"step": 15, "from": lay(2, 1, 1), "to": lay(1, 2, 2)}]
    resolved = json.loads((root / "D" / "config.json").read_text())
    assert resolved["config"]["parallel"] == {"tp": 1, "pp": 2, "dp": 2} and resolved["world_size"] == 4
    assert not (root / "D" / "reshard").exists()                     # the conversion is removed once loaded
    done = json.loads((root / "D" / "checkpoints" / "step_00000020" / "complete.json").read_text())
    assert done["layout"] == {"tp": 1, "pp": 2, "dp": 2, "zero_stage": 1}
    assert [r["step"] for r in _rows(root / "D") if r["kind"] == "train"] == list(range(1, 21))


def test_a_model_shape_change_is_still_refused(runs, tmp_path):
    root = runs["root"]
    shutil.copytree(root / "A", tmp_path / "A")
    r = launch(runs["manifest"], runs["cfg"], tmp_path / "A", sets=layout(1, 1, 1) + ["model.d_model=128"],
               steps=25, check=False)
    assert r.returncode == 2
    assert "model.d_model: 64 -> 128" in r.stderr and "Only the parallel layout" in r.stderr


def _universal(ckpt_dir, model_cfg):
    """{name: {fp32, exp_avg, exp_avg_sq, step}} of a checkpoint, whatever its layout, tensor slices joined."""
    lay = reshard.saved_layout(ckpt_dir)
    work = ckpt_dir.parent / f"{ckpt_dir.name}.universal"
    work.mkdir()
    reshard.convert(ckpt_dir, work, lay, model_cfg.n_layers)
    dims = partition_dims(meta_model(model_cfg))
    u = reshard.Universal(work, lay["tp"], dims)
    out = {name: u(name) for name in dims}
    shutil.rmtree(work)
    return out


def test_conversion_is_bit_exact_across_layouts_and_optimizer_formats(runs):
    """A@10 (ZeRO-1 fp32, TP2xPP2xDP2) -> bf16 optimizer TP1xPP1xDP2 -> fp32 without ZeRO TP2xPP1xDP1 ->
    ZeRO-1 fp32 TP1xPP2xDP1, each loaded by train.checkpoint.reshard.load and saved at once (tests/reshard_worker.py)."""
    root, manifest, cfg = runs["root"], runs["manifest"], runs["cfg"]
    src = root / "A10"
    shutil.copytree(root / "A", src, ignore=shutil.ignore_patterns("step_0000001[5-9]", "step_0000002*"))
    chain = [("W1", layout(1, 1, 2, **{"train.precision": "bf16"})),
             ("W2", layout(2, 1, 1, **{"train.zero_stage": 0})),
             ("W3", layout(1, 2, 1))]
    roundtrip(cfg, manifest, chain, src, 10, root)
    model_cfg = find_checkpoint(src).model_cfg
    ref = _universal(src / "checkpoints" / "step_00000010", model_cfg)
    assert all(v["step"] == 10.0 and "exp_avg" in v for v in ref.values())
    for name, _ in chain:
        got = _universal(root / name / "checkpoints" / "step_00000010", model_cfg)
        assert got.keys() == ref.keys()
        for p in ref:
            for k in ("fp32", "exp_avg", "exp_avg_sq"):
                assert torch.equal(got[p][k], ref[p][k]), (name, p, k)
            assert got[p]["step"] == ref[p]["step"]
    # The bf16 run's module weights are its master weights rounded to bf16.
    for p, t in merge_checkpoint(find_checkpoint(root / "W1")).items():
        assert t.dtype == torch.bfloat16 and torch.equal(t, ref[p]["fp32"].to(torch.bfloat16)), p
