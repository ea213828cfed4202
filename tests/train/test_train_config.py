"""Trainer config: every mistake names the key and the fix, before any heavy work."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from train.config import ConfigError, load_config, parse_config

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "train" / "configs"


@pytest.mark.parametrize("name, world", [("tiny", 1), ("125m", 8), ("350m", 8), ("1b", 8), ("1b-1gpu", 1),
                                         ("7b", 32)])
def test_bundled_configs_are_valid(name, world):
    cfg = load_config(CONFIGS / f"{name}.yaml")
    assert cfg.world_size == world
    assert cfg.grad_accum * cfg.train.micro_batch_size * cfg.parallel.dp == cfg.train.global_batch_size
    if name != "tiny":
        assert cfg.train.precision == "bf16"


def test_the_one_gpu_1b_config_fits_an_h200_by_the_estimate():
    """What its comment says: 73.8 GB without activation checkpointing, well inside 141 GB less 10 %."""
    out = subprocess.run([sys.executable, "-m", "train.estimate", "--config", str(CONFIGS / "1b-1gpu.yaml"),
                          "--gpu-mem", "141", "--no-checkpointing", "--dp", "1", "--zero", "1", "--json"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    assert got["training_layout"] == {"tp": 1, "pp": 1, "gpus": 1, "per_gpu_gb": got["training_gb"]["total"]}
    assert got["training_gb"]["total"] == pytest.approx(73.8, abs=0.05)


@pytest.mark.parametrize("raw, key, fix", [
    ({"modle": {}}, "modle", "Known sections"),
    ({"model": {"n_layer": 2}}, "model.n_layer", "Known keys: n_layers"),
    ({"train": {"steps": "ten"}}, "train.steps", "expected an integer"),
    ({"train": {"steps": True}}, "train.steps", "expected an integer"),
    ({"train": {"precision": "fp16"}}, "train.precision", "fp32, bf16"),
    ({"train": {"zero_stage": 2}}, "train.zero_stage", "ZeRO-2/3 with a pipeline"),
    ({"train": {"zero_stage": 0, "precision": "bf16"}}, "train.zero_stage", "use train.zero_stage: 1"),
    ({"parallel": {"tp": 3}}, "parallel.tp", "must divide model.n_heads"),
    ({"model": {"n_heads": 4, "n_kv_heads": 3}}, "model.n_kv_heads", "must divide model.n_heads"),
    ({"parallel": {"dp": 3}}, "train.global_batch_size", "use a multiple of 24"),
    ({"parallel": {"pp": 9}}, "parallel.pp", "at most one stage per transformer layer"),
    ({"schedule": {"warmup_steps": 100}}, "schedule.warmup_steps", "below train.steps"),
    ({"optimizer": {"lr": 1e-4, "min_lr": 1e-3}}, "optimizer.min_lr", "above optimizer.lr"),
    ({"optimizer": {"betas": [0.9]}}, "optimizer.betas", "two numbers"),
    ({"eval": {"every": 10, "samples_per_source": 12}}, "eval.samples_per_source", "multiple of"),
])
def test_mistakes_name_the_key_and_the_fix(raw, key, fix):
    with pytest.raises(ConfigError) as e:
        parse_config(raw)
    assert key in str(e.value) and fix in str(e.value)


def test_defaults_overrides_and_yaml_exponents(tmp_path):
    # PyYAML alone reads 3e-4 (no dot in the mantissa) as a string; the configs' loader reads it as a number,
    # in files and in --set alike (the pipeline's test_yaml_numbers_read_alike checks its side).
    (tmp_path / "c.yaml").write_text("optimizer: {lr: 3e-4, min_lr: 1e-5}\n")
    cfg = load_config(tmp_path / "c.yaml", overrides=["parallel.dp=2", "train.global_batch_size=32",
                                                      "optimizer.eps=1e-6"])
    assert cfg.optimizer.lr == 3e-4 and cfg.optimizer.min_lr == 1e-5 and cfg.optimizer.eps == 1e-6
    assert cfg.parallel.dp == 2 and cfg.world_size == 2 and cfg.grad_accum == 2
    with pytest.raises(ConfigError, match="optimizer.lr: expected a number, got str"):
        parse_config({"optimizer": {"lr": "fast"}})
    with pytest.raises(ConfigError, match="section.key=value"):
        parse_config({}, overrides=["dp=2"])


def test_world_size_for_make():
    check = [sys.executable, "-m", "glassbox.cli", "config", "check", "--kind", "train"]
    r = subprocess.run(check + [str(CONFIGS / "7b.yaml"), "--world-size"], capture_output=True, text=True, cwd=REPO,
                       check=True)
    assert r.stdout.strip() == "32"
    r = subprocess.run(check + [str(CONFIGS / "tiny.yaml"), "--set", "train.stepz=1"], capture_output=True, text=True,
                       cwd=REPO)
    assert r.returncode == 2 and "train.stepz: unknown key" in r.stderr


@pytest.mark.trainer
def test_trainer_fails_fast_on_config_and_launch_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {n_heads: 5}\n")
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "train.pretrain", "--config", str(bad),
                        "--manifest", "nope.json", "--run", str(tmp_path / "run")],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "model.d_model: 128 is not a multiple of model.n_heads (5)" in r.stderr
    # Refused before any heavy work: DeepSpeed never imported, no process group, no run directory.
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "torch" in imported or "json" in imported            # the import log is there to read
    assert not any(m == "deepspeed" or m.startswith("deepspeed.") for m in imported)
    assert not (tmp_path / "run").exists()
    r = subprocess.run([sys.executable, "-m", "train.pretrain", "--config", str(CONFIGS / "tiny.yaml"),
                        "--manifest", str(tmp_path / "none.json"), "--run", str(tmp_path / "run")],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 2 and "no such manifest" in r.stderr and "make mix" in r.stderr


def test_make_pretrain_command_line():
    """`make pretrain` defaults to the tiny config (not the pipeline's CONFIG default) and passes the rest."""
    r = subprocess.run(["make", "-n", "pretrain", "MANIFEST=m.json", "RUN=runs/x"], cwd=REPO, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert "-m train.pretrain runs/x --config train/configs/tiny.yaml --manifest m.json" in r.stdout
    assert "note:" not in r.stdout
    assert "--nproc_per_node=$(" in r.stdout and "config check --kind train train/configs/tiny.yaml --world-size" \
        in r.stdout
    r = subprocess.run(["make", "-n", "pretrain", "CONFIG=train/configs/1b.yaml", "MANIFEST=m.json", "RUN=r",
                        "STEPS=7"], cwd=REPO, capture_output=True, text=True)
    assert "-m train.pretrain r --config train/configs/1b.yaml --manifest m.json --steps 7" in r.stdout
    # CONFIG= still names the trainer config here, with a one-line notice that TRAIN_CONFIG is its name
    assert "note: make pretrain reads CONFIG=train/configs/1b.yaml as the trainer config; name it TRAIN_CONFIG=" \
        in r.stdout
    r = subprocess.run(["make", "-n", "pretrain", "TRAIN_CONFIG=train/configs/1b.yaml", "MANIFEST=m.json", "RUN=r",
                        "INIT=exports/base"], cwd=REPO, capture_output=True, text=True)
    assert "-m train.pretrain r --config train/configs/1b.yaml --manifest m.json" in r.stdout
    assert "--init exports/base" in r.stdout and "note:" not in r.stdout
