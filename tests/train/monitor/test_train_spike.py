"""Spike handling in real runs: a deliberately corrupted batch, skipped or rolled back.

``GLASSBOX_FAULT_BAD_BATCH=24`` makes data batch 24 (step 25 without rollbacks) arrive as all-zero token ids,
as from a shard of zero bytes: its loss jumps from about 5 to 8 and its gradient norm from about 1 to 50,
while 24 clean steps of this tiny model stay within robust z 3 (loss) and 7 (grad norm) of their medians.

skip: the update of step 25 alone is dropped: its checkpoint holds exactly the weights and Adam state of step
24 (bit for bit), step 26 trains on. The same run as a 2-stage pipeline (the decision is taken inside
``PipelineEngine.train_batch``, on both stages) gives the one-process losses, which it would not if one stage
had applied the update and the other not.

rollback (2 data-parallel processes): the spike at step 25 restores checkpoint 20 and moves the cursor past
data batches 20-24; the run finishes 40 steps, one metrics row each, and the record names the skipped samples
and documents, recomputed here from the data order.
"""
import json

import numpy as np
import pytest
import torch

from train.checkpoint.store import load_llama_state_dict
from train.config import ConfigError, parse_config
from train.data.manifest import read_manifest
from train.data.sample_index import DataOrder
from train.data.shards import ShardCache
from train.monitor.spike_rule import SpikeDetector
from train.record.trace import trace
from train_fixtures import EQUIVALENCE_EPS, weight_mismatches
from watch_fixtures import launch, make_watch_dataset

