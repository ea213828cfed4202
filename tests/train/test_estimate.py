"""train.estimate: the issue's 535B numbers, a hand-checked Llama-2-7B, activations, layouts, the CLI."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from train import estimate as E

LLAMA2_7B = {"n_layer": 32, "d_model": 4096, "n_head": 32, "n_kv_head": 32, "ffn_hidden_size": 11008,
             "vocab_size": 32000, "max_seq_len": 4096}
GB = 1e9


def test_535b_weights():
    w = E.weight_memory(535e9)
    assert w["bf16"] / GB == pytest.approx(1070)
    assert w["int4"] / GB == pytest.approx(267.5)
    assert w["fp32"] / GB == pytest.approx(2140) and w["int8"] / GB == pytest.approx(535)


def test_llama2_7b_by_hand():
    shape, settings = E.from_config(LLAMA2_7B)
    # per layer: q, o 4096^2 each; k, v 4096^2 each (32 kv heads); SwiGLU 3 x 4096 x 11008; 2 norms
    per_layer = 4 * 4096 ** 2 + 3 * 4096 * 11008 + 2 * 4096
    assert shape.layer_params() == per_layer
    assert shape.params() == 32 * per_layer + 2 * 32000 * 4096 + 4096 == 6_738_415_616
    assert E.weight_memory(shape.params())["bf16"] / GB == pytest.approx(13.48, abs=0.01)
    assert shape.kv_bytes_per_token() == 32 * 4096 * 2 * 2 == 0.5 * 2 ** 20          # 0.5 MiB
    assert settings["seq_len"] == 4096
    # training states: 2 + 2 + 8 + 4 bytes per parameter in bf16 with Adam
    t = E.training_memory(shape.params(), shape, batch=1, seq=4096)
    assert (t["weights"] + t["gradients"] + t["adam_moments"] + t["master_weights"]) == 16 * shape.params()
    # grouped-query attention shrinks the KV cache by n_heads / n_kv_heads
    gqa, _ = E.from_config({**LLAMA2_7B, "n_kv_head": 8})
    assert gqa.kv_bytes_per_token() * 4 == shape.kv_bytes_per_token()


def test_activations_small_case_by_hand():
    shape = E.Shape(n_layers=2, d_model=64, n_heads=4, n_kv_heads=2, ffn_hidden=256, vocab_size=100)
    # per token and layer: 6*64 + 2*32 + 4*256 = 1472 values = 2944 bytes in bf16; logits and their gradient
    # 2 x 2 bytes x 100; the 24 tokens are one loss chunk: 8 bytes x 100 in fp32
    acts = E.activation_bytes(shape, batch=3, seq=8, precision="bf16", checkpointing=False, attention="flash")
    assert acts == 3 * 8 * (2 * 2944 + 400 + 800)
    eager = E.activation_bytes(shape, 3, 8, "bf16", False, "eager")
    assert eager - acts == 3 * 8 * 2 * (4 * 8) * 2                  # h x s probabilities per token and layer
    ckpt = E.activation_bytes(shape, 3, 8, "bf16", True, "flash")
    assert ckpt == 3 * 8 * (2 * 64 * 2 + 2944 + 1200)                # layer inputs + one layer recomputed
    assert E.activation_bytes(shape, 3, 8, "fp32", False, "flash") == 3 * 8 * (2 * 2944 * 2 + 800 + 800)
    # Past one chunk the fp32 part stops growing: 8192 tokens hold 4096 rows of it
    big = E.activation_bytes(shape, 8, 1024, "bf16", False, "flash", layers=0)
    assert big == 8192 * 400 + E.LOSS_CHUNK_ROWS * 800
    # Llama-2-7B: 12*4096 + 4*4096 + 8*11008 = 153600 bytes per token and layer in bf16
    llama, _ = E.from_config(LLAMA2_7B)
    assert llama.act_bytes_per_token_layer(2, 4096, "flash") == 153_600

def test_layouts():
    shape, _ = E.from_config(LLAMA2_7B)
    p = shape.params()
    # inference: 13.5 GB of bf16 weights + 2.1 GB of KV cache fit one 80 GB GPU, not one 16 GB GPU
    e = E.estimate(p, shape, seq=4096, gpu_mem=80)
    assert e.inference_layout["gpus"] == 1
    small = E.estimate(p, shape, seq=4096, gpu_mem=16)
    assert small.inference_layout["gpus"] == 2 and small.inference_layout["tp"] == 2
    # training: 108 GB of states alone exceed one 80 GB GPU; two split it (TP preferred over PP)
    assert e.training_layout == pytest.approx({"tp": 2, "pp": 1, "gpus": 2,
                                               "per_gpu_gb": e.training_layout["per_gpu_gb"]})
    assert e.training_layout["per_gpu_gb"] <= 72
    # the layout found is minimal: one GPU fewer never fits
    budget = 80 * GB * 0.9
    assert E.training_per_gpu(p, shape, 1, 1, 1, 4096, "bf16", False, "flash") > budget
    # small GPUs need pipeline stages too; the layout fits and no layout with fewer GPUs does (brute force)
    lay = E.estimate(p, shape, seq=4096, gpu_mem=12, checkpointing=True).training_layout
    assert lay["pp"] > 1 and lay["tp"] <= 8 and lay["per_gpu_gb"] <= 12 * 0.9
    for tp in (1, 2, 4, 8):
        for pp in range(1, 33):
            need = E.training_per_gpu(p, shape, tp, pp, 1, 4096, "bf16", True, "flash")
            assert tp * pp >= lay["gpus"] or need > 12 * GB * 0.9, (tp, pp)
    assert E.estimate(p, shape, seq=4096, gpu_mem=12, checkpointing=True, max_tp=1).training_layout["tp"] == 1
    # ZeRO-1 over 8 replicas shards the optimizer states: less memory per GPU
    z = E.training_per_gpu(p, shape, 2, 1, 1, 4096, "bf16", False, "flash", dp=8, zero=1)
    full = E.training_per_gpu(p, shape, 2, 1, 1, 4096, "bf16", False, "flash")
    assert full - z == pytest.approx(12 * p / 2 * 7 / 8)              # 7/8 of the fp32 moments + master copy
    # a model that cannot fit at all says so
    assert E.estimate(p, shape, seq=4096, gpu_mem=0.5).training_layout is None


def test_trainer_style_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: {n_layers: 22, d_model: 2048, n_heads: 32, n_kv_heads: 4, vocab_multiple: 128}\n"
                   "data: {seq_len: 2048}\n"
                   "train: {micro_batch_size: 8, precision: bf16, activation_checkpointing: true}\n")
    shape, settings = E.from_config(E.load_config(cfg), vocab_override=32001)
    assert shape.ffn_hidden == 5504                 # the trainer's default: 8/3 d rounded up to 64
    assert shape.vocab_size == 32128                # padded to vocab_multiple
    assert shape.n_kv_heads == 4 and settings["micro_batch"] == 8 and settings["checkpointing"] is True
    with pytest.raises(ValueError, match="n_layers"):
        E.from_config({"d_model": 64, "n_heads": 4})


def test_cli(tmp_path):
    out = subprocess.run([sys.executable, "-m", "train.estimate", "--params", "535e9"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "1,070.0 GB" in out.stdout and "267.5 GB" in out.stdout and "assumed" in out.stdout
    assert "Smallest layout on 80 GB" in out.stdout
    cfg = tmp_path / "llama.json"
    cfg.write_text(json.dumps({"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                               "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}))
    js = subprocess.run([sys.executable, "-m", "train.estimate", "--config", str(cfg), "--json", "--seq", "4096",
                         "--gpu-mem", "80"], capture_output=True, text=True, timeout=60)
    data = json.loads(js.stdout)
    assert data["params"] == 6_738_415_616 and data["kv_cache_bytes_per_token"] == 2 ** 19
    assert data["inference_layout"]["gpus"] == 1 and data["training_layout"]["gpus"] == 2
    bad = subprocess.run([sys.executable, "-m", "train.estimate"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--params" in bad.stderr
