"""Checkpoints that prove they are whole: every file's size and sha256 in the manifest (complete.json), written
last; a changed or missing file refused by name, resume falling back to the newest whole checkpoint; with
checkpoint.async the files written in the background from a copy taken at the step, and a kill during that
write leaving the previous checkpoint intact.

The writer and the verification are tested without a trainer; the runs here are one process each (cheap) and
compare bit for bit with an uninterrupted synchronous run; the background write across ranks (its completion a
collective) runs in tests/train/test_train_runs.py's PP2 x DP2 parity run, which writes asynchronously and must
still match one process.
"""
import hashlib
import json
import shutil

import pytest
import torch

from train.checkpoint import store
from train.checkpoint.writer import HashingWriter
from train.loop.metrics import read_metrics
from train_fixtures import launch, make_dataset


def _flip_middle_byte(path):
    b = bytearray(path.read_bytes())
    b[len(b) // 2] ^= 0xFF
    path.write_bytes(bytes(b))


@pytest.mark.parametrize("async_write", [False, True])
def test_writer_hashes_the_bytes_it_wrote_and_copies_the_state_at_save(tmp_path, async_write):
    w = HashingWriter(async_write)
    weight = torch.arange(6, dtype=torch.float32)
    state = {"w": weight, "view": weight[2:4], "meta": {"step": 3, "list": [torch.ones(2)]}}
    w.save(state, str(tmp_path / "a.pt"))
    weight.add_(100.0)                       # training goes on: the file must hold the values at save
    w.wait()
    written = w.take_written()
    size, sha = written[str(tmp_path / "a.pt")]
    data = (tmp_path / "a.pt").read_bytes()
    assert size == len(data) and sha == hashlib.sha256(data).hexdigest()
    back = torch.load(tmp_path / "a.pt", weights_only=False)
    if async_write:                          # a copy taken at save
        assert torch.equal(back["w"], torch.arange(6, dtype=torch.float32))
        assert torch.equal(back["view"], torch.tensor([2.0, 3.0])) and back["meta"]["step"] == 3
    assert not list(tmp_path.glob(".*.tmp"))
    assert w.take_written() == {}


def _fake_checkpoint(run, step):
    d = store.checkpoints_dir(run) / store.tag_for(step)
    d.mkdir(parents=True)
    w = HashingWriter()
    for name in ("layer_00-model_00-model_states.pt", "mp_rank_00_model_states.pt"):
        w.save({"x": torch.full((64,), float(step))}, str(d / name))
    files = {p.split("/")[-1]: {"size": s, "sha256": h} for p, (s, h) in w.take_written().items()}
    (d / store.COMPLETE).write_text(json.dumps({"step": step, "files": files}))
    return d


def test_verify_names_the_file_and_resume_falls_back_to_the_newest_whole_checkpoint(tmp_path):
    run = tmp_path / "run"
    for step in (3, 6, 9):
        _fake_checkpoint(run, step)
    newest = store.checkpoints_dir(run) / store.tag_for(9)
    assert store.verify(newest) is None and store.latest_whole(run)[0] == 9
    _flip_middle_byte(newest / "mp_rank_00_model_states.pt")
    said = []
    assert store.latest_whole(run, said.append)[0] == 6
    assert "mp_rank_00_model_states.pt changed on disk" in said[0] and "step_00000009" in said[0]
    six = store.checkpoints_dir(run) / store.tag_for(6)
    (six / "layer_00-model_00-model_states.pt").unlink()
    assert "layer_00-model_00-model_states.pt is missing" in store.verify(six)
    assert store.latest_whole(run, said.append)[0] == 3
    three = store.checkpoints_dir(run) / store.tag_for(3)
    with open(three / "mp_rank_00_model_states.pt", "ab") as f:
        f.write(b"\0")
    assert "mp_rank_00_model_states.pt has" in store.verify(three) and store.latest_whole(run, said.append) is None
    # A checkpoint from before manifests held files cannot be checked: it counts as whole.
    old = tmp_path / "old"
    d = _fake_checkpoint(old, 2)
    (d / store.COMPLETE).write_text(json.dumps({"step": 2}))
    _flip_middle_byte(d / "mp_rank_00_model_states.pt")
    assert store.latest_whole(old)[0] == 2


CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64}
train: {steps: 9, micro_batch_size: 2, global_batch_size: 8, seed: 7}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4, grad_clip: 0.5}
schedule: {kind: cosine, warmup_steps: 2}
checkpoint: {every: 3, keep: 2}
log: {every: 3, sample_every: 0}
eval: {every: 3, samples_per_source: 8}
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckruns")
    manifest = make_dataset(root / "data", total_tokens=60_000, max_seq_len=32)
    cfg = root / "tiny.yaml"
    cfg.write_text(CONFIG)
    ref = root / "ref"
    launch(manifest, cfg, ref)
    return root, cfg, manifest, ref


