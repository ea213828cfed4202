"""Mixture configs, the token plan, and the manifest the trainer reads.

A mix (`mixes/<name>.yaml` or `.json`):

    dataset_mix: {web: 0.7, cc: 0.3}   # weights; normalised (with a warning) unless they sum to 1
    max_seq_len: 4096
    seed: 42                           # optional, default 0
    total_tokens: 2B                   # optional token budget: an integer or 500K / 300M / 2B / 1T
    max_epochs: 4                      # optional, default 4: most times a source's tokens may repeat
    reweight: {step_size: 1.0, smoothing: 0.1, min_weight: 0.02}   # optional: re-weighting from validation
                                                                   # (pipeline/mix/reweight.py)

Plan: target_i = weight_i * total. A source whose target would exceed max_epochs * available_i is
capped there (a warning names it and the epochs it would have needed) and the rest of the budget
goes to the uncapped sources in proportion to their weights, until nothing more binds; if every
source is capped the total shrinks, with a warning. Without `total_tokens` the budget is the largest
one at which no source exceeds max_epochs (so the weights hold exactly and one source sits at the cap).

Every manifest has a ``version`` (the base ``<name>.json``: 1) and a ``parent`` (the content hash of the
version it was derived from; null for the base): pipeline/mix/reweight.py writes later versions.

The manifest is canonical: sources and shards sorted, JSON with sorted keys, no timestamps or
absolute paths (paths are relative to the manifest's folder), so a rerun is byte-identical and
`content_hash` (sha256 of the compact sorted-key JSON without that key) identifies it.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from glassbox.contracts import manifest_content_hash
from glassbox.schema import ConfigError, build, coerce, load_file, setting

DEFAULT_MAX_EPOCHS = 4.0
DEFAULT_SEED = 0
KNOWN_KEYS = ("dataset_mix", "max_seq_len", "seed", "total_tokens", "max_epochs", "reweight")
_SUFFIX = {"K": 10 ** 3, "M": 10 ** 6, "B": 10 ** 9, "G": 10 ** 9, "T": 10 ** 12}
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


class MixError(ConfigError):
    """A mix or corpus mistake, naming the key and the fix."""


@dataclass
class MixConfig:
    name: str
    weights: dict[str, float]          # as written
    max_seq_len: int
    seed: int = DEFAULT_SEED
    total_tokens: int | None = None
    max_epochs: float = DEFAULT_MAX_EPOCHS
    warnings: list[str] = field(default_factory=list)
    reweight: Any = None               # ReweightParams (the mix file's reweight: section)

    def normalized(self) -> dict[str, float]:
        s = sum(self.weights.values())
        return {k: v / s for k, v in sorted(self.weights.items())}


def parse_tokens(key: str, value: Any) -> int | None:
    """An integer token count; also 1.5e9 or '300M', '2B', '1T'. None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise MixError(f"{key}: expected a token count such as 2000000 or '2B', got {value!r}")
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?(?:[eE][0-9]+)?)\s*([KMBGT]?)\s*", value.upper())
        if not m:
            raise MixError(f"{key}: cannot read {value!r} as a token count; write e.g. 2000000, 300M or 2B")
        value = float(m.group(1)) * _SUFFIX.get(m.group(2), 1)
    if isinstance(value, float):
        if not value.is_integer():
            raise MixError(f"{key}: a token count must be whole, got {value}")
        value = int(value)
    if not isinstance(value, int) or value <= 0:
        raise MixError(f"{key}: must be a positive token count, got {value!r}")
    return value


