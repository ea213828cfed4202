"""Trainer config: a YAML file checked key by key before any heavy work starts.

Every mistake names the key and the fix (``parallel.tp: 3 must divide model.n_heads (8) ...``), because
a typo found after the model was built across eight processes costs minutes, and one found after a day
costs a day. This module imports only the standard library and PyYAML, so ``make pretrain`` can ask it
for the number of processes to launch (``python -m train.config CONFIG --world-size``) cheaply.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A config mistake, with the key path and what to do about it."""


@dataclass
class ModelSection:
    n_layers: int = 4
    d_model: int = 128
    n_heads: int = 4
    n_kv_heads: int | None = None      # grouped-query attention; null = n_heads (plain multi-head)
    ffn_hidden: int | None = None      # SwiGLU width; null = 8/3 d_model rounded up to a multiple of 64
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    init_std: float = 0.02
    vocab_size: int | None = None      # null = the manifest tokenizer's vocab_size
    vocab_multiple: int = 64           # embedding/head rows are padded to a multiple (masked in the loss)


@dataclass
class ParallelSection:
    tp: int = 1                        # tensor parallel: heads and MLP split across tp ranks
    pp: int = 1                        # pipeline stages
    dp: int = 1                        # data-parallel replicas (ZeRO-1 shards optimizer state across them)


@dataclass
class DataSection:
    seq_len: int | None = None         # null = the manifest's max_seq_len
    cache_dir: str | None = None       # flat token cache; null = <manifest dir>/../token_cache
    verify: str = "stamp"              # stamp: rehash a shard only when its size/mtime changed; always
    log_consumed: bool = False         # write the sample ids every micro-batch read (audits, tests)


@dataclass
class TrainSection:
    steps: int = 100                   # planned optimizer steps (the LR schedule's horizon)
    micro_batch_size: int = 8          # sequences per rank per micro-batch
    global_batch_size: int = 16        # sequences per optimizer step, all ranks together
    precision: str = "fp32"            # fp32 | bf16
    seed: int = 1234
    activation_checkpointing: bool = False
    zero_stage: int = 1                # DeepSpeed refuses ZeRO-2/3 with a pipeline
    # Loss spikes (train/monitor/spike.py). A step is an outlier when its loss or pre-clipping gradient norm
    # is a robust z-score above the accepted steps before it, or not finite; every rank takes the decision
    # on the same all-reduced numbers. off: not judged (train.diagnose still finds spikes afterwards); skip:
    # drop that step's update; rollback: also restore the last complete checkpoint and move the data cursor
    # past the batches since it (the PaLM recipe).
    on_spike: str = "off"              # off | skip | rollback
    spike_window: int = 50             # accepted steps whose step-to-step differences give the noise (MAD)
    spike_min_history: int = 20        # accepted steps needed before anything is judged (non-finite: always)
    spike_loss_z: float = 6.0          # robust z of the loss above which a step is a spike; 0 = loss not used
    spike_grad_norm_z: float = 8.0     # the same for the gradient norm (heavier-tailed than the loss); 0 = not used
    spike_min_rel: float = 0.1         # and 10% above the baseline, the median of the last 7 (smooth curves: tiny MAD)
    spike_rollback_skip: int = 0       # rollback: data batches skipped past the spike's own, beyond the window
    spike_max_rollbacks: int = 5       # rollback: more spikes than this in one invocation stop the run


@dataclass
class OptimizerSection:
    lr: float = 3e-4
    min_lr: float = 3e-5
    betas: list = field(default_factory=lambda: [0.9, 0.95])
    eps: float = 1e-8
    weight_decay: float = 0.1          # on matrices and embeddings, never on norm weights
    grad_clip: float = 1.0             # global L2 norm; 0 disables
    z_loss: float = 0.0                # coefficient of mean(logsumexp^2); 0 disables


@dataclass
class ScheduleSection:
    kind: str = "cosine"               # cosine | linear | wsd | constant
    warmup_steps: int = 0
    decay_fraction: float = 0.2        # wsd: share of the steps spent in the final linear decay


@dataclass
class CheckpointSection:
    every: int = 0                     # steps; 0 = only at the last step (a run always saves its last)
    keep: int = 2                      # complete checkpoints to keep; 0 = all


