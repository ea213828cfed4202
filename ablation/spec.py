"""The ablation spec: one YAML file, checked whole before any Spark or trainer work.

    name: heuristics                       # output in ablations/<name>/ (or out: DIR)
    base: examples/sample.yaml             # the base pipeline config
    variants:                              # overrides of the base, dotted keys; null removes a key
      null_control: {seeds: [3, 4], about: "the base again, other seeds"}
      no_heuristics: {set: {clean.rules: []}}
    tokenizer: {path: null}                # null: trained once on the base corpus; or a sentencepiece .model
    proxy: {config: train/configs/proxy.yaml, tokens: 200000}
    seeds: [1, 2]
    evaluations:
      wikitext: {paths: [quality_models/data/wikitext-2-valid.txt], format: text}

Paths are relative to the directory the command runs from, as in pipeline configs. Every variant's resolved
pipeline config is built here with the pipeline's own checker, so a mistyped override is named with the
variant, the key and its did-you-mean before anything runs.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glassbox.schema import ConfigError, build, load_file, setting, unknown_key

BASE = "base"
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def _name_problem(name: str) -> str | None:
    return None if _NAME.match(name) else "use letters, digits, '-' or '_' (it names a folder)"


def _seeds_problem(seeds: list) -> str | None:
    if len(seeds) < 2:
        return f"at least 2 seeds are needed for a spread and a paired interval, got {len(seeds)}"
    if len(set(seeds)) != len(seeds):
        return f"seeds repeat: {seeds}"
    return None


@dataclass
class TokenizerSpec:
    # a sentencepiece model used by every variant; null: trained once on the base corpus (its tokenize:
    # settings) and then given to every other variant
    path: str | None = None


@dataclass
class ProxySpec:
    config: str = setting(why="a trainer config (train/configs/); data.seq_len must be set")
    tokens: int = setting(ge=1, why="tokens trained by every proxy")
    # the mixture's repetition cap: high, so that every proxy trains on exactly the budget; the report says
    # how many epochs of each source that took
    max_epochs: float = setting(1000.0, gt=0)
    # proxies trained at the same time: on a CPU host, up to its cores (each then gets cores / parallel
    # threads); a tiny proxy spends much of its time starting up, which overlaps well
    parallel: int = setting(1, ge=1, le=64)


@dataclass
class EvalSpec:
    paths: list[str] = setting(default_factory=list, check=lambda v: None if v else "name at least one file")
    format: str = setting("text", choices=("text", "jsonl"))   # text: one document per non-empty line
    text_field: str = "text"
    max_tokens: int = setting(32768, ge=64, why="held-out tokens scored per domain")


@dataclass
class VariantSpec:
    set: dict = setting(default_factory=dict)     # dotted pipeline-config key -> value (null removes it)
    seeds: list[int] | None = setting(None, ge=0, check=_seeds_problem)  # default: the spec's seeds
    about: str = ""
    # other variants this one is also compared to, paired seed by seed like the base (e.g. a filter against a
    # random drop of the same retention: better documents, or only fewer?)
    against: list[str] = setting(default_factory=list)
    # a random drop drawn again for each seed (score.random_seed = the proxy's seed, one corpus per seed): the
    # control's interval then holds the variance of the draw, not only of the proxies' training
    draw_per_seed: bool = False


@dataclass
class HarnessSpec:
    tasks: list[str] = setting(default_factory=list)
    # lm-eval tasks mean nothing on a proxy of a few hundred thousand parameters: they run only above this
    min_params: int = setting(100_000_000, ge=0)
    limit: int | None = setting(None, ge=1)          # items per task (all when null)


@dataclass
class AblationSpec:
    name: str = setting(check=_name_problem)
    base: str = setting(why="the base pipeline config every variant overrides")
    proxy: ProxySpec = setting()
    seeds: list[int] = setting(ge=0, check=_seeds_problem)
    evaluations: dict = setting(check=lambda v: None if v else "name at least one held-out text set")
    variants: dict = setting(default_factory=dict)
    tokenizer: TokenizerSpec = setting(default_factory=TokenizerSpec)
    harness: HarnessSpec = setting(default_factory=HarnessSpec)
    confidence: float = setting(0.95, gt=0.5, lt=1, why="of the paired interval behind each verdict")
    out: str | None = None                        # default: ablations/<name>
    path: str = field(default="<spec>", init=False)


@dataclass
class Variant:
    name: str
    overrides: dict
    seeds: list[int]
    about: str
    raw: dict                                     # the resolved pipeline config, as parsed YAML
    config: Any                                   # pipeline.config.PipelineConfig
    against: list[str] = field(default_factory=list)
    draw_per_seed: bool = False


def apply_overrides(raw: dict, overrides: dict, where: str) -> dict:
    """A copy of the parsed base config with dotted keys set (null removes the key)."""
    out = copy.deepcopy(raw)
    for dotted, value in overrides.items():
        parts = str(dotted).split(".")
        node = out
        for i, part in enumerate(parts[:-1]):
            nxt = node.get(part)
            if nxt is None:
                nxt = node[part] = {}
            if not isinstance(nxt, dict):
                raise ConfigError(f"{where}.{dotted}: {'.'.join(parts[:i + 1])} is {nxt!r}, not a section")
            node = nxt
        if value is None:
            if parts[-1] not in node:
                raise ConfigError(f"{where}.{dotted}: null removes a key, but the base config has no "
                                  f"{dotted}")
            del node[parts[-1]]
        else:
            node[parts[-1]] = copy.deepcopy(value)
    return out


def resolve_variant(name: str, spec: VariantSpec, base_raw: dict, default_seeds: list[int],
                    tokenizer: str | None) -> Variant:
    """The variant's pipeline config, checked by the pipeline's own parser (errors name the variant)."""
    from pipeline.config import parse_config

    where = f"variants.{name}.set" if name != BASE else "base"
    raw = apply_overrides(base_raw, spec.set, where)
    if tokenizer:
        raw.setdefault("tokenize", {})
        raw["tokenize"] = {**(raw["tokenize"] or {}), "tokenizer": tokenizer}
    try:
        cfg = parse_config(raw, f"{where}")
    except ConfigError as e:
        hint = " (an override names a key of the pipeline config: section.key, e.g. clean.rules)" \
            if spec.set and name != BASE else ""
        raise ConfigError(f"{where}: {e}{hint}") from None
    if spec.draw_per_seed and not cfg.score.random_drop:
        raise ConfigError(f"variants.{name}.draw_per_seed: the variant drops nothing at random; set "
                          f"score.random_drop (e.g. 0.5) in variants.{name}.set, or remove draw_per_seed")
    return Variant(name, dict(spec.set), list(spec.seeds or default_seeds), spec.about, raw, cfg, list(spec.against),
                   spec.draw_per_seed)


def corpus_variants(v: Variant, base_raw: dict, tokenizer: str | None = None) -> dict[int, Variant]:
    """Seed -> the variant whose config builds that seed's corpus: the variant itself for every seed, or, where it
    draws its random drop per seed, the variant with score.random_seed set to the seed."""
    if not v.draw_per_seed:
        return {seed: v for seed in v.seeds}
    return {seed: resolve_variant(v.name, VariantSpec(set={**v.overrides, "score.random_seed": seed}, seeds=[seed],
                                                      about=v.about), base_raw, [seed], tokenizer)
            for seed in v.seeds}


REQUIRED_HELP = {
    "name": "name: NAME (the output folder ablations/NAME)",
    "base": "base: examples/sample.yaml (the base pipeline config)",
    "proxy": "proxy: {config: train/configs/proxy.yaml, tokens: 200000}",
    "proxy.config": "proxy.config: train/configs/proxy.yaml",
    "proxy.tokens": "proxy.tokens: 200000 (tokens per proxy)",
    "seeds": "seeds: [1, 2]",
    "evaluations": "evaluations: {wikitext: {paths: [FILE.txt], format: text}}",
}


def _require(raw: Any) -> None:
    """A missing required key, named with an example of it (the dataclasses cannot say this themselves)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"the file must hold a mapping of settings, got {type(raw).__name__}")
    for key in ("name", "base", "proxy", "seeds", "evaluations"):
        if raw.get(key) is None:
            raise ConfigError(f"{key}: missing; add {REQUIRED_HELP[key]}")
    if isinstance(raw["proxy"], dict):
        for key in ("config", "tokens"):
            if raw["proxy"].get(key) is None:
                raise ConfigError(f"proxy.{key}: missing; add {REQUIRED_HELP['proxy.' + key]}")