def parse_mix(raw: Any, name: str) -> MixConfig:
    if not isinstance(raw, dict):
        raise MixError(f"expected a mapping with dataset_mix and max_seq_len, got {type(raw).__name__}")
    for k in raw:
        if k not in KNOWN_KEYS:
            raise MixError(f"{k}: unknown key. Known keys: {', '.join(KNOWN_KEYS)}")
    mix = raw.get("dataset_mix")
    if not isinstance(mix, dict) or not mix:
        raise MixError("dataset_mix: missing or empty. Example: dataset_mix: {web: 0.7, code: 0.3}")
    weights = {}
    for src, w in mix.items():
        if not isinstance(src, str) or not _NAME.match(src):
            raise MixError(f"dataset_mix.{src}: a source name is letters, digits, '-' or '_'")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
            raise MixError(f"dataset_mix.{src}: weight must be a number > 0, got {w!r} "
                           "(leave a source out of the mix to exclude it)")
        weights[src] = float(w)
    try:                                  # the scalars on the shared checker, read as every config is
        seq = coerce("max_seq_len", raw.get("max_seq_len"), int, {"ge": 1, "why": "the trainer's context length"})
        seed = coerce("seed", raw.get("seed", DEFAULT_SEED), int, {"ge": 0})
        epochs = coerce("max_epochs", DEFAULT_MAX_EPOCHS if raw.get("max_epochs") is None else raw["max_epochs"], float,
                        {"gt": 0, "why": "e.g. 4: a source's tokens repeat at most 4 times"})
    except ConfigError as e:
        raise MixError(str(e)) from None
    cfg = MixConfig(name=name, weights=weights, max_seq_len=seq, seed=seed,
                    total_tokens=parse_tokens("total_tokens", raw.get("total_tokens")), max_epochs=float(epochs),
                    reweight=parse_params(raw.get("reweight")))
    total = sum(weights.values())
    if abs(total - 1.0) > 1e-6:
        cfg.warnings.append(f"dataset_mix weights sum to {total:g}, not 1: normalized to "
                            + ", ".join(f"{k} {v:.4f}" for k, v in cfg.normalized().items()))
    return cfg


def load_mix(path: str | os.PathLike) -> MixConfig:
    p = Path(path)
    if not p.is_file():
        raise MixError(f"{path}: mix file not found (mixes live in mixes/<name>.yaml)")
    if not _NAME.match(p.stem):
        raise MixError(f"{path}: the file name is the mix name: letters, digits, '-' or '_'")
    try:
        raw = load_file(p)
    except ConfigError as e:
        raise MixError(str(e)) from None
    try:
        return parse_mix(raw, p.stem)
    except MixError as e:
        raise MixError(f"{path}: {e}") from None


def check_sources(mix: MixConfig, present: list[str], where: str) -> None:
    missing = sorted(set(mix.weights) - set(present))
    if missing:
        raise MixError(f"dataset_mix.{missing[0]}: no source {missing[0]!r} in {where} (sources present: "
                       f"{', '.join(sorted(present)) or 'none'}); fix the name or tokenize a corpus that has it")


def check_tokens(mix: MixConfig, counts: dict, where: str) -> None:
    """A corpus with no tokens (nothing kept upstream: tokenize wrote empty shards and no tokenizer) cannot
    be mixed; a source of the mix with none cannot take a weight."""
    total = sum(int(v.get("tokens") or 0) for v in (counts.get("sources") or {}).values())
    if total <= 0 or not counts.get("tokenizer"):
        raise MixError(f"no tokens to mix: {where}/counts.json holds {total} tokens "
                       f"(the tokenize job found no documents: the pipeline kept none; "
                       f"{os.path.join(os.path.dirname(where.rstrip('/')), 'stats')} says why); loosen the corpus "
                       f"config, then rerun make clean-dedup and make tokenize")
    empty = sorted(k for k in mix.weights if k in counts.get("sources", {}) and int(counts["sources"][k]["tokens"]) <= 0)
    if empty:
        raise MixError(f"dataset_mix.{empty[0]}: source {empty[0]!r} has no tokens in {where}; drop it from the mix")


# --- the reweight: section (pipeline/mix/reweight.py applies it) --------------------------------------------

