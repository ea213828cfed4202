"""train.export: real tiny runs (one process and TP=2 x PP=2) exported to Hugging Face directories.

The exported directory must load with ``AutoModelForCausalLM`` and ``AutoTokenizer``, give the training model's
logits (checked here independently of the export's own check), and both layouts must export the same weights.
A corrupted tensor must fail the check loudly, naming the tensor and the largest logit difference.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch

from export_fixtures import ENV, tiny_runs
from train_fixtures import REPO, WEIGHT_ATOL, weight_mismatches


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def export_cli(*args):
    return subprocess.run([sys.executable, "-m", "train.export.export", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env=ENV)


@pytest.fixture(scope="module")
def one_export(runs):
    out = runs["root"] / "exports" / "one-cli"
    r = export_cli(runs["one"], "--out", out)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "consistency: PASSED" in r.stdout
    return out


@pytest.mark.trainer
def test_export_loads_in_transformers_and_matches_the_training_model(runs, one_export):
    import sentencepiece as spm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from train.data.manifest import read_manifest
    from train.export import weights

    out = one_export
    files = {p.name for p in out.iterdir()}
    assert {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
            "tokenizer.model", "glassbox_export.json"} <= files
    manifest = read_manifest(runs["manifest"])
    tok_ids = manifest.tokenizer
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaForCausalLM"] and cfg["tie_word_embeddings"] is False
    assert (cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"],
            cfg["num_key_value_heads"], cfg["intermediate_size"], cfg["max_position_embeddings"]) == (
        manifest.vocab_size, 64, 2, 4, 2, 128, 32)
    assert (cfg["bos_token_id"], cfg["eos_token_id"], cfg["pad_token_id"]) == (
        tok_ids["bos_id"], tok_ids["eos_id"], tok_ids["pad_id"])
    assert cfg["rope_parameters"]["rope_theta"] == 10000.0 and cfg["rms_norm_eps"] == 1e-5

    rec = json.loads((out / "glassbox_export.json").read_text())
    run_json = json.loads((runs["one"] / "run.json").read_text())
    assert rec["step"] == 4 and rec["layout"] == {"tp": 1, "pp": 1, "dp": 1}
    assert rec["manifest"]["content_hash"] == run_json["manifest"]["content_hash"]
    c = rec["consistency"]
    assert c["passed"] and c["weights"]["identical"] and all(g["identical"] for g in c["greedy"])
    assert c["probes"][0]["name"].startswith("held-out") and c["val_loss"]["passed"]
    assert all(len(g["training_model"]) > 0 for g in c["greedy"])

    # The tokenizer: AutoTokenizer segments as the run's sentencepiece model, special ids as the manifest's.
    tok = AutoTokenizer.from_pretrained(out)
    sp = spm.SentencePieceProcessor(model_file=str(out / "tokenizer.model"))
    text = "The history of the city begins in the early medieval period."
    assert tok.encode(text) == sp.encode(text)
    assert (tok.eos_token_id, tok.bos_token_id, tok.pad_token_id) == (
        tok_ids["eos_id"], tok_ids["bos_id"], tok_ids["pad_id"])

    # The CPU server (train/serving) takes it as it is.
    from train.serving.engine import Engine

    engine = Engine(out, threads=1)
    assert engine.max_context == 32 and tok_ids["eos_id"] in engine.eos_ids

    # Logits, independently of the export's check: the checkpoint merged into train.model.transformer.Llama vs transformers.
    ckpt = weights.find_checkpoint(runs["one"])
    ours = weights.load_reference_model(ckpt.model_cfg, weights.merge_checkpoint(ckpt))
    hf = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    first = tok.encode(text)[:24]
    rand = torch.randint(0, manifest.vocab_size, (len(first),), generator=torch.Generator().manual_seed(1)).tolist()
    ids = torch.tensor([first, rand])
    with torch.no_grad():
        a = ours(ids)[0][..., :manifest.vocab_size]
        b = hf(ids).logits
    assert b.shape == a.shape
    assert (a - b).abs().max().item() <= 1e-4 * max(1.0, a.abs().max().item())


@pytest.mark.trainer
def test_layouts_export_the_same_weights(runs, one_export, tmp_path):
    """TP=2 x PP=2 and one process train the same model; merged and exported, the weights agree within
    WEIGHT_ATOL (tests/train_fixtures.py argues it: these runs use a large Adam eps, so summation-order noise
    cannot flip near-zero gradients into steps of +-lr). Sharded writing is exercised here too. The same
    comparison fails on a tensor-parallel slice put in the wrong place (the negative control below)."""
    from transformers import AutoModelForCausalLM

    from train.export.export import export
    from train.export.weights import read_safetensors

    out = tmp_path / "tp2pp2"
    status, rec = export(runs["tp2pp2"], out, max_shard_size="150KB")
    assert status == 0 and rec["layout"] == {"tp": 2, "pp": 2, "dp": 1}
    shards = sorted(p.name for p in out.glob("model-*.safetensors"))
    assert len(shards) >= 3 and (out / "model.safetensors.index.json").is_file()
    assert rec["consistency"]["passed"] and rec["consistency"]["val_loss"]["passed"]
    a, b = read_safetensors(one_export), read_safetensors(out)
    assert len(a) == 2 * 9 + 3
    assert weight_mismatches(a, b) == []
    # Negative control: the two tensor-parallel halves of one projection swapped (what a merge along the wrong
    # rank order writes) and a half taken twice are both caught by the same comparison.
    q = "model.layers.1.self_attn.q_proj.weight"
    half = b[q].shape[0] // 2
    swapped = {**b, q: torch.cat([b[q][half:], b[q][:half]])}
    doubled = {**b, q: torch.cat([b[q][:half], b[q][:half]])}
    for wrong in (swapped, doubled):
        ((name, diff),) = weight_mismatches(a, wrong)
        assert name == q and diff > 100 * WEIGHT_ATOL
    AutoModelForCausalLM.from_pretrained(out)                 # the sharded directory loads


@pytest.mark.trainer
def test_corrupted_tensor_fails_the_check_loudly(runs, one_export, tmp_path):
    from safetensors.torch import load_file, save_file

    bad = tmp_path / "bad"
    shutil.copytree(one_export, bad)
    sd = load_file(str(bad / "model.safetensors"))
    sd["model.layers.1.mlp.down_proj.weight"][:, 7] *= 3.0       # one column of one tensor
    save_file(sd, str(bad / "model.safetensors"), metadata={"format": "pt"})
    r = export_cli("--check", bad)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "consistency: FAILED" in r.stdout
    assert "model.layers.1.mlp.down_proj.weight" in r.stdout
    assert "logits differ by up to" in r.stdout and "position" in r.stdout and "token id" in r.stdout
    assert "does not match" in r.stderr
    # The untouched export passes the same check.
    from train.export.export import check

    status, result = check(one_export)
    assert status == 0 and result["passed"] and result["max_abs_diff"] <= result["tolerance"]["atol"]


@pytest.mark.trainer
def test_a_failed_check_writes_nothing_to_out(runs, tmp_path, monkeypatch, capsys):
    """A conversion bug (simulated: a wrong tensor written) is caught before the export lands at --out."""
    from safetensors.torch import load_file, save_file

    from train.export import weights
    from train.export.export import export

    real = weights.write_safetensors

    def buggy(tensors, out_dir, max_shard_bytes):
        files = real(tensors, out_dir, max_shard_bytes)
        sd = load_file(str(out_dir / "model.safetensors"))
        k = sd["model.layers.0.self_attn.k_proj.weight"]
        sd["model.layers.0.self_attn.k_proj.weight"] = torch.cat([k[16:], k[:16]])   # kv heads swapped
        save_file(sd, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
        return files

    monkeypatch.setattr(weights, "write_safetensors", buggy)
    out = tmp_path / "export"
    status, rec = export(runs["one"], out)
    assert status == 1 and not out.exists() and (tmp_path / "export.failed" / "model.safetensors").is_file()
    assert not rec["consistency"]["passed"]
    assert rec["consistency"]["where"]["max_abs_diff"] > rec["consistency"]["tolerance"]["atol"]
    assert "k_proj" in capsys.readouterr().out


@pytest.mark.trainer
def test_step_choice_and_refusals(runs, tmp_path, capsys):
    from train.export.export import main

    out = tmp_path / "s2"
    assert main([str(runs["one"]), "--out", str(out), "--step", "2"]) == 0
    assert json.loads((out / "glassbox_export.json").read_text())["step"] == 2
    assert main([str(runs["one"]), "--out", str(out)]) == 2                      # exists, no --force
    assert "--force" in capsys.readouterr().err
    assert main([str(runs["one"]), "--out", str(tmp_path / "s3"), "--step", "3"]) == 2
    assert "complete steps: 2, 4" in capsys.readouterr().err
    assert main([str(runs["one"]), "--out", str(tmp_path / "x"), "--skip-check"]) == 2
    assert "not offered" in capsys.readouterr().err
    assert main([str(tmp_path), "--out", str(tmp_path / "y")]) == 2               # not a run directory
    assert "not a run directory" in capsys.readouterr().err


@pytest.mark.trainer
def test_missing_tensor_parallel_slice_is_named(runs, tmp_path):
    from train.export.weights import ExportError, find_checkpoint, merge_checkpoint

    run = tmp_path / "run"
    shutil.copytree(runs["tp2pp2"], run, ignore=shutil.ignore_patterns("zero_pp_*", "data_order", "step_00000002"))
    ckpt = run / "checkpoints" / "step_00000004"
    (ckpt / "layer_02-model_01-model_states.pt").unlink()
    # The checkpoint's manifest names the missing file before any layout is read ...
    with pytest.raises(ExportError, match=r"layer_02-model_01-model_states.pt is missing \(listed in its complete.json\)"):
        find_checkpoint(run)
    # ... and a checkpoint written before manifests listed files still gets the layout's own message.
    info = json.loads((ckpt / "complete.json").read_text())
    info.pop("files")
    (ckpt / "complete.json").write_text(json.dumps(info))
    with pytest.raises(ExportError, match=r"pipeline layer 2 \(layers.1\) has tensor-parallel slices \[0\]"):
        merge_checkpoint(find_checkpoint(run))


def test_compare_tolerance_and_greedy_ties():
    """The comparison itself: within tolerance passes, beyond fails with the place; a greedy split at a
    near-exact tie is recorded, a split with a clear margin fails."""
    from train.export.consistency import Outputs, Probe, compare

    probes = [Probe("p", [1, 2, 3])]
    prompts = [[1], [2]]
    ref = Outputs([torch.zeros(3, 10)], [[4, 5], [6, 7]], [[1.0, 1.0], [1e-7, 1.0]])
    same = Outputs([torch.full((3, 10), 5e-5)], [[4, 5], [6, 7]])
    assert compare(ref, same, probes, prompts)["passed"]
    far = torch.zeros(3, 10)
    far[2, 7] = 3e-4
    r = compare(ref, Outputs([far], [[4, 5], [6, 7]]), probes, prompts)
    assert not r["passed"] and r["where"]["position"] == 2 and r["where"]["token_id"] == 7
    tie = compare(ref, Outputs([torch.zeros(3, 10)], [[4, 5], [8, 7]]), probes, prompts)
    assert tie["passed"] and tie["greedy"][1]["tie"]
    split = compare(ref, Outputs([torch.zeros(3, 10)], [[9, 5], [6, 7]]), probes, prompts)
    assert not split["passed"] and "greedy generation 0 differs from token 0" in split["failures"][0]


@pytest.mark.trainer
def test_document_masking_and_qk_norm_export_to_qwen3_with_the_same_logits(runs, tmp_path):
    """A run with every new model option on (intra-document attention, QK-norm), trained with TP=2 (the
    per-head norm's weight is shared by heads split over ranks): its export is a Qwen3ForCausalLM (q_norm /
    k_norm: RMSNorm over each head's dim before RoPE, as ours) and gives the training model's logits on a
    document; the export's own check passes on single-document probes. Control: the same weights read as a
    Llama (no q_norm / k_norm) give other logits."""
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    from export_fixtures import CONFIG, train_run
    from train.export import weights

    cfg_path = tmp_path / "qk.yaml"
    cfg_path.write_text(CONFIG.replace("vocab_multiple: 64}", "vocab_multiple: 64, document_masking: true, "
                                                              "qk_norm: true}"))
    run = train_run(tmp_path, runs["manifest"], cfg_path, "qk", 2, 1)
    out = tmp_path / "qk-export"
    r = export_cli(run, "--out", out)
    assert r.returncode == 0 and "consistency: PASSED" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    hf_cfg = json.loads((out / "config.json").read_text())
    assert hf_cfg["architectures"] == ["Qwen3ForCausalLM"] and hf_cfg["head_dim"] == 16
    ckpt = weights.find_checkpoint(run)
    sd = weights.merge_checkpoint(ckpt)
    assert not torch.equal(sd["layers.0.self_attn.q_norm.weight"], torch.ones(16))     # trained: it matters
    ours = weights.load_reference_model(ckpt.model_cfg, sd)
    hf = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).eval()
    eos, vocab = ckpt.model_cfg.eos_id, ckpt.model_cfg.vocab_size
    ids = torch.randint(4, vocab, (2, 24), generator=torch.Generator().manual_seed(1))
    assert not (ids == eos).any()
    with torch.no_grad():
        a = ours(ids)[0][..., :vocab]
        b = hf(ids).logits
        plain = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in hf_cfg.items() if k not in ("architectures",
                                                                                          "model_type")}))
        plain.load_state_dict(hf.state_dict(), strict=False)
        c = plain.eval()(ids).logits
    assert (a - b).abs().max().item() <= 1e-4 * max(1.0, a.abs().max().item())
    assert (a - c).abs().max().item() > 1e-3
