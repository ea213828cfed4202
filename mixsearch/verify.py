"""The proposal is checked, not trusted: proxies on the proposal, on the natural mix and on the DoReMi step's mix,
at the swarm's token budget on paired seeds, scored in bits per byte on every target.

The three arms train with one config: the proxy config with validation at the last step (``eval.every`` = the
steps, ``eval.samples_per_source``), so that each run holds out documents of every source and logs
``val_bpb_<source>``. The DoReMi arm is what ``make mix REWEIGHT_FROM=<a run on the natural mix>`` would write:
`pipeline/mix/reweight.py`'s rule (no reference run) applied once to the natural weights with the natural arm's
per-source bits per byte (mean over its seeds). Every difference is paired seed by seed (`ablation/stats.py`), a
t-interval and a verdict: better (the interval below zero), worse, or noise. The proposal's measured bits per byte
(mean and interval over seeds) stand beside what the law predicted.
"""
from __future__ import annotations

import json
import os

import numpy as np

from mixsearch.manifests import mixture_manifest, natural_shares, search_counts
from mixsearch.rows import SwarmError
from mixsearch.spec import SearchSpec

ARMS = ("natural", "doremi", "proposal")
NOISE = "noise"


def eval_config(spec: SearchSpec, steps: int, out: str) -> str:
    """The proxy config with one validation at the last step (per-source bits per byte for the DoReMi step)."""
    from glassbox.schema import load_file

    import yaml

    from train.config import load_config

    cfg = load_config(spec.proxy.config, [])
    per = cfg.train.micro_batch_size * cfg.parallel.dp          # held-out sequences: one micro-batch per rank
    raw = dict(load_file(spec.proxy.config) or {})
    raw["eval"] = {**(raw.get("eval") or {}), "every": steps, "samples_per_source": per}
    path = os.path.join(out, "proxy-eval.yaml")
    os.makedirs(out, exist_ok=True)
    text = yaml.safe_dump(raw, sort_keys=True)
    if not (os.path.isfile(path) and open(path, encoding="utf-8").read() == text):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return path


def last_val(run: str) -> dict:
    from ablation.proxy import read_metrics

    vals = [r for r in read_metrics(run) if r.get("kind") == "val"]
    if not vals:
        raise SwarmError(f"{run}: no validation row; the verify config validates at the last step")
    return vals[-1]


def _verdict(p: dict) -> str:
    v = p["verdict"]
    return NOISE if v == "within noise" else v


def run_verify(spec: SearchSpec) -> dict:
    import dataclasses

    from ablation import stats
    from mixsearch.swarm import Domains, Targets, plan_of, say, train_and_score
    from pipeline.mix.mixture import ReweightParams
    from pipeline.mix.reweight import reweight

    out = os.path.join(spec.out_dir, "verify")
    prop_path = os.path.join(spec.out_dir, "fit", "proposal.json")
    if not os.path.isfile(prop_path):
        raise SwarmError(f"{prop_path}: no proposal yet; run glassbox mix-search {spec.path} (swarm and fit) first")
    with open(prop_path, encoding="utf-8") as fh:
        proposal = json.load(fh)
    counts = search_counts(spec)
    doms = Domains(spec, counts)
    plan = plan_of(spec)
    cfg = eval_config(spec, plan["steps"], out)
    vspec = dataclasses.replace(spec, proxy=dataclasses.replace(spec.proxy, config=cfg))
    tokenizer = os.path.join(spec.data, "tokenized", counts["tokenizer"]["path"])
    targets = Targets(spec, tokenizer, plan["seq_len"])
    sources = sorted(doms.expand({d: 1.0 for d in doms.names}))
    natural = natural_shares(counts, sources)
    mixes = {"natural": natural, "proposal": doms.expand(proposal["weights"])}
    seeds = spec.verify.seeds

    def arm(name: str) -> dict:
        jobs = []
        for s in seeds:
            man = mixture_manifest(spec.data, counts, f"verify-{name}-s{s}", mixes[name], plan["tokens"],
                                   plan["seq_len"], s, spec.proxy.max_epochs, os.path.join(out, "manifests"))
            jobs.append({"name": f"{name}-s{s}", "seed": s, "run": os.path.join(out, "proxies", f"{name}-s{s}"),
                         "manifest": man, "weights": mixes[name]})
        return train_and_score(jobs, vspec, plan, targets, out, None, label=f"verify {name}")

    rows = {"natural": arm("natural")}
    per_source = {src: float(np.mean([last_val(os.path.join(out, "proxies", f"natural-s{s}"))[f"val_bpb_{src}"]
                                      for s in seeds])) for src in sources}
    d = spec.verify.doremi
    mixes["doremi"], _ = reweight(natural, per_source, ReweightParams(step_size=d.step_size, smoothing=d.smoothing,
                                                                      min_weight=d.min_weight))
    mixes["doremi_search"] = doms.collapse(mixes["doremi"])       # over the search's domains, for the report
    rows["doremi"] = arm("doremi")
    rows["proposal"] = arm("proposal")
    measured = {a: {t: [rows[a][f"{a}-s{s}"]["losses"][t] for s in seeds] for t in spec.targets} for a in ARMS}
    res = summarize(measured, list(spec.targets), seeds, spec.verify.confidence, proposal["predicted"])
    res.update(tokens=plan["tokens"], mixtures=mixes,
               doremi_evidence={"val_bpb": per_source, "params": dataclasses.asdict(d)})
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as fh:
        json.dump(res, fh, indent=1, sort_keys=True)
    say(format_verify(res, list(spec.targets)))
    return res