@dataclass
class LogSection:
    every: int = 10                    # console line interval (metrics.jsonl gets every step)
    peak_tflops: float | None = None   # per-device peak for MFU when the device is not in the table
    telemetry: bool = True             # data telemetry of the batch on every log.every-th metrics row
    sample_every: int = 100            # steps; decoded text of that step's first sequences in samples/; 0 = off
    tensorboard: bool = False          # every scalar of metrics.jsonl also to <run>/tensorboard/ (needs tensorboard)


@dataclass
class EvalSection:
    every: int = 0                     # steps; 0 = no validation (and no held-out documents)
    samples_per_source: int = 16       # held-out sequences per source, a multiple of micro_batch*dp
    leakage: str = "warn"              # held-out documents whose tokens also occur in training: warn | error | off


@dataclass
class TrainConfig:
    model: ModelSection = field(default_factory=ModelSection)
    parallel: ParallelSection = field(default_factory=ParallelSection)
    data: DataSection = field(default_factory=DataSection)
    train: TrainSection = field(default_factory=TrainSection)
    optimizer: OptimizerSection = field(default_factory=OptimizerSection)
    schedule: ScheduleSection = field(default_factory=ScheduleSection)
    checkpoint: CheckpointSection = field(default_factory=CheckpointSection)
    log: LogSection = field(default_factory=LogSection)
    eval: EvalSection = field(default_factory=EvalSection)
    path: str = ""

    @property
    def world_size(self) -> int:
        return self.parallel.tp * self.parallel.pp * self.parallel.dp

    @property
    def grad_accum(self) -> int:
        return self.train.global_batch_size // (self.train.micro_batch_size * self.parallel.dp)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("path")
        return d


SECTIONS = {f.name: f.type for f in dataclasses.fields(TrainConfig) if f.name != "path"}
_SECTION_CLASSES = {"model": ModelSection, "parallel": ParallelSection, "data": DataSection,
                    "train": TrainSection, "optimizer": OptimizerSection, "schedule": ScheduleSection,
                    "checkpoint": CheckpointSection, "log": LogSection, "eval": EvalSection}
CHOICES = {"train.precision": ("fp32", "bf16"), "schedule.kind": ("cosine", "linear", "wsd", "constant"),
           "data.verify": ("stamp", "always"), "train.zero_stage": (0, 1),
           "train.on_spike": ("off", "skip", "rollback"), "eval.leakage": ("warn", "error", "off")}


def _expected_type(cls: type, name: str) -> tuple[type, bool]:
    """(scalar type, nullable) from the dataclass annotation string."""
    ann = {f.name: f.type for f in dataclasses.fields(cls)}[name]
    nullable = "None" in ann
    base = ann.replace("| None", "").strip()
    return {"int": int, "float": float, "str": str, "bool": bool, "list": list}[base], nullable


def _coerce(key: str, value: Any, expected: type, nullable: bool) -> Any:
    if value is None:
        if nullable:
            return None
        raise ConfigError(f"{key}: must be set (null is not allowed here)")
    # PyYAML reads 3e-4 (no dot in the mantissa) as a string: take it as the number it is meant to be.
    if expected is float and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    # bool is an int in Python: keep `steps: true` from passing as 1.
    if expected is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if expected in (bool, str, list) and isinstance(value, expected):
        return value
    names = {bool: "a boolean (true/false)", int: "an integer", float: "a number", str: "a string",
             list: "a list"}
    raise ConfigError(f"{key}: expected {names[expected]}, got {type(value).__name__} {value!r}")


def _apply_override(raw: dict, item: str) -> None:
    """`section.key=value` (value parsed as YAML) into the raw mapping."""
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. --set parallel.dp=2")
    path, value = item.split("=", 1)
    parts = path.strip().split(".")
    if len(parts) != 2:
        raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. --set train.steps=50")
    raw.setdefault(parts[0], {})
    if not isinstance(raw[parts[0]], dict):
        raise ConfigError(f"{parts[0]}: expected a mapping")
    raw[parts[0]][parts[1]] = yaml.safe_load(value)


