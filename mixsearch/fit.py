"""`glassbox mix-search fit SWARM.jsonl --out DIR`: a mixing law per target from any swarm, and the proposal.

    glassbox mix-search fit SWARM.jsonl --out DIR [--targets a,b] [--objective mean|weights FILE]
        [--available FILE] [--budget TOKENS] [--max-epochs K] [--min-weight W] [--kl LAMBDA]
        [--kind loglinear|linear|lightgbm|auto] [--data DATA --mix MIX.yaml]

Writes ``DIR/proposal.json``:
    {"weights": {...}, "predicted": {target: bpb}, "objective": ..., "natural": {...},
     "fit": {"kind", "cv_spearman", "per_target": {target: {"kind", "params", "cv": {kind: {spearman, mae}}}}},
     "constraints": {"min_weight", "max_epochs", "budget", "available", "caps", "binding": {domain: which}}}
and ``DIR/fit.json`` (every row's measured loss and its held-out prediction, per target). With ``--data`` and
``--mix`` it also writes the manifest's next version in DATA/manifests (parent: the highest version there; the
swarm's path and sha256, the fit and the proposal on its ``mix_search`` record), as the DoReMi step does.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import numpy as np

from mixsearch import law
from mixsearch.propose import binding, bounds, minimise
from mixsearch.rows import Swarm, SwarmError, load_available, load_swarm

CHOOSE_MARGIN = 0.05      # another learner replaces the log-linear law only if its mean cv rank correlation is higher by this


def parse_objective(arg: str | None, targets: list[str]) -> np.ndarray:
    if not arg or arg == "mean":
        return np.full(len(targets), 1.0 / len(targets))
    path = arg[len("weights="):] if arg.startswith("weights=") else arg
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
    except (OSError, ValueError) as e:
        raise SwarmError(f"--objective {arg}: expected 'mean' or a JSON file {{target: weight}} ({e})") from None
    if not isinstance(obj, dict):
        raise SwarmError(f"--objective {path}: expected a JSON object {{target: weight}}")
    unknown = sorted(set(obj) - set(targets))
    if unknown:
        raise SwarmError(f"--objective {path}: {unknown[0]!r} is not a target being fitted ({', '.join(targets)})")
    a = np.array([float(obj.get(t, 0.0)) for t in targets])
    if np.any(~np.isfinite(a)) or np.any(a < 0) or a.sum() <= 0:
        raise SwarmError(f"--objective {path}: weights must be non-negative numbers, not all zero")
    return a / a.sum()


def fit_all(sw: Swarm, kind: str = "auto") -> tuple[str, dict, dict]:
    """(chosen kind, {target: fitted model}, fit record). Every available learner is cross-validated."""
    kinds = law.available_kinds()
    if kind != "auto" and kind not in kinds:
        raise SwarmError(f"--kind {kind}: not available (available: {', '.join(kinds)}"
                         + ("; lightgbm needs `pip install lightgbm`" if kind == "lightgbm" else "") + ")")
    per_target: dict[str, dict] = {}
    for ti, t in enumerate(sw.targets):
        y = sw.losses[:, ti]
        per_target[t] = {"cv": {k: law.cross_validate(k, sw.weights, y) for k in kinds}}
    mean_cv = {k: float(np.nanmean([per_target[t]["cv"][k]["spearman"] for t in sw.targets])) for k in kinds}
    chosen = kind
    if kind == "auto":
        chosen = "loglinear"
        rival = max((k for k in kinds if k != "loglinear"), key=lambda k: mean_cv[k], default=None)
        if rival and mean_cv[rival] > mean_cv["loglinear"] + CHOOSE_MARGIN:
            chosen = rival
    models = {}
    for ti, t in enumerate(sw.targets):
        m = law.FITTERS[chosen](sw.weights, sw.losses[:, ti])
        models[t] = m
        per_target[t].update(kind=chosen, params=m.params(), cv_spearman=per_target[t]["cv"][chosen]["spearman"],
                             fitted=[float(x) for x in m.predict(sw.weights)])
    rec = {"kind": chosen, "cv_spearman": mean_cv[chosen], "cv_spearman_by_kind": mean_cv,
           "cv_scheme": per_target[sw.targets[0]]["cv"][chosen]["scheme"], "rows": len(sw.runs),
           "domains": sw.domains, "targets": sw.targets,
           "lightgbm": "measured" if law.lightgbm_available() else "not installed (pip install lightgbm to measure it)",
           "per_target": per_target}
    return chosen, models, rec


def propose(sw: Swarm, models: dict, objective: np.ndarray, *, available: dict[str, int] | None = None,
            budget: int | None = None, max_epochs: float | None = 4.0, min_weight: float = 0.0, kl: float = 0.0,
            seed: int = 0) -> dict:
    b = bounds(sw.domains, min_weight, available, budget, max_epochs)
    if available:
        tot = sum(available[d] for d in sw.domains)
        natural = np.array([available[d] / tot for d in sw.domains])
    else:
        natural = sw.weights.mean(axis=0)
    natural = np.clip(natural, 1e-9, None)
    natural /= natural.sum()
    order = [models[t] for t in sw.targets]
    row_obj = sw.losses @ objective
    starts = [natural, np.full(len(sw.domains), 1 / len(sw.domains)), sw.weights[int(np.argmin(row_obj))]]
    r, fval = minimise(order, objective, b, starts, natural=natural, kl=kl, seed=seed)
    pred = {t: float(models[t].predict(r[None, :])[0]) for t in sw.targets}
    caps = {d: (float(b.hi[j]) if b.why_hi[j] else None) for j, d in enumerate(sw.domains)}
    return {
        "weights": {d: round(float(v), 8) for d, v in zip(sw.domains, r)},
        "predicted": pred,
        "objective": {"value": fval, "weights": {t: float(a) for t, a in zip(sw.targets, objective)},
                      "kl": kl},
        "natural": {d: float(v) for d, v in zip(sw.domains, natural)},
        "best_swarm_row": {"run": sw.runs[int(np.argmin(row_obj))], "objective": float(row_obj.min())},
        "constraints": {"min_weight": min_weight, "max_epochs": max_epochs if budget else None, "budget": budget,
                        "available": {d: available[d] for d in sw.domains} if available else None,
                        "caps": caps, "binding": binding(r, b),
                        "epochs": ({d: float(r[j] * budget / available[d]) if available[d] else None
                                    for j, d in enumerate(sw.domains)} if budget and available else None)},
    }


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_json(path: str, obj) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def next_manifest(data: str, mix_path: str, proposal: dict, swarm_path: str, fit_rec: dict,
                  counts: dict | None = None) -> tuple[str, int, bool]:
    """The manifest's next version in DATA/manifests with the proposal's weights: (path, version, already there).
    ``counts``: the corpus as the search saw it (a split's buckets in their sources' place, their shards in the
    search's folder), default the DATA folder's own."""
    import dataclasses

    from mixsearch.manifests import load_counts, write_manifest
    from pipeline.mix.mixture import build_manifest, load_mix
    from pipeline.mix.reweight import place_version, versions

    mix = load_mix(mix_path)
    counts = counts or load_counts(data)
    tokenized, man_dir = os.path.join(data, "tokenized"), os.path.join(data, "manifests")
    have = versions(man_dir, mix.name)
    if not have:
        raise SwarmError(f"--data {data}: no manifests/{mix.name}.json to be the parent; run make mix first")
    parent = json.loads(have[max(have)].read_text(encoding="utf-8"))
    weights = {d: w for d, w in proposal["weights"].items() if w > 0}
    unknown = sorted(set(weights) - set(counts["sources"]))
    if unknown:
        raise SwarmError(f"--data {data}: the proposal names {unknown[0]!r}, which is not a source of its corpus "
                         "(a bucket or virtual domain has no manifest of its own)")
    budget = proposal["constraints"]["budget"] or mix.total_tokens
    mx = proposal["constraints"]["max_epochs"] or mix.max_epochs
    new_mix = dataclasses.replace(mix, weights=weights, total_tokens=budget, max_epochs=mx, warnings=[])
    manifest = build_manifest(new_mix, counts, tokenized, man_dir)
    manifest["parent"] = parent["content_hash"]
    manifest["mix_search"] = {
        "rule": "the minimum of a mixing law fitted to a proxy swarm, under the repetition cap",
        "swarm": {"path": os.path.normpath(swarm_path), "sha256": sha256_of(swarm_path), "rows": fit_rec["rows"]},
        "fit": {k: fit_rec[k] for k in ("kind", "cv_spearman", "cv_scheme", "targets", "domains")},
        "proposal": {k: proposal[k] for k in ("weights", "predicted", "objective")},
        "constraints": proposal["constraints"],
        "parent_version": parent.get("version", 1),
        "old_weights": {k: v["requested_weight"] for k, v in sorted(parent["sources"].items())},
    }
    manifest, path, again = place_version(manifest, man_dir)
    if not again:
        write_manifest(manifest, str(path))
    return str(path), manifest["version"], again


def run_fit(swarm_path: str, out: str, *, targets=None, objective=None, available=None, budget=None,
            max_epochs=4.0, min_weight=0.0, kl=0.0, kind="auto", data=None, mix=None, counts=None) -> dict:
    avail = load_available(available) if available else None
    sw = load_swarm(swarm_path, targets, list(avail) if avail else None)
    a = parse_objective(objective, sw.targets)
    chosen, models, rec = fit_all(sw, kind)
    prop = propose(sw, models, a, available=avail, budget=budget, max_epochs=max_epochs, min_weight=min_weight, kl=kl)
    prop["fit"] = {"kind": chosen, "cv_spearman": rec["cv_spearman"], "cv_spearman_by_kind": rec["cv_spearman_by_kind"],
                   "cv_scheme": rec["cv_scheme"],
                   "per_target": {t: {"kind": v["kind"], "cv_spearman": v["cv_spearman"], "params": v["params"],
                                      "cv": {k: {"spearman": c["spearman"], "mae": c["mae"]} for k, c in v["cv"].items()}}
                                  for t, v in rec["per_target"].items()}}
    if not rec["cv_spearman"] > 0:
        prop["fit"]["warning"] = (
            f"the fit's {rec['cv_scheme']} rank correlation is {rec['cv_spearman']:.3f}: no learner ranks the swarm's "
            "rows better than chance, so the proposal follows the constraints, not the swarm; trust verify, not "
            "the prediction, and draw rows that vary the domains more (more rows, swarm.concentration, "
            "swarm.min_share)")
    prop["swarm"] = {"path": os.path.normpath(swarm_path), "rows": len(sw.runs), "domains": sw.domains}
    rows = [{"run": sw.runs[i], "weights": dict(zip(sw.domains, map(float, sw.weights[i]))),
             "measured": dict(zip(sw.targets, map(float, sw.losses[i]))),
             "cv_predicted": {t: rec["per_target"][t]["cv"][chosen]["predicted"][i] for t in sw.targets},
             "fitted": {t: rec["per_target"][t]["fitted"][i] for t in sw.targets}} for i in range(len(sw.runs))]
    write_json(os.path.join(out, "fit.json"), {"fit": {k: v for k, v in rec.items() if k != "per_target"}, "rows": rows})
    if data and mix:
        path, version, again = next_manifest(data, mix, prop, swarm_path, rec, counts)
        prop["manifest"] = {"path": path, "version": version, "already_there": again}
    elif data or mix:
        raise SwarmError("--data and --mix go together: the corpus and the mix file whose next version to write")
    write_json(os.path.join(out, "proposal.json"), prop)
    return prop


def format_proposal(prop: dict) -> str:
    c = prop["constraints"]
    lines = [f"fit: {prop['fit']['kind']} law per target, {prop['fit']['cv_scheme']} rank correlation "
             f"{prop['fit']['cv_spearman']:.3f} (" + ", ".join(f"{k} {v:.3f}" for k, v in
                                                             prop['fit']['cv_spearman_by_kind'].items()) + ")"]
    if prop["fit"].get("warning"):
        lines.append(f"warning: {prop['fit']['warning']}")
    lines.append(f"  {'domain':<20} {'natural':>8} {'proposed':>9}  bound")
    for d, w in prop["weights"].items():
        lines.append(f"  {d:<20} {prop['natural'][d]:>8.4f} {w:>9.4f}  {c['binding'].get(d, '')}")
    lines.append("predicted: " + ", ".join(f"{t} {v:.4f}" for t, v in prop["predicted"].items()))
    if c["budget"]:
        lines.append(f"constraints: budget {c['budget']:,} tokens, max_epochs {c['max_epochs']:g}, min_weight "
                     f"{c['min_weight']:g}")
    if "manifest" in prop:
        m = prop["manifest"]
        lines.append(f"manifest version {m['version']}: {m['path']}"
                     + (" (already there; left as it is)" if m["already_there"] else ""))
    return "\n".join(lines)


def parse_tokens_arg(s: str | None) -> int | None:
    if s is None:
        return None
    from pipeline.mix.mixture import parse_tokens

    try:
        return parse_tokens("--budget", s)
    except ValueError as e:
        raise SwarmError(str(e)) from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="glassbox mix-search fit", description=__doc__.split("\n\n")[0])
    ap.add_argument("swarm")
    ap.add_argument("--out", required=True)
    ap.add_argument("--targets", default=None, help="comma-separated targets (default: all)")
    ap.add_argument("--objective", default="mean", help="mean, or a JSON file {target: weight}")
    ap.add_argument("--available", default=None, help="a DATA folder, its tokenized/counts.json, or {domain: tokens}")
    ap.add_argument("--budget", default=None, help="training tokens the proposal is for (e.g. 2B)")
    ap.add_argument("--max-epochs", type=float, default=4.0)
    ap.add_argument("--min-weight", type=float, default=0.0)
    ap.add_argument("--kl", type=float, default=0.0, help="pull toward the natural mix (KL weight)")
    ap.add_argument("--kind", default="auto", choices=["auto", *law.KINDS])
    ap.add_argument("--data", default=None, help="write the manifest's next version in this DATA folder")
    ap.add_argument("--mix", default=None, help="the mix file of that manifest (mixes/<name>.yaml)")
    args = ap.parse_args(argv)
    try:
        prop = run_fit(args.swarm, args.out, targets=args.targets.split(",") if args.targets else None,
                       objective=args.objective, available=args.available, budget=parse_tokens_arg(args.budget),
                       max_epochs=args.max_epochs, min_weight=args.min_weight, kl=args.kl, kind=args.kind,
                       data=args.data, mix=args.mix)
    except (SwarmError, ValueError) as e:
        print(f"glassbox mix-search fit: {e}", file=sys.stderr)
        return 2
    print(format_proposal(prop))
    print(f"wrote {os.path.join(args.out, 'proposal.json')}")
    return 0