def summarize(measured: dict, targets: list[str], seeds: list[int], conf: float, predicted: dict) -> dict:
    """Paired comparisons of the arms per target (and their mean over targets) and the proposal's predicted bits
    per byte against its measured mean and interval; ``measured``: {arm: {target: [bpb per seed]}}."""
    from ablation import stats

    measured = {a: dict(v) for a, v in measured.items()}
    for a in ARMS:
        measured[a]["mean"] = [float(np.mean([measured[a][t][i] for t in targets])) for i in range(len(seeds))]
    comparisons = {}
    for x, y in (("proposal", "natural"), ("proposal", "doremi"), ("doremi", "natural")):
        comparisons[f"{x} - {y}"] = {}
        for t in targets + ["mean"]:
            p = stats.paired(measured[x][t], measured[y][t], conf).as_dict()
            p["verdict"] = {"better": "better", "worse": "worse"}.get(p["verdict"], NOISE)
            comparisons[f"{x} - {y}"][t] = p
    check = {}
    for t in targets:
        sp = stats.spread(measured["proposal"][t])
        half = stats.t_quantile(conf, sp.n - 1) * sp.std / np.sqrt(sp.n)
        pred = predicted.get(t)
        check[t] = {"predicted": pred, "measured": sp.mean, "low": sp.mean - half, "high": sp.mean + half,
                    "inside": pred is not None and bool(sp.mean - half <= pred <= sp.mean + half)}
    return {"seeds": list(seeds), "confidence": conf, "measured": measured, "comparisons": comparisons,
            "predicted_vs_measured": check, "unit": "bits per byte"}


def format_verify(res: dict, targets: list[str]) -> str:
    conf = int(round(res["confidence"] * 100))
    lines = [f"verify: {len(res['seeds'])} paired seeds per arm, {res['tokens']:,} tokens per proxy; bits per byte, "
             f"difference with its {conf}% paired t-interval"]
    lines.append(f"  {'target':<22} {'comparison':<22} {'diff':>8} {'interval':>20}  verdict")
    for comp, per in res["comparisons"].items():
        for t in targets + ["mean"]:
            p = per[t]
            lines.append(f"  {t:<22} {comp:<22} {p['diff']:>+8.4f} {'[{:+.4f}, {:+.4f}]'.format(p['low'], p['high']):>20}"
                         f"  {p['verdict']}")
    lines.append("proposal, predicted vs measured (bits per byte):")
    for t in targets:
        c = res["predicted_vs_measured"][t]
        lines.append(f"  {t:<22} predicted {c['predicted']:.4f}  measured {c['measured']:.4f} "
                     f"[{c['low']:.4f}, {c['high']:.4f}]" + ("" if c["inside"] else "  (outside)"))
    return "\n".join(lines)
