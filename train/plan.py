"""The plan of a run: everything derived from the config and the manifest before any heavy work (model shape,
sequence length, vocabulary, batch layout), written once to ``RUN/config.json`` and read back by one reader,
``read_plan``, for everything that looks at a finished run (report, diagnosis, trace, export, evaluation, the
manifest timeline).

``config.json`` holds ``config`` (the trainer config with every default filled in), ``model`` (the ModelConfig),
``seq_len``, ``vocab_size``, ``padded_vocab``, ``world_size``, ``grad_accum``, ``tokens_per_step`` and
``manifest_max_seq_len``. The stop step and schedule horizon belong to one invocation and are not written.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from glassbox.schema import ConfigError
from train.model.config import ModelConfig

MODEL_KEYS = ("vocab_size", "n_layers", "d_model", "n_heads", "n_kv_heads", "ffn_hidden")


class PlanError(ValueError):
    """A run directory without a usable config.json."""


@dataclass(frozen=True)
class Plan:
    config: dict               # the trainer config as a dict, every default filled in
    model: ModelConfig
    seq_len: int
    vocab_size: int
    world_size: int
    grad_accum: int
    manifest_max_seq_len: int
    global_batch_size: int     # sequences per optimizer step
    stop: int | None = None    # this invocation: the last step, and the schedule's horizon (>= train.steps)
    horizon: int | None = None

    @property
    def padded_vocab(self) -> int:
        return self.model.padded_vocab

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch_size * self.seq_len

    def section(self, name: str) -> dict:
        """One section of the config (``train``, ``data``, ``parallel``...), {} when absent."""
        return self.config.get(name) or {}

    def to_json(self) -> dict:
        """What config.json holds."""
        return {"config": self.config, "model": dataclasses.asdict(self.model), "seq_len": self.seq_len,
                "vocab_size": self.vocab_size, "padded_vocab": self.padded_vocab, "world_size": self.world_size,
                "grad_accum": self.grad_accum, "tokens_per_step": self.tokens_per_step,
                "manifest_max_seq_len": self.manifest_max_seq_len}

    @classmethod
    def from_json(cls, raw: dict, where: str = "config.json") -> "Plan":
        if not isinstance(raw, dict) or not isinstance(raw.get("config"), dict):
            raise PlanError(f"{where}: not a resolved run config (no `config` section)")
        model = raw.get("model") or {}
        missing = [k for k in MODEL_KEYS if k not in model]
        if missing:
            raise PlanError(f"{where}: model.{missing[0]} missing; the run record is incomplete")
        fields = {f.name for f in dataclasses.fields(ModelConfig)}
        mcfg = ModelConfig(**{k: v for k, v in model.items() if k in fields})
        try:
            seq_len = int(raw.get("seq_len") or mcfg.max_seq_len)
            batch = ((raw["config"].get("train") or {}).get("global_batch_size")
                     or int(raw.get("tokens_per_step") or 0) // seq_len)
            return cls(config=raw["config"], model=mcfg, seq_len=seq_len,
                       vocab_size=int(raw.get("vocab_size") or mcfg.vocab_size),
                       world_size=int(raw.get("world_size") or 1), grad_accum=int(raw.get("grad_accum") or 1),
                       manifest_max_seq_len=int(raw.get("manifest_max_seq_len") or seq_len),
                       global_batch_size=int(batch))
        except (TypeError, ValueError) as e:
            raise PlanError(f"{where}: {e}") from None


def read_plan(run: str | Path) -> Plan:
    """The plan of run directory ``run`` (its config.json)."""
    path = Path(run) / "config.json"
    if not path.is_file():
        raise PlanError(f"{run}: not a run directory (no config.json); pass the directory make pretrain "
                        "trained into (runs/<name>)")
    try:
        raw = json.loads(path.read_text())
    except ValueError as e:
        raise PlanError(f"{path}: not JSON ({e})") from None
    return Plan.from_json(raw, str(path))


def read_plan_or_none(run: str | Path) -> Plan | None:
    """read_plan, or None for a directory without a (usable) config.json (another trainer's logs)."""
    try:
        return read_plan(run)
    except PlanError:
        return None


def resolve(cfg, manifest, steps: int | None) -> Plan:
    """The plan of a config on a manifest; ``steps``: --steps (stop after it). ConfigError names the key."""
    from train.config import ffn_hidden

    seq_len = cfg.data.seq_len or manifest.max_seq_len
    vocab = cfg.model.vocab_size or manifest.vocab_size
    if vocab < manifest.vocab_size:
        raise ConfigError(f"model.vocab_size: {vocab} is below the tokenizer's {manifest.vocab_size}; "
                          "leave it null to take the manifest's")
    m = cfg.model
    mcfg = ModelConfig(vocab_size=vocab, n_layers=m.n_layers, d_model=m.d_model, n_heads=m.n_heads,
                       n_kv_heads=m.n_kv_heads or m.n_heads, ffn_hidden=ffn_hidden(m), max_seq_len=seq_len,
                       rope_theta=m.rope_theta, norm_eps=m.norm_eps, init_std=m.init_std,
                       vocab_multiple=m.vocab_multiple, seed=cfg.train.seed, document_masking=m.document_masking,
                       document_positions=m.document_positions, eos_id=manifest.eos_id, qk_norm=m.qk_norm)
    if mcfg.padded_vocab % cfg.parallel.tp:
        raise ConfigError(f"model.vocab_multiple: {m.vocab_multiple} gives {mcfg.padded_vocab} embedding rows, "
                          f"not divisible by parallel.tp ({cfg.parallel.tp}); use a multiple of tp")
    if steps is not None and steps < 1:
        raise ConfigError(f"--steps: must be >= 1, got {steps}")
    stop = steps or cfg.train.steps
    return Plan(config=cfg.to_dict(), model=mcfg, seq_len=seq_len, vocab_size=vocab, world_size=cfg.world_size,
                grad_accum=cfg.grad_accum, manifest_max_seq_len=manifest.max_seq_len,
                global_batch_size=cfg.train.global_batch_size, stop=stop,
                horizon=max(cfg.train.steps, stop))