G = 8
BAD = 24            # data batch
CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64}
data: {log_consumed: true}
train: {steps: 40, micro_batch_size: 4, global_batch_size: 8, seed: 7, on_spike: skip}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4, grad_clip: 1.0, eps: EPS}
schedule: {kind: cosine, warmup_steps: 2}
checkpoint: {every: 10, keep: 0}
log: {every: 5, sample_every: 0}
eval: {every: 0}
""".replace("EPS", repr(EQUIVALENCE_EPS))   # weights compared across layouts below
FAULT = {"GLASSBOX_FAULT_BAD_BATCH": str(BAD)}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("spike")
    manifest = make_watch_dataset(root / "data")
    cfg = root / "spike.yaml"
    cfg.write_text(CONFIG)
    m = read_manifest(manifest)
    cache = ShardCache(manifest.parent.parent / "token_cache", m.vocab_size, m.eos_id)
    return root, cfg, manifest, m, cache


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []


def _docs(order, first, end):
    """[source, id] of the documents behind samples [first, end), by DataOrder.locate."""
    out = []
    for g in range(first, end):
        for seg in order.locate(g // G, g % G, G):
            pair = [seg.source, order.document_id(seg)]
            if pair not in out:
                out.append(pair)
    return out


def _optim_state(ckpt):
    """The torch AdamW state of a one-process checkpoint without ZeRO: {index: {step, exp_avg, exp_avg_sq}}."""
    f = ckpt / "mp_rank_00_model_states.pt"
    return torch.load(f, map_location="cpu", weights_only=False)["optimizer"]["state"]


@pytest.fixture(scope="module")
def skipped(setup):
    root, cfg, manifest, _, _ = setup
    # Without ZeRO (the default with one data-parallel rank): over two stages the trainer computes the
    # gradient norm itself (DeepSpeed's clip would leave the second stage's weights out).
    sets = ["checkpoint.every=1"]
    one = launch(manifest, cfg, root / "skip", sets=sets, steps=28, env=FAULT)
    pipe = launch(manifest, cfg, root / "skip-pp2", nproc=2, sets=sets + ["parallel.pp=2"], steps=28, env=FAULT)
    return one, pipe


@pytest.mark.trainer
def test_skip_drops_exactly_the_spike_update(setup, skipped):
    root, _, manifest, m, cache = setup
    rows = _rows(root / "skip" / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, 29))
    assert [r["step"] for r in rows if r["update_skipped"]] == [BAD + 1]
    spike = rows[BAD]
    assert spike["loss"] > 1.3 * rows[BAD - 1]["loss"] and spike["grad_norm"] > 10 * rows[BAD - 1]["grad_norm"]
    assert rows[-1]["loss"] < rows[BAD]["loss"] and all(r["samples_consumed"] == r["step"] * G for r in rows)
    ck = root / "skip" / "checkpoints"
    w = {s: load_llama_state_dict(ck / f"step_{s:08d}", n_layers=2) for s in (BAD, BAD + 1, BAD + 2)}
    assert all(torch.equal(w[BAD][k], w[BAD + 1][k]) for k in w[BAD])             # step 25 changed nothing
    assert any(not torch.equal(w[BAD + 1][k], w[BAD + 2][k]) for k in w[BAD])     # step 26 trained
    a, b, c = (_optim_state(ck / f"step_{s:08d}") for s in (BAD, BAD + 1, BAD + 2))
    assert all(torch.equal(torch.as_tensor(a[i][k]), torch.as_tensor(b[i][k])) for i in a for k in a[i])
    assert not all(torch.equal(torch.as_tensor(b[i]["step"]), torch.as_tensor(c[i]["step"])) for i in b)
    # The record: one spike, its batch and documents.
    order = DataOrder.load(m, cache, root / "skip" / "data_order")
    (event,) = _rows(root / "skip" / "spikes.jsonl")
    assert event["step"] == BAD + 1 and event["data_step"] == BAD and event["action"] == "skip"
    assert event["samples"] == [BAD * G, (BAD + 1) * G] and "loss z" in event["reason"]
    assert event["documents"] == _docs(order, BAD * G, (BAD + 1) * G)
    assert not (root / "skip" / "rollbacks.jsonl").exists()
    assert "spike: loss z" in skipped[0].stdout and "update skipped" in skipped[0].stdout


@pytest.mark.trainer
def test_skip_decision_agrees_across_pipeline_stages(setup, skipped):
    root = setup[0]
    one, two = _rows(root / "skip" / "metrics.jsonl"), _rows(root / "skip-pp2" / "metrics.jsonl")
    assert [r["update_skipped"] for r in two] == [r["update_skipped"] for r in one]
    for a, b in zip(one, two):
        for k in ("loss", "grad_norm"):
            assert b[k] == pytest.approx(a[k], rel=1e-5), (a["step"], k)
    w1 = load_llama_state_dict(root / "skip" / "checkpoints" / "step_00000028", n_layers=2)
    w2 = load_llama_state_dict(root / "skip-pp2" / "checkpoints" / "step_00000028", n_layers=2)
    assert weight_mismatches(w1, w2) == []      # within WEIGHT_ATOL (tests/train_fixtures.py argues it)


ROLLBACK = ["train.on_spike=rollback", "parallel.dp=2", "train.micro_batch_size=2"]


@pytest.fixture(scope="module")
def rolled_back(setup):
    root, cfg, manifest, _, _ = setup
    return launch(manifest, cfg, root / "rollback", nproc=2, sets=ROLLBACK, env=FAULT)


@pytest.mark.trainer
def test_rollback_restores_skips_the_window_and_names_the_documents(setup, rolled_back):
    root, cfg, manifest, m, cache = setup
    run = root / "rollback"
    r = rolled_back
    assert "rolled back to step 20; data batches 20-24 skipped" in r.stdout
    rows = _rows(run / "metrics.jsonl")
    assert [x["step"] for x in rows] == list(range(1, 41))                     # one row per step
    assert not any(x["update_skipped"] for x in rows)
    assert [x["step"] for x in _rows(run / "metrics.discarded.jsonl")] == [21, 22, 23, 24, 25]
    shift = 5
    assert all(x["samples_consumed"] == (x["step"] + (shift if x["step"] > 20 else 0)) * G for x in rows)
    assert sum(x["loss"] for x in rows[-5:]) < sum(x["loss"] for x in rows[:5])
    assert json.loads((run / "checkpoints" / "step_00000030" / "complete.json").read_text())["data_shift"] == shift

    order = DataOrder.load(m, cache, run / "data_order")
    (rb,) = _rows(run / "rollbacks.jsonl")
    assert rb["step"] == BAD + 1 and rb["restored_step"] == 20 and rb["data_shift"] == shift
    assert rb["spike_data_step"] == BAD and rb["skipped_data_steps"] == [20, 25]
    assert rb["skipped_samples"] == [20 * G, 25 * G]
    assert rb["skipped_documents"] == _docs(order, 20 * G, 25 * G)
    assert rb["skipped_documents_total"] == len(rb["skipped_documents"])
    assert rb["spike_documents"] == [d for d in rb["skipped_documents"] if d in _docs(order, BAD * G, (BAD + 1) * G)]
    detail = _rows(run / rb["documents_file"])
    assert [[d["source"], d["id"]] for d in detail] == rb["skipped_documents"]
    assert {p[0] for d in detail for p in d["pieces"]} == set(range(20 * G, 25 * G))
    (event,) = _rows(run / "spikes.jsonl")
    assert event["action"] == "rollback" and event["step"] == BAD + 1

    # What the ranks read: every data batch 0..44 once, in order (20-24 before the rollback, then 25 on).
    for dp in (0, 1):
        steps = [x["step"] for x in _rows(run / "consumed" / f"dp{dp}.jsonl")]
        assert steps == [s for s in range(45) for _ in range(2)]               # 2 micro-batches per step
    # The trace of step 21 after the rollback is data batch 25.
    t = trace(run, 21)
    assert t["data_step"] == 25 and t["samples"] == [25 * G, 26 * G]


@pytest.mark.trainer
def test_a_kill_after_a_rollback_resumes_past_it_without_replaying_it(setup, rolled_back):
    """SIGKILL at step 27: after the rollback of step 25 to checkpoint 20, before checkpoint 30 records the new
    data shift. The same command again (the bad batch still bad) must resume from checkpoint 20 at shift 5
    (from rollbacks.jsonl), not train into batch 24 again: one spike and one rollback on record, and the
    losses of the uninterrupted run, bit for bit."""
    root, cfg, manifest, _, _ = setup
    run = root / "rollback-killed"
    r = launch(manifest, cfg, run, nproc=2, sets=ROLLBACK, env={**FAULT, "GLASSBOX_FAULT_AFTER_STEP": "27"},
               check=False)
    assert r.returncode != 0 and "rolled back to step 20" in r.stdout
    assert [x["step"] for x in _rows(run / "metrics.jsonl")] == list(range(1, 28))
    assert sorted(p.parent.name for p in run.glob("checkpoints/*/complete.json"))[-1] == "step_00000020"
    assert len(_rows(run / "spikes.jsonl")) == 1 and len(_rows(run / "rollbacks.jsonl")) == 1
    r = launch(manifest, cfg, run, nproc=2, sets=ROLLBACK, env=FAULT)
    assert len(_rows(run / "spikes.jsonl")) == 1 and len(_rows(run / "rollbacks.jsonl")) == 1
    assert "spike:" not in r.stdout
    assert "the rollback of step 25 to it replayed from rollbacks.jsonl (data shift 5)" in r.stdout
    ours, ref = _rows(run / "metrics.jsonl"), _rows(root / "rollback" / "metrics.jsonl")
    assert [x["step"] for x in ours] == list(range(1, 41))
    assert [(x["loss"], x["samples_consumed"]) for x in ours] == [(x["loss"], x["samples_consumed"]) for x in ref]
    assert json.loads((run / "checkpoints" / "step_00000030" / "complete.json").read_text())["data_shift"] == 5


# ------------------------------------------------------------------------------------- detector and config

def _healthy(n, seed):
    """Loss of a healthy run: power-law decay with batch noise (2%); grad norm around 1 with 15% noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1)
    loss = (2.0 + 6.0 * t ** -0.4) * (1 + 0.02 * rng.standard_normal(n))
    gn = np.abs(1.0 + 0.15 * rng.standard_normal(n)) + 0.5 * np.exp(-t / 50)
    return loss, gn