DEFAULTS = {"step_size": 1.0, "smoothing": 0.1, "min_weight": 0.02}


@dataclass
class ReweightParams:
    step_size: float = setting(DEFAULTS["step_size"], gt=0, why="how far one update moves the weights")
    smoothing: float = setting(DEFAULTS["smoothing"], ge=0, lt=1, why="the share pulled toward uniform")
    min_weight: float = setting(DEFAULTS["min_weight"], ge=0, lt=1, why="every source's floor")

    def as_dict(self) -> dict:
        return {"min_weight": self.min_weight, "smoothing": self.smoothing, "step_size": self.step_size}


def parse_params(raw: Any, where: str = "reweight") -> ReweightParams:
    """The mix file's ``reweight:`` section (absent: the defaults), checked on the shared schema: errors
    name the key (and did-you-mean an unknown one)."""
    try:
        return build(ReweightParams, raw, where)
    except ConfigError as e:
        raise MixError(str(e)) from None


# --- the plan ----------------------------------------------------------------------------------------

@dataclass
class Plan:
    total_tokens: int
    targets: dict[str, int]
    capped: dict[str, bool]
    warnings: list[str]


def _round_to_total(real: dict[str, float], total: int, limits: dict[str, int]) -> dict[str, int]:
    """Integers summing to `total` (largest remainders first, ties by name), none above its limit."""
    out = {k: min(int(math.floor(v)), limits[k]) for k, v in real.items()}
    short = total - sum(out.values())
    for k in sorted(real, key=lambda k: (-(real[k] - math.floor(real[k])), k)):
        if short <= 0:
            break
        if out[k] < limits[k]:
            out[k] += 1
            short -= 1
    return out


def plan_mixture(weights: dict[str, float], available: dict[str, int], total_tokens: int | None,
                 max_epochs: float) -> Plan:
    """Target tokens per source under the repetition cap (see the module doc)."""
    s = sum(weights.values())
    w = {k: weights[k] / s for k in sorted(weights)}
    limit = {k: int(math.floor(max_epochs * available[k])) for k in w}
    warnings: list[str] = []
    if total_tokens is None:
        # The largest budget at which every weight holds without passing the cap.
        total = int(math.floor(min(limit[k] / w[k] for k in w)))
        real = {k: w[k] * total for k in w}
        return Plan(total, _round_to_total(real, total, limit), {k: False for k in w}, warnings)

    total = total_tokens
    capped: dict[str, int] = {}
    while True:
        free = [k for k in w if k not in capped]
        if not free:
            break
        budget = total - sum(capped.values())
        share = sum(w[k] for k in free)
        real = {k: w[k] / share * budget for k in free}
        over = [k for k in free if real[k] > limit[k]]
        if not over:
            break
        for k in over:
            capped[k] = limit[k]
            warnings.append(
                f"{k}: {real[k]:,.0f} target tokens would be {real[k] / available[k]:.2f} epochs of its "
                f"{available[k]:,} tokens, over max_epochs {max_epochs:g}; capped at {limit[k]:,} tokens "
                f"and the other sources rescaled")
    if len(capped) == len(w):
        new_total = sum(capped.values())
        warnings.append(f"every source is capped at max_epochs {max_epochs:g}: total_tokens shrinks from "
                        f"{total:,} to {new_total:,}; add data, raise max_epochs or lower total_tokens")
        return Plan(new_total, dict(capped), {k: True for k in w}, warnings)
    free = [k for k in w if k not in capped]
    budget = total - sum(capped.values())
    share = sum(w[k] for k in free)
    targets = _round_to_total({k: w[k] / share * budget for k in free}, budget, limit)
    targets.update(capped)
    return Plan(total, {k: targets[k] for k in sorted(targets)}, {k: k in capped for k in w}, warnings)


# --- the manifest --------------------------------------------------------------------------------

def _rel(path: str, start: str) -> str:
    return Path(os.path.relpath(path, start)).as_posix()


