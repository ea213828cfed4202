"""optimizer.kind: muon (train/engine/muon.py): Newton-Schulz orthogonalised momentum on the blocks' matrices,
AdamW on embeddings, head and norms; its state saved and resumed bit for bit; tensor parallelism orthogonalising
the whole matrix (TP2 matches one process), and a TP2 checkpoint resumed as a two-stage pipeline over two data
ranks (train/checkpoint/reshard.py carrying the momentum) matching one process."""
import json
import shutil
from pathlib import Path

import pytest
import torch

from train.checkpoint import reshard
from train.checkpoint.store import meta_model, partition_dims
from train.config import ConfigError, parse_config
from train.engine.muon import MuonAdamW, orthogonalise, param_groups, whole_update
from train.export.weights import find_checkpoint, merge_checkpoint
from train.loop.metrics import read_metrics
from train.model.transformer import Llama, ModelConfig
from train_fixtures import EQUIVALENCE_EPS, launch, make_dataset, roundtrip, weight_mismatches


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


def _two_ranks(rank, store_file, g, out_dir):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store_file}", rank=rank, world_size=2)
    try:
        for dim in (0, 1):
            torch.save(whole_update(g.chunk(2, dim)[rank], dim, dist.group.WORLD), f"{out_dir}/{rank}.{dim}.pt")
    finally:
        dist.destroy_process_group()


def test_a_matrix_sliced_over_tensor_ranks_gets_the_slices_of_the_whole_update(tmp_path):
    """whole_update gathers the slices (rows of a column-parallel weight, columns of a row-parallel one): two
    gloo ranks give exactly the slices of the one-process update, which orthogonalising each slice does not."""
    import torch.multiprocessing as mp

    g = torch.randn(48, 32, generator=torch.Generator().manual_seed(1))
    want = whole_update(g, None, None)
    mp.spawn(_two_ranks, args=(str(tmp_path / "store"), g, str(tmp_path)), nprocs=2)
    for dim in (0, 1):
        got = [torch.load(tmp_path / f"{r}.{dim}.pt") for r in (0, 1)]
        assert torch.equal(torch.cat(got, dim), want)
    assert not torch.allclose(torch.cat([whole_update(x, None, None) for x in g.chunk(2, 0)], 0), want, atol=1e-3)


def test_tensor_and_pipeline_layouts_are_accepted():
    parse_config({"optimizer": {"kind": "muon"}, "parallel": {"tp": 2}, "model": {"n_heads": 4}})
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
    # TP2 to step 4, then the same run as a two-stage pipeline over two data ranks (tensor slices merged,
    # stages split, Muon's momentum and Adam's moments carried by train/checkpoint/reshard.py)
    launch(manifest, cfg, tmp_path / "moved", nproc=2, sets=["parallel.tp=2"], steps=4)
    r = launch(manifest, cfg, tmp_path / "moved", nproc=4, sets=["parallel.pp=2", "parallel.dp=2",
                                                                "train.zero_stage=0"])
    assert "in a new layout" in r.stdout
    worst = 0.0
    for a, b in zip(read_metrics(tmp_path / "moved", None), ref, strict=True):
        k = "loss" if "loss" in b else "val_loss"
        assert (a["step"], a["kind"]) == (b["step"], b["kind"])
        worst = max(worst, abs(a[k] - b[k]) / abs(b[k]))
    print(f"\nMuon, TP2 then PP2 x DP2 from step 5, against one process: max relative loss difference {worst:.1e}")
    assert worst <= 1e-5
    moved, one = (merge_checkpoint(find_checkpoint(tmp_path / run, 8)) for run in ("moved", "ref"))
    assert weight_mismatches(moved, one) == []
    assert ref[-1]["val_loss"] < ref[0]["loss"]


@pytest.mark.trainer
def test_zero1_runs_deepspeeds_muon_and_its_state_moves_between_layouts(tmp_path):
    """Under ZeRO-1 DeepSpeed's own Muon steps the flat partitions (train/engine/muon.py, deepspeed_muon): it
    matches this trainer's Muon in one process, resumes bit for bit, and a run moved to a layout without ZeRO
    goes on as one process would. DeepSpeed runs Newton-Schulz in bf16 where the CPU has it, so the comparisons
    with one process allow 5e-5 relative (measured 1.0e-5 and 1.3e-5; with the momentum dropped on the way,
    4.5e-4). The conversions themselves, every optimizer format both ways: the next test."""
    manifest = make_dataset(tmp_path / "data", total_tokens=60_000, max_seq_len=32)
    cfg = tmp_path / "muon.yaml"
    cfg.write_text(CONFIG.replace("grad_clip: 0.5", "grad_clip: 0"))
    zero1 = ["parallel.dp=2", "train.zero_stage=1"]
    launch(manifest, cfg, tmp_path / "ref")
    launch(manifest, cfg, tmp_path / "z1", nproc=2, sets=zero1)
    launch(manifest, cfg, tmp_path / "z1r", nproc=2, sets=zero1, steps=4)
    shutil.copytree(tmp_path / "z1r", tmp_path / "to_plain")
    launch(manifest, cfg, tmp_path / "z1r", nproc=2, sets=zero1)
    r = launch(manifest, cfg, tmp_path / "to_plain", nproc=2, sets=["parallel.pp=2"])
    assert "in a new layout" in r.stdout
    key = lambda rows: [(x["kind"], x["step"], x.get("loss"), x.get("val_loss")) for x in rows]   # noqa: E731
    assert key(read_metrics(tmp_path / "z1r", None)) == key(read_metrics(tmp_path / "z1", None))
    # bf16: DeepSpeed's bf16 optimizer with its Muon, plain data parallelism
    launch(manifest, cfg, tmp_path / "bf16", nproc=2, sets=["parallel.dp=2", "train.precision=bf16"])
    bf16 = [x for x in read_metrics(tmp_path / "bf16", None) if x["kind"] == "train"]
    assert len(bf16) == 8 and bf16[-1]["loss"] < bf16[0]["loss"] - 0.2
    ref = read_metrics(tmp_path / "ref", None)
    for run in ("z1", "to_plain"):
        rows = read_metrics(tmp_path / run, None)
        assert [(x["kind"], x["step"]) for x in rows] == [(x["kind"], x["step"]) for x in ref]
        worst = max(abs(a.get("loss", a.get("val_loss")) - b.get("loss", b.get("val_loss")))
                    / abs(b.get("loss", b.get("val_loss"))) for a, b in zip(rows, ref))
        print(f"\n{run}: max relative loss difference to ZeRO-0 in one process {worst:.1e}")
        assert worst <= 5e-5, run
    assert ref[-1]["val_loss"] < ref[0]["loss"]