def parse_config(raw: Any, path: str = "<config>", overrides: list[str] | None = None) -> TrainConfig:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections ({', '.join(SECTIONS)})")
    raw = copy.deepcopy(raw)
    for item in overrides or []:
        _apply_override(raw, item)
    cfg = TrainConfig(path=str(path))
    for section, body in raw.items():
        if section not in _SECTION_CLASSES:
            raise ConfigError(f"{section}: unknown section. Known sections: {', '.join(_SECTION_CLASSES)}")
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ConfigError(f"{section}: expected a mapping of keys, got {type(body).__name__}")
        cls = _SECTION_CLASSES[section]
        known = [f.name for f in dataclasses.fields(cls)]
        target = getattr(cfg, section)
        for key, value in body.items():
            if key not in known:
                raise ConfigError(f"{section}.{key}: unknown key. Known keys: {', '.join(known)}")
            expected, nullable = _expected_type(cls, key)
            setattr(target, key, _coerce(f"{section}.{key}", value, expected, nullable))
    _validate(cfg)
    return cfg


def _positive(key: str, value: float, zero_ok: bool = False) -> None:
    if value is None:
        return
    if value < 0 or (value == 0 and not zero_ok):
        raise ConfigError(f"{key}: must be {'>= 0' if zero_ok else '> 0'}, got {value}")