def _losses(run):
    return [(r["kind"], r["step"], r.get("loss"), r.get("val_loss")) for r in read_metrics(run, None)]


def _model_files(ckpt):
    manifest = json.loads((ckpt / store.COMPLETE).read_text())["files"]
    return {k: v["sha256"] for k, v in manifest.items() if k.startswith("layer_")}


@pytest.mark.trainer
def test_manifest_lists_every_file_with_its_sha256(setup):
    ref = setup[3]
    ckpt = store.checkpoints_dir(ref) / store.tag_for(9)
    files = json.loads((ckpt / store.COMPLETE).read_text())["files"]
    on_disk = sorted(p.name for p in ckpt.iterdir() if p.name != store.COMPLETE)
    assert sorted(files) == on_disk and "mp_rank_00_model_states.pt" in files
    for name, want in files.items():
        assert hashlib.sha256((ckpt / name).read_bytes()).hexdigest() == want["sha256"]
    assert [s for s, _ in store.complete_checkpoints(ref)] == [6, 9]      # keep: 2


@pytest.mark.trainer
def test_a_kill_during_an_async_write_resumes_from_the_previous_checkpoint(setup):
    root, cfg, manifest, ref = setup
    run = root / "async"
    sets = ["checkpoint.async=true", "checkpoint.keep=1"]      # keep 1: step 3 goes only once 6 is whole
    r = launch(manifest, cfg, run, sets=sets, env={"GLASSBOX_FAULT_IN_WRITE": "6"}, check=False)
    assert r.returncode != 0
    ckpts = store.checkpoints_dir(run)
    assert not (ckpts / store.tag_for(6) / store.COMPLETE).exists()     # the torn one never counts
    assert store.latest_whole(run)[0] == 3                               # intact
    r = launch(manifest, cfg, run, sets=sets)
    assert "resuming from step 3" in r.stdout
    assert _losses(run) == _losses(ref)                                  # bit for bit
    # The background write took its copy at the step: the same weights as the synchronous run's files.
    assert _model_files(ckpts / store.tag_for(9)) == _model_files(store.checkpoints_dir(ref) / store.tag_for(9))
    assert [s for s, _ in store.complete_checkpoints(run)] == [9]


@pytest.mark.trainer
def test_a_damaged_checkpoint_is_named_and_the_run_resumes_from_the_one_before(setup):
    root, cfg, manifest, ref = setup
    run = root / "damaged"
    shutil.copytree(ref, run)
    _flip_middle_byte(store.checkpoints_dir(run) / store.tag_for(9) / "mp_rank_00_model_states.pt")
    r = launch(manifest, cfg, run)
    assert "mp_rank_00_model_states.pt changed on disk" in r.stdout and "step_00000009" in r.stdout
    assert "resuming from step 6" in r.stdout
    assert _losses(run) == _losses(ref)
    assert store.verify(store.checkpoints_dir(run) / store.tag_for(9)) is None    # rewritten whole


@pytest.mark.trainer
def test_merge_averages_the_last_checkpoints_into_a_run_that_exports(setup, tmp_path):
    """glassbox merge: the mean of the last K whole checkpoints' weights (and any weighting), written as a run
    folder whose checkpoint export reads like any run's and whose held-out loss is computed on the run's own
    held-out documents."""
    from train.export import merge, weights

    ref = setup[3]
    six, nine = (store.load_llama_state_dict(store.checkpoints_dir(ref) / store.tag_for(s), 2) for s in (6, 9))
    assert merge.main([str(ref), "--last", "2", "--out", str(tmp_path / "m2")]) == 0
    ck = weights.find_checkpoint(tmp_path / "m2")
    assert ck.step == 9 and ck.info["merged"]["steps"] == [6, 9] and store.verify(ck.path) is None
    merged = weights.merge_checkpoint(ck)
    for k in six:
        want = ((six[k].double() + nine[k].double()) / 2).float()
        assert torch.equal(merged[k], want), k
    assert merge.main([str(ref), "--last", "2", "--out", str(tmp_path / "m10"), "--weights", "1,0"]) == 0
    only_six = weights.merge_checkpoint(weights.find_checkpoint(tmp_path / "m10"))
    assert all(torch.equal(only_six[k], six[k]) for k in six)
    # the last checkpoint's held-out loss is the one the run logged at its step: the evaluation reads the run's data
    last = merge.heldout(ref, store.checkpoints_dir(ref) / store.tag_for(9))
    logged = [r for r in read_metrics(ref, None) if r["kind"] == "val" and r["step"] == 9][0]["val_loss"]
    assert last["loss"] == pytest.approx(logged, rel=1e-5) and last["bpb"] > 0
    assert merge.heldout(tmp_path / "m2", ck.path)["loss"] != pytest.approx(last["loss"], rel=1e-6)
    assert merge.main([str(ref), "--last", "3", "--out", str(tmp_path / "m3")]) == 2      # only 2 kept