def test_zero_muon_refuses_gradient_clipping_tensor_slices_and_bf16_model_parallelism():
    with pytest.raises(ConfigError, match="optimizer.grad_clip: 1 with optimizer.kind: muon"):
        parse_config({"optimizer": {"kind": "muon"}, "parallel": {"dp": 2}})
    with pytest.raises(ConfigError, match="parallel.tp 2"):
        parse_config({"optimizer": {"kind": "muon", "grad_clip": 0}, "parallel": {"tp": 2}, "model": {"n_heads": 4},
                      "train": {"zero_stage": 1}})
    parse_config({"optimizer": {"kind": "muon", "grad_clip": 0}, "parallel": {"dp": 2}})
    with pytest.raises(ConfigError, match="plain data parallelism only"):
        parse_config({"optimizer": {"kind": "muon", "grad_clip": 0}, "parallel": {"pp": 2},
                      "train": {"precision": "bf16"}})
    parse_config({"optimizer": {"kind": "muon", "grad_clip": 0}, "parallel": {"dp": 2}, "train": {"precision": "bf16"}})


def _universal(ckpt: Path, n_layers: int, dims: dict) -> dict:
    layout = reshard.saved_layout(ckpt)
    work = ckpt.parent / f"{ckpt.name}.universal"
    work.mkdir()
    reshard.convert(ckpt, work, layout, n_layers)
    u = reshard.Universal(work, layout["tp"], dims)
    out = {name: u(name) for name in dims}
    shutil.rmtree(work)
    return out


@pytest.mark.trainer
def test_muon_state_converts_through_every_optimizer_format(tmp_path):
    """A Muon checkpoint of this trainer's optimizer (TP2, no ZeRO) loaded and saved at once (tests/reshard_worker.py)
    by DeepSpeed's bf16 optimizer (DP2), then its ZeRO-1 optimizer (DP2: whole matrices per rank), then this
    trainer's again (PP2): master weights and Adam's moments bit for bit; Muon's momentum, kept as an average by
    DeepSpeed and a sum by this trainer, within float rounding of the (1 - beta) factor."""
    manifest = make_dataset(tmp_path / "data", total_tokens=60_000, max_seq_len=32)
    cfg = tmp_path / "muon.yaml"
    cfg.write_text(CONFIG.replace("grad_clip: 0.5", "grad_clip: 0"))
    launch(manifest, cfg, tmp_path / "src", nproc=2, sets=["parallel.tp=2"], steps=4)
    chain = [("bf16", ["parallel.dp=2", "train.precision=bf16"]), ("zero1", ["parallel.dp=2", "train.zero_stage=1"]),
             ("plain", ["parallel.pp=2", "train.zero_stage=0"])]
    roundtrip(cfg, manifest, chain, tmp_path / "src", 4, tmp_path)
    model_cfg = find_checkpoint(tmp_path / "src").model_cfg
    dims = partition_dims(meta_model(model_cfg))
    ref = _universal(tmp_path / "src" / "checkpoints" / "step_00000004", model_cfg.n_layers, dims)
    muon = {n for n, v in ref.items() if "momentum_buffer" in v}
    assert len(muon) == 14 and all("exp_avg" in v for n, v in ref.items() if n not in muon)
    for name, _ in chain:
        got = _universal(tmp_path / name / "checkpoints" / "step_00000004", model_cfg.n_layers, dims)
        for p, want in ref.items():
            keys = ("fp32", "momentum_buffer") if p in muon else ("fp32", "exp_avg", "exp_avg_sq")
            assert set(keys) <= set(got[p]), (name, p)
            for k in keys:
                if k == "momentum_buffer":
                    assert torch.allclose(got[p][k], want[k], rtol=1e-6, atol=1e-9), (name, p)
                    assert not torch.equal(want[k], torch.zeros_like(want[k]))
                else:
                    assert torch.equal(got[p][k], want[k]), (name, p, k)
