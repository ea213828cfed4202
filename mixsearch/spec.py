"""The mixture-search spec: one YAML file, checked whole before any proxy trains.

    name: sample                              # output in mix-searches/<name>/ (or out: DIR)
    data: data/sample                         # a tokenized DATA folder (make tokenize)
    domains: [books, web, zh, cc]             # default: every source with tokens
    swarm: {n: 20, concentration: 8, seed: 0} # n mixtures ~ Dirichlet(concentration x natural token shares)
    proxy: {config: examples/ablate/proxy.yaml, tokens: 163840, parallel: 2, max_epochs: 1000}
    targets:                                  # held-out text, one target domain each (as ablate's evaluations)
      shakespeare: {paths: [...], format: jsonl}
    fit: {objective: mean, min_weight: 0.0, kl: 0.0, budget: 819200, max_epochs: 4, mix: mixes/sample.yaml}
    verify: {seeds: [11, 12, 13], doremi: {step_size: 1.0, smoothing: 0.1, min_weight: 0.02}}
    split: {web: {column: quality_en, quantiles: 5, unscored: q1}}   # optional: buckets as domains (split.py)
    frozen: {name: old, from: mix-searches/<earlier>/fit/proposal.json}   # optional: mixture reuse

Paths are relative to the directory the command runs from. Every proxy trains ``proxy.tokens`` tokens of its own
mixture with ``proxy.config`` (ablate's machinery: `ablation/proxy.py`); seeds are ``swarm.seed + i``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ablation.spec import EvalSpec, ProxySpec, _name_problem, _seeds_problem
from glassbox.schema import ConfigError, build, load_file, setting, unknown_key


@dataclass
class SwarmSpec:
    n: int = setting(ge=2, why="proxies in the swarm; Olmix uses about 5 x the number of domains")
    concentration: float = setting(8.0, gt=0, why="Dirichlet concentration around the natural shares: higher is "
                                                   "closer to the natural mix")
    seed: int = setting(0, ge=0)
    min_share: float = setting(0.0, ge=0, lt=1, why="a drawn share below it is raised to it (then renormalised)")


@dataclass
class FitSpec:
    objective: str = "mean"                    # mean, or a JSON file {target: weight}
    min_weight: float = setting(0.0, ge=0, lt=1)
    kl: float = setting(0.0, ge=0, why="pull toward the natural mix")
    budget: int | None = setting(None, ge=1, why="tokens of the run the proposal is for (the repetition cap's "
                                                 "budget); null: the proxies' tokens")
    max_epochs: float = setting(4.0, gt=0)
    kind: str = setting("auto", choices=("auto", "loglinear", "linear", "lightgbm"))
    mix: str | None = None                     # the mix file whose manifest gets the proposal as its next version


@dataclass
class DoremiSpec:
    step_size: float = setting(1.0, gt=0)
    smoothing: float = setting(0.1, ge=0, le=1)
    min_weight: float = setting(0.02, ge=0, lt=1)


@dataclass
class VerifySpec:
    seeds: list[int] = setting(default_factory=lambda: [101, 102, 103], ge=0, check=_seeds_problem)
    doremi: DoremiSpec = setting(default_factory=DoremiSpec)
    confidence: float = setting(0.95, gt=0.5, lt=1)


@dataclass
class SearchSpec:
    name: str = setting(check=_name_problem)
    data: str = setting(why="a tokenized DATA folder (make tokenize)")
    swarm: SwarmSpec = setting()
    proxy: ProxySpec = setting()
    targets: dict = setting(check=lambda v: None if v else "name at least one held-out text set")
    domains: list[str] | None = None
    fit: FitSpec = setting(default_factory=FitSpec)
    verify: VerifySpec = setting(default_factory=VerifySpec)
    frozen: dict | None = None                 # reuse: {name: virtual domain, weights: {domain: share}} (reuse.py)
    split: dict | None = None                  # {source: {column, quantiles | edges, ...}}: buckets as domains (split.py)
    out: str | None = None                     # default: mix-searches/<name>
    path: str = field(default="<spec>", init=False)
    split_plans: dict = field(default_factory=dict, init=False)   # {source: plan_source(...)} once parsed

    @property
    def out_dir(self) -> str:
        return self.out or os.path.join("mix-searches", self.name)


def parse_spec(raw: Any, path: str = "<spec>") -> SearchSpec:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the file must hold a mapping of settings")
    known = [f for f in SearchSpec.__dataclass_fields__ if f != "path"]
    for k in raw:
        if k not in known:
            raise ConfigError(f"{path}: {unknown_key(str(k), k, known)}")
    for key in ("name", "data", "swarm", "proxy", "targets"):
        if raw.get(key) is None:
            raise ConfigError(f"{path}: {key}: missing")
    try:
        spec = build(SearchSpec, raw)
        spec.targets = {}
        for name, e in (raw.get("targets") or {}).items():
            if not isinstance(name, str) or _name_problem(name):
                raise ConfigError(f"targets.{name}: a target name must be letters, digits, '-' or '_'")
            spec.targets[name] = build(EvalSpec, e, f"targets.{name}")
            for p in spec.targets[name].paths:
                if not Path(p).is_file():
                    raise ConfigError(f"targets.{name}.paths: no file {p} (paths are relative to where the command runs)")
        counts_path = os.path.join(spec.data, "tokenized", "counts.json")
        if not os.path.isfile(counts_path):
            raise ConfigError(f"data: {counts_path} not found; run `make tokenize DATA={spec.data}` first")
        if not Path(spec.proxy.config).is_file():
            raise ConfigError(f"proxy.config: no file {spec.proxy.config}")
        with open(counts_path, encoding="utf-8") as fh:
            counts = json.load(fh)
        present = sorted(s for s, v in counts["sources"].items() if int(v["tokens"]) > 0)
        if spec.domains is None:
            spec.domains = present
        for d in spec.domains:
            if d not in counts["sources"]:
                raise ConfigError(f"domains: no source {d!r} in {counts_path} (sources: {', '.join(present)})")
            if int(counts["sources"][d]["tokens"]) <= 0:
                raise ConfigError(f"domains: source {d!r} has no tokens in {counts_path}")
        names = set(counts["sources"])
        if spec.split is not None:
            from mixsearch.split import SEP, bucket_domains, plan_split

            clash = sorted(s for s in counts["sources"] if SEP in s)
            if clash:
                raise ConfigError(f"split: the corpus has a source named {clash[0]!r}; '{SEP}' marks a bucket")
            for s in spec.split or {}:
                if s in counts["sources"] and s not in spec.domains:
                    raise ConfigError(f"split.{s}: {s!r} is not one of the search's domains "
                                      f"({', '.join(spec.domains)})")
            spec.split_plans = plan_split(spec.data, counts, spec.split)
            buckets = bucket_domains(spec.split_plans)
            spec.domains = [b for d in spec.domains for b in buckets.get(d, [d])]
            names |= {b for bs in buckets.values() for b in bs}
        if len(spec.domains) < 2:
            raise ConfigError("domains: a mixture needs at least 2 domains")
        if spec.frozen is not None:
            f = spec.frozen
            if isinstance(f, dict) and f.get("from") and "weights" not in f:
                try:
                    with open(f["from"], encoding="utf-8") as fh:
                        got = json.load(fh)
                except (OSError, ValueError) as e:
                    raise ConfigError(f"frozen.from: cannot read {f['from']} ({e}); name an earlier search's "
                                      "fit/proposal.json") from None
                f = spec.frozen = {"name": f.get("name"), "from": f["from"],
                                   "weights": dict(got.get("sources") or got.get("weights") or {})}
            if not isinstance(f, dict) or not isinstance(f.get("weights"), dict) or not f.get("name") \
                    or not f["weights"]:
                raise ConfigError("frozen: expected {name: <virtual domain>, weights: {domain: share}} or "
                                  "{name: ..., from: <an earlier search>/fit/proposal.json}")
            if f["name"] in names:
                raise ConfigError(f"frozen.name: {f['name']!r} is a source of the corpus; name the virtual domain "
                                  "otherwise")
            # every named domain is a member, a zero share too: the virtual domain replaces them all in the search
            f["weights"] = {k: float(v) for k, v in f["weights"].items()}
            if any(v < 0 for v in f["weights"].values()) or sum(f["weights"].values()) <= 0:
                raise ConfigError("frozen.weights: shares must be non-negative and not all zero")
            for d in f["weights"]:
                if d not in names:
                    raise ConfigError(f"frozen.weights.{d}: no source {d!r} in {counts_path}")
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    spec.path = path
    return spec


def load_spec(path: str) -> SearchSpec:
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: no such spec file")
    return parse_spec(load_file(path), path)
