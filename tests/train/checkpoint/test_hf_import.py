"""Continued pretraining from a Hugging Face LlamaForCausalLM (``--init DIR``, train/checkpoint/hf_import.py).

1. A small LlamaForCausalLM built by transformers (random weights, random norm weights, grouped-query attention:
   4 heads, 2 key/value heads, untied embeddings, rope_theta 5e5 and rms_norm_eps 1e-6 off the defaults),
   imported into TP2 x PP2 (4 processes, the vocabulary padded 384 -> 512 and split in two), forwards a batch
   to the full-vocabulary logits of transformers within 1e-5 of the largest logit: the two sides differ in
   summation order only (~1e-7 relative), while a wrong split, a transposed or misnamed weight or the other
   rotary layout is off by 1e-2 and more (train/export/consistency.py argues the same for the export).
2. export -> import -> export: a trained run's export, imported by a new run in TP2 (checkpoint 0) and exported
   again, gives bit-identical tensors and the same config.json.
3. That new run's first loss is the trained model's loss on the batch (computed here by transformers on the
   same token sequences, relative 1e-5), not a random init's (~ln 384 = 5.95).
4. Mistakes are named before any process group starts: another vocabulary (sizes and hashes of both), a shape
   key of the config that disagrees with the model's config.json.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from export_fixtures import ENV, exported, tiny_runs
from train.checkpoint import hf_import
from train.config import ConfigError, load_config
from train.data.manifest import read_manifest
from train.export.hf_tokenizer import read_sp_model, save_hf_tokenizer
from train.model.transformer import ModelConfig
from train_fixtures import REPO, launch, paragraphs, TEXT, train_tokenizer

pytestmark = pytest.mark.slow

WORKER_CONFIG = """
model: {vocab_multiple: 256}
train: {steps: 1, micro_batch_size: 2, global_batch_size: 2, seed: 3}
"""


def hf_llama(out, sp_model, vocab_size, **kw):
    """A random LlamaForCausalLM saved with the manifest's tokenizer (or the one given)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    kw = {"tie_word_embeddings": False, **kw}
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, rope_theta=5e5, rms_norm_eps=1e-6,
                         max_position_embeddings=64, initializer_range=0.1, **kw)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.normal_(1.0, 0.2)
    model.save_pretrained(out)
    save_hf_tokenizer(sp_model, out)
    return model


def _sp(manifest):
    return read_manifest(manifest).tokenizer["abs_path"]


def test_imported_into_tp2_pp2_gives_the_transformers_logits(tmp_path):
    runs = tiny_runs()
    model = hf_llama(tmp_path / "hf", _sp(runs["manifest"]), 384)
    ids = torch.randint(0, 384, (2, 24), generator=torch.Generator().manual_seed(1))
    torch.save(ids, tmp_path / "ids.pt")
    (tmp_path / "w.yaml").write_text(WORKER_CONFIG)
    cmd = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--standalone", "--nproc_per_node=4",
           "tests/reshard_worker.py", str(tmp_path / "w.yaml"), str(runs["manifest"]), "logits",
           str(tmp_path / "hf"), str(tmp_path / "ids.pt"), str(tmp_path / "logits.pt"),
           "--set", "parallel.tp=2", "--set", "parallel.pp=2"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, env=ENV)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    ours = torch.load(tmp_path / "logits.pt")
    with torch.no_grad():
        ref = model(ids).logits
    assert ours.shape == ref.shape == (2, 24, 384)
    scale = ref.abs().max().item()
    assert scale > 1.0                                        # logits large enough to mean something
    diff = (ours - ref).abs().max().item()
    print(f"\nTP2xPP2 import vs transformers: max |logit diff| {diff:.2e}, largest logit {scale:.2f}")
    assert diff <= 1e-5 * scale


@pytest.fixture(scope="module")
def continued():
    """The tiny one-process run's export, imported by a new run in TP2 that trains one step."""
    runs = tiny_runs()
    e1 = exported("one")
    run = runs["root"] / "continued"
    r = launch(runs["manifest"], runs["root"] / "tiny.yaml", run, nproc=2, sets=["parallel.tp=2"], steps=1,
               args=["--init", str(e1)])
    return runs, e1, run, r


def test_export_import_export_is_bit_identical(continued, tmp_path):
    from safetensors.torch import load_file

    from train.export.export import export

    runs, e1, run, r = continued
    assert f"starting from {e1}" in r.stdout
    status, _ = export(run, tmp_path / "e2", step=0)
    assert status == 0
    a, b = load_file(e1 / "model.safetensors"), load_file(tmp_path / "e2" / "model.safetensors")
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k
    assert json.loads((e1 / "config.json").read_text()) == json.loads((tmp_path / "e2" / "config.json").read_text())
    inv = json.loads((run / "run.json").read_text())["invocations"][0]
    assert inv["init"]["path"] == str(e1.resolve()) and "model.safetensors" in inv["init"]["files"]