def _validate(cfg: TrainConfig) -> None:
    m, par, t, o, s = cfg.model, cfg.parallel, cfg.train, cfg.optimizer, cfg.schedule
    for key, value in CHOICES.items():
        sec, name = key.split(".")
        if getattr(getattr(cfg, sec), name) not in value:
            raise ConfigError(f"{key}: must be one of {', '.join(map(str, value))}, got "
                              f"{getattr(getattr(cfg, sec), name)!r}"
                              + (" (DeepSpeed refuses ZeRO-2/3 with a pipeline engine)" if name == "zero_stage"
                                 else ""))
    for key in ("n_layers", "d_model", "n_heads", "n_kv_heads", "ffn_hidden", "vocab_size", "vocab_multiple"):
        _positive(f"model.{key}", getattr(m, key))
    for key in ("rope_theta", "norm_eps", "init_std"):
        _positive(f"model.{key}", getattr(m, key))
    for key in ("tp", "pp", "dp"):
        _positive(f"parallel.{key}", getattr(par, key))
    for key in ("steps", "micro_batch_size", "global_batch_size"):
        _positive(f"train.{key}", getattr(t, key))
    _positive("data.seq_len", cfg.data.seq_len)
    _positive("optimizer.lr", o.lr)
    for key in ("min_lr", "eps", "weight_decay", "grad_clip", "z_loss"):
        _positive(f"optimizer.{key}", getattr(o, key), zero_ok=True)
    if o.min_lr > o.lr:
        raise ConfigError(f"optimizer.min_lr: {o.min_lr} is above optimizer.lr {o.lr}; lower it")
    if len(o.betas) != 2 or not all(isinstance(b, (int, float)) and 0 <= b < 1 for b in o.betas):
        raise ConfigError(f"optimizer.betas: expected two numbers in [0, 1), got {o.betas!r}")
    _positive("schedule.warmup_steps", s.warmup_steps, zero_ok=True)
    if s.warmup_steps >= t.steps:
        raise ConfigError(f"schedule.warmup_steps: {s.warmup_steps} must be below train.steps ({t.steps})")
    if not 0 < s.decay_fraction <= 1:
        raise ConfigError(f"schedule.decay_fraction: must be in (0, 1], got {s.decay_fraction}")
    for key in ("every", "keep"):
        _positive(f"checkpoint.{key}", getattr(cfg.checkpoint, key), zero_ok=True)
    _positive("log.every", cfg.log.every)
    _positive("log.peak_tflops", cfg.log.peak_tflops)
    _positive("eval.every", cfg.eval.every, zero_ok=True)
    _positive("log.sample_every", cfg.log.sample_every, zero_ok=True)
    for key in ("spike_loss_z", "spike_grad_norm_z", "spike_min_rel", "spike_rollback_skip"):
        _positive(f"train.{key}", getattr(t, key), zero_ok=True)
    _positive("train.spike_max_rollbacks", t.spike_max_rollbacks)
    if t.spike_min_history < 3:
        raise ConfigError(f"train.spike_min_history: must be >= 3 (a median and a spread need points), "
                          f"got {t.spike_min_history}")
    if t.spike_window < t.spike_min_history:
        raise ConfigError(f"train.spike_window: {t.spike_window} is below train.spike_min_history "
                          f"({t.spike_min_history}); raise it")
    if cfg.log.tensorboard and importlib.util.find_spec("tensorboard") is None:
        raise ConfigError("log.tensorboard: true needs the tensorboard package, which is not installed: "
                          "pip install tensorboard==2.21.0 (or set log.tensorboard: false; metrics.jsonl and "
                          "python -m train.report hold the same numbers)")
    if t.precision == "bf16" and t.zero_stage == 0:
        # DeepSpeed accumulates bf16 gradients in fp32 only inside its ZeRO-1 (bf16) optimizer; without ZeRO it
        # refuses fp32 accumulation in deepspeed.initialize, and accumulating in bf16 loses the small gradients.
        raise ConfigError("train.zero_stage: 0 with train.precision: bf16 is not supported: DeepSpeed accumulates "
                          "bf16 gradients in fp32 only with ZeRO-1, and its bf16 optimizer shards the fp32 master "
                          "weights over data-parallel ranks at any stage, so ZeRO-1 costs nothing more; use "
                          "train.zero_stage: 1")
    if t.on_spike == "rollback" and not cfg.checkpoint.every:
        raise ConfigError("train.on_spike: rollback restores the last checkpoint, but checkpoint.every is 0 "
                          "(only the last step is saved); set checkpoint.every (e.g. 100) or use on_spike: skip")
    _positive("eval.samples_per_source", cfg.eval.samples_per_source)

    # The model must split evenly over the tensor-parallel group.
    n_kv = m.n_kv_heads or m.n_heads
    if m.d_model % m.n_heads:
        raise ConfigError(f"model.d_model: {m.d_model} is not a multiple of model.n_heads ({m.n_heads})")
    if (m.d_model // m.n_heads) % 2:
        raise ConfigError(f"model.d_model: head dim d_model/n_heads = {m.d_model // m.n_heads} must be even "
                          "for rotary embeddings")
    if m.n_heads % n_kv:
        raise ConfigError(f"model.n_kv_heads: {n_kv} must divide model.n_heads ({m.n_heads})")
    for key, value in (("model.n_heads", m.n_heads), ("model.n_kv_heads", n_kv),
                       ("model.ffn_hidden", ffn_hidden(m))):
        if value % par.tp:
            raise ConfigError(f"parallel.tp: {par.tp} must divide {key} ({value}); choose a tp that does, "
                              f"or change {key}")
    if par.pp > m.n_layers:
        raise ConfigError(f"parallel.pp: {par.pp} stages for {m.n_layers} layers; "
                          "use at most one stage per transformer layer")
    per_step = t.micro_batch_size * par.dp
    if t.global_batch_size % per_step:
        raise ConfigError(f"train.global_batch_size: {t.global_batch_size} is not a multiple of "
                          f"train.micro_batch_size x parallel.dp = {t.micro_batch_size} x {par.dp} = {per_step}; "
                          f"use a multiple of {per_step} (the rest is gradient accumulation)")
    if cfg.eval.every and cfg.eval.samples_per_source % per_step:
        raise ConfigError(f"eval.samples_per_source: {cfg.eval.samples_per_source} is not a multiple of "
                          f"train.micro_batch_size x parallel.dp = {per_step}")


def ffn_hidden(m: ModelSection) -> int:
    """SwiGLU width: the config's, or Llama's 8/3 d rounded up to a multiple of 64."""
    if m.ffn_hidden:
        return m.ffn_hidden
    return ((8 * m.d_model // 3) + 63) // 64 * 64


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: no such config file (see train/configs/ for examples)")
    try:
        raw = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    try:
        return parse_config(raw, str(path), overrides)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Check a trainer config (and print its process count).")
    ap.add_argument("config")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    ap.add_argument("--world-size", action="store_true", help="print tp*pp*dp only")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config, args.set)
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    if args.world_size:
        print(cfg.world_size)
    else:
        print(f"{args.config}: ok ({cfg.world_size} processes: tp={cfg.parallel.tp} pp={cfg.parallel.pp} "
              f"dp={cfg.parallel.dp}, gradient accumulation {cfg.grad_accum})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