@pytest.mark.parametrize("seed", range(5))
def test_detector_quiet_on_healthy_curves_and_finds_injected_spikes(seed):
    loss, gn = _healthy(3000, seed)
    det = SpikeDetector()
    assert not any(det.judge(float(a), float(b)).spike for a, b in zip(loss, gn))
    det = SpikeDetector()
    loss[1500] *= 1.4                               # a bad batch: the loss 40% up ...
    gn[2500] *= 6                                   # ... a gradient blow-up alone
    hits = []
    for i, (a, b) in enumerate(zip(loss, gn)):
        if det.judge(float(a), float(b)).spike:
            hits.append(i)
            assert det.loss_hist[-1] != float(a) and len(det.loss_hist) == det.window   # not in its own baseline
    assert hits == [1500, 2500]


@pytest.mark.trainer
def test_diagnosis_calls_the_same_steps_spikes_as_the_live_monitor(setup, skipped):
    """One rule, live and afterwards: the diagnosis replays the run's curve through the trainer's detector with
    the run's own settings, so its spike findings are exactly the steps the monitor skipped."""
    from train.record.diagnose import assess_run
    from train.record.formats import read_run

    root = setup[0]
    rows = _rows(root / "skip" / "metrics.jsonl")
    skipped_steps = [r["step"] for r in rows if r["update_skipped"]]
    spikes = [f for f in assess_run(read_run(root / "skip")).findings if f.kind == "spike"]
    assert [s for f in spikes for s in range(f.step, f.end_step + 1)] == skipped_steps == [BAD + 1]


def test_detector_nonfinite_history_and_state():
    det = SpikeDetector(min_history=20)
    assert det.judge(float("nan"), 1.0).spike and det.judge(3.0, float("inf")).spike   # before any history
    assert not any(det.judge(3.0 - 0.001 * i, 1.0).spike for i in range(19))
    j = det.judge(30.0, 1.0)
    assert not j.spike and j.loss_z is None         # 19 accepted values: not judged yet
    det2 = SpikeDetector(min_history=20)
    det2.load(det.state())
    assert det2.state() == det.state() and det2.judge(300.0, 1.0).spike


def test_spike_config_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"train\.on_spike: rollback .* checkpoint\.every"):
        parse_config({"train": {"on_spike": "rollback"}, "checkpoint": {"every": 0}})
    with pytest.raises(ConfigError, match=r"train\.on_spike: must be one of off, skip, rollback"):
        parse_config({"train": {"on_spike": "yes"}})
    with pytest.raises(ConfigError, match=r"train\.spike_window"):
        parse_config({"train": {"spike_window": 10, "spike_min_history": 20}})
    with pytest.raises(ConfigError, match=r"train\.spike_loss_z: must be >= 0"):
        parse_config({"train": {"spike_loss_z": -1}})
    cfg = parse_config({"train": {"on_spike": "rollback"}, "checkpoint": {"every": 50}})
    assert cfg.train.on_spike == "rollback"