def test_a_run_started_from_an_export_begins_at_its_loss(continued):
    from transformers import AutoModelForCausalLM

    from train.data.sample_index import DataOrder
    from train.data.shards import ShardCache
    from train.loop.metrics import read_metrics

    runs, e1, run, _ = continued
    m = read_manifest(runs["manifest"])
    order = DataOrder.load(m, ShardCache(runs["manifest"].parent.parent / "token_cache", m.vocab_size, m.eos_id),
                           run / "data_order")
    batch = torch.from_numpy(__import__("numpy").stack([order.sample(g) for g in range(8)])).long()
    model = AutoModelForCausalLM.from_pretrained(e1, dtype=torch.float32).eval()
    with torch.no_grad():
        logits = model(batch[:, :-1]).logits
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
    first = read_metrics(run)[0]["loss"]
    trained_from_scratch = read_metrics(runs["one"])
    print(f"\nfirst loss of the continued run {first:.5f}; transformers on its batch {expected.item():.5f}; "
          f"the exported run started at {trained_from_scratch[0]['loss']:.4f}")
    assert first == pytest.approx(expected.item(), rel=1e-5)
    assert first < trained_from_scratch[0]["loss"] - 0.05      # not a random init's (random: ~5.95)


def test_another_vocabulary_is_named_with_sizes_and_hashes(tmp_path):
    runs = tiny_runs()
    other = train_tokenizer(tmp_path / "tok", paragraphs(TEXT.read_text(encoding="utf-8"))[:600], vocab_size=320)
    hf_llama(tmp_path / "hf", other, 320)
    hf = hf_import.read_config(tmp_path / "hf")
    with pytest.raises(ConfigError) as e:
        hf_import.check_vocabulary(tmp_path / "hf", hf, read_manifest(runs["manifest"]))
    msg = str(e.value)
    theirs = hf_import.vocabulary_sha256([p for p, _, _ in read_sp_model(other).pieces])[:16]
    ours = hf_import.vocabulary_sha256([p for p, _, _ in read_sp_model(_sp(runs["manifest"])).pieces])[:16]
    assert "320 pieces" in msg and "384 pieces" in msg and theirs in msg and ours in msg
    # The same through the trainer: refused before any process group starts, nothing written.
    r = launch(runs["manifest"], runs["root"] / "tiny.yaml", tmp_path / "run", args=["--init", str(tmp_path / "hf")],
               check=False)
    assert r.returncode == 2 and "is not the manifest's tokenizer" in r.stderr
    assert not (tmp_path / "run").exists()
    # tokenizer.json alone carries the same pieces (an export's, from the manifest's sentencepiece model).
    only_json = tmp_path / "json-only"
    shutil.copytree(exported("one"), only_json)
    (only_json / "tokenizer.model").unlink()
    assert hf_import.check_vocabulary(only_json, hf_import.read_config(only_json), read_manifest(runs["manifest"])) \
        == hf_import.vocabulary_sha256([p for p, _, _ in read_sp_model(_sp(runs["manifest"])).pieces])


def test_the_config_takes_the_models_shape_and_names_a_disagreeing_key(tmp_path):
    runs = tiny_runs()
    hf_llama(tmp_path / "hf", _sp(runs["manifest"]), 384, tie_word_embeddings=True)
    hf = hf_import.read_config(tmp_path / "hf")
    (tmp_path / "c.yaml").write_text("model: {d_model: 128, n_heads: 4}\n")
    cfg = load_config(tmp_path / "c.yaml", hf_import.model_overrides(tmp_path / "c.yaml", [], hf))
    assert (cfg.model.n_layers, cfg.model.n_kv_heads, cfg.model.ffn_hidden, cfg.model.rope_theta) == (2, 2, 128, 5e5)
    mcfg = ModelConfig(vocab_size=384, n_layers=2, d_model=128, n_heads=4, n_kv_heads=2, ffn_hidden=128,
                       rope_theta=5e5, norm_eps=1e-6)
    with pytest.raises(ConfigError, match=r"model\.d_model: 128 in the trainer config, INIT's config\.json "
                                          r"hidden_size is 64"):
        hf_import.check_shape(mcfg, hf, tmp_path / "hf")
    # Tied embeddings: the head starts as a copy of the embedding (untied from then on).
    good = ModelConfig(**{**mcfg.__dict__, "d_model": 64})
    w = hf_import.Weights(tmp_path / "hf", good, hf)
    assert torch.equal(w.tensor("head.lm_head.weight"), w.tensor("embed.embed_tokens.weight"))
    cfg_json = json.loads((tmp_path / "hf" / "config.json").read_text())
    (tmp_path / "hf" / "config.json").write_text(json.dumps({**cfg_json, "hidden_act": "gelu"}))
    with pytest.raises(ConfigError, match="hidden_act: 'gelu'"):
        hf_import.read_config(tmp_path / "hf")
