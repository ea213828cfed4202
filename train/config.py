"""Trainer config: a YAML file checked key by key before any heavy work starts.

Every mistake names the key and the fix (``parallel.tp: 3 must divide model.n_heads (8) ...``), because
a typo found after the model was built across eight processes costs minutes, and one found after a day
costs a day. This module imports only the standard library and PyYAML, so ``make pretrain`` can ask it
for the number of processes to launch (``glassbox config check CONFIG --world-size``) cheaply.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glassbox.schema import ConfigError, build, key_name, load_file, load_yaml_text, setting

__all__ = ["ConfigError", "TrainConfig", "load_config", "parse_config", "ffn_hidden"]


@dataclass
class ModelSection:
    n_layers: int = setting(4, ge=1)
    d_model: int = setting(128, ge=1)
    n_heads: int = setting(4, ge=1)
    n_kv_heads: int | None = setting(None, ge=1)     # grouped-query attention; null = n_heads (plain multi-head)
    ffn_hidden: int | None = setting(None, ge=1)     # SwiGLU width; null = 8/3 d_model rounded up to a multiple of 64
    rope_theta: float = setting(10000.0, gt=0)
    norm_eps: float = setting(1e-5, gt=0)
    init_std: float = setting(0.02, gt=0)
    vocab_size: int | None = setting(None, ge=1)     # null = the manifest tokenizer's vocab_size
    vocab_multiple: int = setting(64, ge=1)          # embedding/head rows are padded to a multiple (masked in the loss)
    # Packed rows hold several documents (each ending with the tokenizer's eos): a token attends only to earlier
    # tokens of its own document (Llama 3, Megatron-LM, torchtitan, OLMo-core); false: the whole row is one
    # causal sequence (every document sees the tail of the one before). Off by default so that existing configs
    # and runs keep their meaning; the shipped configs for new runs set it.
    document_masking: bool = False
    # Rotary positions restart at 0 at each document; null: the same as document_masking. With the mask on,
    # RoPE's scores depend only on q - k, so restarting changes no score but its rounding: restarted, a
    # document's numbers do not depend on where in the row it landed, and they are what a model served one
    # document at a time (positions from 0, Hugging Face export) computes.
    document_positions: bool | None = None
    qk_norm: bool = False              # RMSNorm on each head's queries and keys before RoPE (OLMo 2, Qwen3)


@dataclass
class ParallelSection:
    tp: int = setting(1, ge=1)         # tensor parallel: heads and MLP split across tp ranks
    pp: int = setting(1, ge=1)         # pipeline stages
    dp: int = setting(1, ge=1)         # data-parallel replicas (ZeRO-1 shards optimizer state across them)


@dataclass
class DataSection:
    seq_len: int | None = setting(None, ge=1)        # null = the manifest's max_seq_len
    cache_dir: str | None = None       # flat token cache; null = <manifest dir>/../token_cache
    verify: str = setting("stamp", choices=("stamp", "always"))  # stamp: rehash a shard only when its size/mtime changed
    log_consumed: bool = False         # write the sample ids every micro-batch read (audits, tests)


@dataclass
class TrainSection:
    steps: int = setting(100, ge=1)                  # planned optimizer steps (the LR schedule's horizon)
    micro_batch_size: int = setting(8, ge=1)         # sequences per rank per micro-batch
    global_batch_size: int = setting(16, ge=1)       # sequences per optimizer step, all ranks together
    precision: str = setting("fp32", choices=("fp32", "bf16"))
    seed: int = setting(1234, ge=0)
    activation_checkpointing: bool = False
    # null: ZeRO-1 where it partitions something (dp > 1) or bf16 needs it, otherwise 0 (no flat copies, no
    # reduction over one rank: about a tenth of a small fp32 model's step on a CPU).
    # torch.compile of each transformer block (train/model/kernels.py); null: on GPU. On a CPU the compile (about half
    # a minute) pays off only in runs of thousands of steps.
    compile: bool | None = None
    zero_stage: int | None = setting(None, choices=(0, 1), why="DeepSpeed refuses ZeRO-2/3 with a pipeline engine")
    # Loss spikes (train/monitor/spike_rule.py). A step is an outlier when its loss or pre-clipping gradient norm
    # is a robust z-score above the accepted steps before it, or not finite; every rank takes the decision
    # on the same all-reduced numbers. off: not judged (the diagnosis, glassbox diagnose, still finds spikes afterwards); skip:
    # drop that step's update; rollback: also restore the last complete checkpoint and move the data cursor
    # past the batches since it (the PaLM recipe).
    on_spike: str = setting("off", choices=("off", "skip", "rollback"))
    spike_window: int = setting(50, ge=3)            # accepted steps whose step-to-step differences give the noise
    spike_min_history: int = setting(20, ge=3)       # accepted steps needed before anything is judged (non-finite: always)
    spike_loss_z: float = setting(6.0, ge=0)         # robust z of the loss above which a step is a spike; 0 = loss not used
    spike_grad_norm_z: float = setting(8.0, ge=0)    # the same for the gradient norm (heavier-tailed); 0 = not used
    spike_min_rel: float = setting(0.1, ge=0)        # and 10% above the baseline, the median of the last 7 (smooth curves)
    spike_rollback_skip: int = setting(0, ge=0)      # rollback: data batches skipped past the spike's own, beyond the window
    spike_max_rollbacks: int = setting(5, ge=1)      # rollback: more spikes than this in one invocation stop the run


@dataclass
class OptimizerSection:
    lr: float = setting(3e-4, gt=0)
    min_lr: float = setting(3e-5, ge=0)
    betas: list[float] = setting(default_factory=lambda: [0.9, 0.95], ge=0, lt=1,
                                 check=lambda b: None if len(b) == 2 else f"expected two numbers, got {b!r}")
    eps: float = setting(1e-8, ge=0)
    weight_decay: float = setting(0.1, ge=0)         # on matrices and embeddings, never on norm weights
    grad_clip: float = setting(1.0, ge=0)            # global L2 norm; 0 disables
    z_loss: float = setting(0.0, ge=0)               # coefficient of mean(logsumexp^2); 0 disables
    fused: bool = True                 # torch's fused AdamW: one kernel over every tensor (CPU and GPU); false: a loop
    # adamw: AdamW on every weight. muon: Muon (Newton-Schulz orthogonalised momentum) on the blocks' 2-D weight
    # matrices at muon_lr, AdamW on embeddings, head and norms at lr (train/engine/muon.py); any tp x pp x dp.
    kind: str = setting("adamw", choices=("adamw", "muon"))
    muon_lr: float = setting(0.02, gt=0)             # Muon's peak learning rate (the schedule scales it like lr)
    muon_momentum: float = setting(0.95, ge=0, lt=1)


@dataclass
class ScheduleSection:
    kind: str = setting("cosine", choices=("cosine", "linear", "wsd", "constant"))
    warmup_steps: int = setting(0, ge=0)
    decay_fraction: float = setting(0.2, gt=0, le=1)  # wsd: share of the steps spent in the final linear decay


@dataclass
class CheckpointSection:
    every: int = setting(0, ge=0)      # steps; 0 = only at the last step (a run always saves its last)
    keep: int = setting(2, ge=0)       # complete checkpoints to keep; 0 = all
    # `async` in a file: the state copied at the step and written by a background thread while the next steps
    # train (at most one write in flight); the checkpoint counts once its manifest follows (train/checkpoint/store.py)
    async_: bool = False


@dataclass
class LogSection:
    every: int = setting(10, ge=1)                   # console line interval (metrics.jsonl gets every step)
    peak_tflops: float | None = setting(None, gt=0)  # per-device peak for MFU when the device is not in the table
    telemetry: bool = True             # data telemetry of the batch on every log.every-th metrics row
    sample_every: int = setting(100, ge=0)           # steps; decoded text of that step's first sequences; 0 = off
    tensorboard: bool = False          # every scalar of metrics.jsonl also to <run>/tensorboard/ (needs tensorboard)
    # Each step's row read and written as the step ends. null: on CPU only (reading a number is free there);
    # on a GPU the rows of the steps between log lines are read together on the log step, so those steps
    # never wait for the device, and their step_s is the interval's mean.
    rows_every_step: bool | None = None


@dataclass
class EvalSection:
    every: int = setting(0, ge=0)                    # steps; 0 = no validation (and no held-out documents)
    samples_per_source: int = setting(16, ge=1)      # held-out sequences per source, a multiple of micro_batch*dp
    leakage: str = setting("warn", choices=("warn", "error", "off"))  # held-out documents also in training


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
        return {sec: {key_name(k): v for k, v in body.items()} for sec, body in d.items()}


SECTIONS = [f.name for f in dataclasses.fields(TrainConfig) if f.name != "path"]


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
    raw[parts[0]][parts[1]] = load_yaml_text(value)


def parse_config(raw: Any, path: str = "<config>", overrides: list[str] | None = None) -> TrainConfig:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections ({', '.join(SECTIONS)})")
    raw = copy.deepcopy(raw)
    for item in overrides or []:
        _apply_override(raw, item)
    for section, body in raw.items():
        if section not in SECTIONS:
            raise ConfigError(f"{section}: unknown section. Known sections: {', '.join(SECTIONS)}")
    cfg = build(TrainConfig, {k: v for k, v in raw.items() if v is not None})
    cfg.path = str(path)
    _validate(cfg)
    return cfg


def _validate(cfg: TrainConfig) -> None:
    """What one key cannot say alone (types and ranges are checked by glassbox.schema as the config is read)."""
    m, par, t, o, s = cfg.model, cfg.parallel, cfg.train, cfg.optimizer, cfg.schedule
    if o.min_lr > o.lr:
        raise ConfigError(f"optimizer.min_lr: {o.min_lr} is above optimizer.lr {o.lr}; lower it")
    if s.warmup_steps >= t.steps:
        raise ConfigError(f"schedule.warmup_steps: {s.warmup_steps} must be below train.steps ({t.steps})")
    if t.spike_window < t.spike_min_history:
        raise ConfigError(f"train.spike_window: {t.spike_window} is below train.spike_min_history "
                          f"({t.spike_min_history}); raise it")
    if cfg.log.tensorboard and importlib.util.find_spec("tensorboard") is None:
        raise ConfigError("log.tensorboard: true needs the tensorboard package, which is not installed: "
                          "pip install tensorboard==2.21.0 (or set log.tensorboard: false; metrics.jsonl and "
                          "glassbox report hold the same numbers)")
    if t.zero_stage is None:
        t.zero_stage = 1 if par.dp > 1 or t.precision == "bf16" else 0
    if t.precision == "bf16" and t.zero_stage == 0:
        # DeepSpeed accumulates bf16 gradients in fp32 only inside its ZeRO-1 (bf16) optimizer; without ZeRO it
        # refuses fp32 accumulation in deepspeed.initialize, and accumulating in bf16 loses the small gradients.
        raise ConfigError("train.zero_stage: 0 with train.precision: bf16 is not supported: DeepSpeed accumulates "
                          "bf16 gradients in fp32 only with ZeRO-1, and its bf16 optimizer shards the fp32 master "
                          "weights over data-parallel ranks at any stage, so ZeRO-1 costs nothing more; use "
                          "train.zero_stage: 1")
    if o.kind == "muon" and t.zero_stage and par.tp > 1:
        raise ConfigError(f"optimizer.kind: muon with train.zero_stage {t.zero_stage} and parallel.tp {par.tp}: under "
                          "ZeRO DeepSpeed's own Muon orthogonalises what each tensor rank holds, a slice of every "
                          "matrix, not the matrix; use train.zero_stage: 0 (fp32; this trainer's Muon gathers the "
                          "slices) or parallel.tp: 1")
    if o.kind == "muon" and t.precision == "bf16" and (par.tp > 1 or par.pp > 1):
        raise ConfigError(f"optimizer.kind: muon with train.precision: bf16 and parallel.tp {par.tp}, pp {par.pp}: "
                          "DeepSpeed 0.19's bf16 optimizer runs Muon over plain data parallelism only (no model-"
                          "parallel unit); use parallel.tp: 1 and pp: 1, or train.precision: fp32 (every layout)")
    if o.kind == "muon" and t.zero_stage and o.grad_clip:
        # DeepSpeed 0.19's ZeRO writes Muon's orthogonalised update into the gradient partition before it clips,
        # so the clip would scale the matrices' steps by grad_clip / (norm of all updates): measured on a 2-layer
        # model (grad_clip 0.5, a logged norm of 28), a step about 56x smaller.
        raise ConfigError(f"optimizer.grad_clip: {o.grad_clip:g} with optimizer.kind: muon and train.zero_stage "
                          f"{t.zero_stage}: DeepSpeed's ZeRO Muon clips the orthogonalised update, not the gradient, "
                          "which shrinks every matrix's step; set optimizer.grad_clip: 0 (Muon's update is "
                          "normalised whatever the gradient's size) or train.zero_stage: 0 (fp32; this trainer's "
                          "Muon clips the gradient first)")
    if t.on_spike == "rollback" and not cfg.checkpoint.every:
        raise ConfigError("train.on_spike: rollback restores the last checkpoint, but checkpoint.every is 0 "
                          "(only the last step is saved); set checkpoint.every (e.g. 100) or use on_spike: skip")

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
    if not Path(path).is_file():
        raise ConfigError(f"{path}: no such config file (see train/configs/ for examples)")
    raw = load_file(path)
    try:
        return parse_config(raw, str(path), overrides)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


if __name__ == "__main__":  # the one checker of every kind of config is glassbox/config_check.py
    raise SystemExit("python -m train.config is gone: run `glassbox config check FILE` (any kind of config)")