def build_manifest(mix: MixConfig, counts: dict, tokenized_dir: str, manifest_dir: str) -> dict:
    """The manifest of `mix` over a tokenized corpus (counts.json as written by the tokenize job,
    its shard facts already verified against the files)."""
    present = counts["sources"]
    check_tokens(mix, counts, tokenized_dir)
    check_sources(mix, list(present), tokenized_dir)
    available = {k: int(present[k]["tokens"]) for k in mix.weights}
    plan = plan_mixture(mix.weights, available, mix.total_tokens, mix.max_epochs)
    requested = mix.normalized()
    final_total = sum(plan.targets.values())
    tok = counts["tokenizer"]
    sources = {}
    for k in sorted(mix.weights):
        shards = [{"path": _rel(os.path.join(tokenized_dir, s["path"]), manifest_dir), "sha256": s["sha256"],
                   "documents": int(s["documents"]), "tokens": int(s["tokens"])}
                  for s in present[k]["shards"]]
        sources[k] = {
            "weight": round(plan.targets[k] / final_total, 10) if final_total else 0.0,
            "requested_weight": round(requested[k], 10),
            "available_tokens": available[k],
            "available_documents": int(present[k]["documents"]),
            "target_tokens": plan.targets[k],
            "epochs": round(plan.targets[k] / available[k], 6),
            "capped": plan.capped[k],
            "shards": sorted(shards, key=lambda s: s["path"]),
        }
    manifest = {
        "name": mix.name,
        "seed": mix.seed,
        "max_seq_len": mix.max_seq_len,
        "total_tokens": final_total,
        "requested_total_tokens": mix.total_tokens,
        "max_epochs": mix.max_epochs,
        "tokenizer_sha256": tok["sha256"],
        "tokenizer": {"path": _rel(os.path.join(tokenized_dir, tok["path"]), manifest_dir),
                      **{k: tok[k] for k in ("sha256", "vocab_size", "eos_id", "bos_id", "pad_id", "unk_id")}},
        "warnings": list(mix.warnings) + plan.warnings,
        "sources": sources,
        "version": 1,
        "parent": None,
    }
    manifest["content_hash"] = manifest_content_hash(manifest)
    return manifest


def dumps_manifest(manifest: dict) -> str:
    return json.dumps(manifest, sort_keys=True, indent=2) + "\n"


def write_manifest(manifest: dict, path: str) -> None:
    """Write a manifest atomically: a reader never sees half of one."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(dumps_manifest(manifest))
    os.replace(tmp, path)


def format_table(manifest: dict) -> str:
    """A short human-readable view of a manifest."""
    rows = [("source", "requested", "weight", "available", "target", "epochs", "docs", "shards")]
    for name, s in manifest["sources"].items():
        rows.append((name + (" *" if s["capped"] else ""), f"{s['requested_weight']:.3f}", f"{s['weight']:.3f}",
                     f"{s['available_tokens']:,}", f"{s['target_tokens']:,}", f"{s['epochs']:.2f}",
                     f"{s['available_documents']:,}", str(len(s["shards"]))))
    rows.append(("total", "", "", f"{sum(s['available_tokens'] for s in manifest['sources'].values()):,}",
                 f"{manifest['total_tokens']:,}", "", "", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)).rstrip()
             for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    out = [f"mix {manifest['name']}: {manifest['total_tokens']:,} tokens, max_seq_len {manifest['max_seq_len']}, "
           f"seed {manifest['seed']}, max_epochs {manifest['max_epochs']:g}"] + lines
    if any(s["capped"] for s in manifest["sources"].values()):
        out.append("* capped at max_epochs")
    out += [f"warning: {w}" for w in manifest["warnings"]]
    out.append(f"tokenizer {manifest['tokenizer_sha256'][:12]}  content_hash {manifest['content_hash']}")
    return "\n".join(out)