def parse_spec(raw: Any, path: str = "<spec>") -> AblationSpec:
    _require(raw)
    spec = build(AblationSpec, raw)
    spec.path = path
    variants = {}
    for name, v in (spec.variants or {}).items():
        if not isinstance(name, str) or _name_problem(name):
            raise ConfigError(f"variants.{name}: a variant name must be letters, digits, '-' or '_'")
        if name == BASE:
            raise ConfigError(f"variants.{BASE}: '{BASE}' is the base config itself; name the variant otherwise")
        variants[name] = build(VariantSpec, v, f"variants.{name}")
        n_seeds = len(variants[name].seeds or spec.seeds)
        if n_seeds != len(spec.seeds):
            raise ConfigError(f"variants.{name}.seeds: {n_seeds} seeds, the base has {len(spec.seeds)}; the "
                              "comparison pairs them one to one")
    if not variants:
        raise ConfigError("variants: name at least one variant (e.g. no_heuristics: {set: {clean.rules: []}})")
    for name, v in variants.items():
        for other in v.against:
            if other not in variants or other == name:
                raise ConfigError(f"variants.{name}.against: {other!r} is not another variant of this spec "
                                  f"(variants: {', '.join(variants)}); every variant is compared to the base already")
    spec.variants = variants
    spec.evaluations = {}
    for name, e in (raw.get("evaluations") or {}).items():
        if not isinstance(name, str) or _name_problem(name):
            raise ConfigError(f"evaluations.{name}: a domain name must be letters, digits, '-' or '_'")
        spec.evaluations[name] = build(EvalSpec, e, f"evaluations.{name}")
        for p in spec.evaluations[name].paths:
            if not Path(p).is_file():
                raise ConfigError(f"evaluations.{name}.paths: no file {p} (paths are relative to where the "
                                  "command runs)")
    for key, p in (("base", spec.base), ("proxy.config", spec.proxy.config), ("tokenizer.path", spec.tokenizer.path)):
        if p is not None and not Path(p).is_file():
            raise ConfigError(f"{key}: no file {p} (paths are relative to where the command runs)")
    return spec


