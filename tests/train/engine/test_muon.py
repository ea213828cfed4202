"""optimizer.kind: muon (train/engine/muon.py): Newton-Schulz orthogonalised momentum on the blocks' matrices,
AdamW on embeddings, head and norms; refused where DeepSpeed or tensor parallelism cannot give it whole
matrices; its state saved and resumed bit for bit, and a two-stage pipeline matching one process."""
import json

import pytest
import torch

from train.config import ConfigError, parse_config
from train.engine.muon import MuonAdamW, orthogonalise, param_groups
from train.loop.metrics import read_metrics
from train.model.transformer import Llama, ModelConfig
from train_fixtures import EQUIVALENCE_EPS, launch, make_dataset


def test_newton_schulz_drives_singular_values_towards_one():
    g = torch.randn(64, 24, generator=torch.Generator().manual_seed(0)) @ torch.diag(torch.logspace(-1, 1, 24))
    s = torch.linalg.svdvals(orthogonalise(g))
    assert s.min() > 0.5 and s.max() < 1.3
    assert torch.linalg.svdvals(g).max() / torch.linalg.svdvals(g).min() > 30        # the input was far from it


def test_groups_muon_on_block_matrices_adamw_elsewhere():
    o = parse_config({"optimizer": {"kind": "muon", "lr": 1e-3, "muon_lr": 0.02}}).optimizer
    model = Llama(ModelConfig(vocab_size=64, n_layers=2, d_model=32, n_heads=2, n_kv_heads=2, ffn_hidden=64))
    groups = param_groups(model, o)
    names = {id(p): n for n, p in model.named_parameters()}
    muon = [names[id(p)] for p in groups[0]["params"]]
    assert groups[0]["muon"] and groups[0]["lr_scale"] == pytest.approx(20.0)
    assert len(muon) == 2 * 7 and all("layers." in n and n.endswith("proj.weight") for n in muon)
    assert {names[id(p)] for p in groups[1]["params"]} == {"embed.embed_tokens.weight", "head.lm_head.weight"}
    assert groups[2]["weight_decay"] == 0.0 and all(p.ndim == 1 for p in groups[2]["params"])
    opt = MuonAdamW(groups, lr=1e-3)
    model(torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 8)))[1].backward()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt.step()
    assert all(not torch.equal(before[n], p) for n, p in model.named_parameters())
    assert set(opt.state[groups[0]["params"][0]]) == {"momentum_buffer"}


def test_refused_where_it_cannot_see_whole_matrices():
    with pytest.raises(ConfigError, match="tp 2"):
        parse_config({"optimizer": {"kind": "muon"}, "parallel": {"tp": 2}, "model": {"n_heads": 4}})
    with pytest.raises(ConfigError, match="zero_stage: 0"):
        parse_config({"optimizer": {"kind": "muon"}, "parallel": {"dp": 2}})
    parse_config({"optimizer": {"kind": "muon"}, "parallel": {"dp": 2, "pp": 2}, "train": {"zero_stage": 0}})


CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64, document_masking: true}
train: {steps: 8, micro_batch_size: 2, global_batch_size: 8, seed: 7}
optimizer: {kind: muon, lr: 3.0e-3, min_lr: 3.0e-4, muon_lr: 0.02, grad_clip: 0.5, eps: EPS}
schedule: {kind: cosine, warmup_steps: 2}
checkpoint: {every: 4, keep: 0}
log: {every: 4, sample_every: 0}
eval: {every: 4, samples_per_source: 8}
""".replace("EPS", repr(EQUIVALENCE_EPS))


@pytest.mark.trainer
def test_muon_resumes_bit_for_bit_and_a_pipeline_matches_one_process(tmp_path):
    manifest = make_dataset(tmp_path / "data", total_tokens=60_000, max_seq_len=32)
    cfg = tmp_path / "muon.yaml"
    cfg.write_text(CONFIG)
    launch(manifest, cfg, tmp_path / "ref")
    ref = read_metrics(tmp_path / "ref", None)
    kernels = json.loads((tmp_path / "ref" / "run.json").read_text())["invocations"][-1]["kernels"]
    assert kernels["optimizer"].startswith("Muon on the block matrices (lr 0.02")
    launch(manifest, cfg, tmp_path / "resumed", steps=4)
    r = launch(manifest, cfg, tmp_path / "resumed")
    assert "resuming from step 4" in r.stdout
    key = lambda rows: [(x["kind"], x["step"], x.get("loss"), x.get("val_loss")) for x in rows]   # noqa: E731
    assert key(read_metrics(tmp_path / "resumed", None)) == key(ref)
    launch(manifest, cfg, tmp_path / "pp2", nproc=2, sets=["parallel.pp=2"])
    for a, b in zip(read_metrics(tmp_path / "pp2", None), ref):
        k = "loss" if "loss" in b else "val_loss"
        assert a[k] == pytest.approx(b[k], rel=1e-5), (b["step"], k)
    assert ref[-1]["val_loss"] < ref[0]["loss"]