def load_spec(path: str) -> AblationSpec:
    raw = load_file(path)
    if isinstance(raw, dict):
        known = [f for f in AblationSpec.__dataclass_fields__ if f != "path"]
        for k in raw:
            if k not in known:
                raise ConfigError(f"{path}: {unknown_key(str(k), k, known)}")
    try:
        return parse_spec(raw, path)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def proxy_plan(spec: AblationSpec) -> dict:
    """Steps and tokens of every proxy from the trainer config: budget / (global batch x seq_len), checked by
    the trainer's own config checker with the overrides the proxies will get."""
    from train.config import load_config

    cfg = load_config(spec.proxy.config, [f"train.seed={spec.seeds[0]}"])
    seq_len, gbs = cfg.data.seq_len, cfg.train.global_batch_size
    if not seq_len:
        raise ConfigError(f"proxy.config: {spec.proxy.config} leaves data.seq_len null; set it, so that the "
                          "steps of every proxy follow from the token budget")
    per_step = gbs * seq_len
    steps = spec.proxy.tokens // per_step
    if steps < 1:
        raise ConfigError(f"proxy.tokens: {spec.proxy.tokens} is less than one step of {per_step} tokens "
                          f"(global_batch_size {gbs} x seq_len {seq_len})")
    return {"steps": steps, "tokens_per_step": per_step, "tokens": steps * per_step, "seq_len": seq_len,
            "global_batch_size": gbs, "world_size": cfg.world_size, "params": None}


def variants_of(spec: AblationSpec, tokenizer: str | None = None) -> list[Variant]:
    """The base and every variant, resolved (`tokenizer`: the fixed model, once it exists)."""
    base_raw = load_file(spec.base)
    if not isinstance(base_raw, dict):
        raise ConfigError(f"base: {spec.base} does not hold a pipeline config mapping")
    tok = tokenizer or spec.tokenizer.path
    out = [resolve_variant(BASE, VariantSpec(), base_raw, spec.seeds, tok)]
    out += [resolve_variant(n, v, base_raw, spec.seeds, tok) for n, v in spec.variants.items()]
    return out


def check(path: str) -> tuple[AblationSpec, list[Variant], dict]:
    """Everything a run needs to know is right, without running anything: (spec, variants, proxy plan)."""
    spec = load_spec(path)
    try:
        variants = variants_of(spec)
        plan = proxy_plan(spec)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    return spec, variants, plan
