"""Re-weighting a mixture from what validation showed: the evidence, the rule, the next manifest version.

    make mix MIX=mixes/<name>.yaml DATA=<d> REWEIGHT_FROM=runs/<r> [REFERENCE=runs/<ref>] [STEP=N]

The evidence is the per-source validation loss ``L_i`` in bits per byte (``val_bpb_<source>`` in the run's
metrics.jsonl; a record without it, from another trainer or an older run, falls back to ``val_loss_<source>`` in
nats per token, and the record says which) at one validation step (the last, or STEP), and with a reference run
its losses ``R_i`` on the same sources (its last validation), in the same unit. Bits per byte, because the rule
compares sources with each other: a source whose text the tokenizer cuts into more pieces per byte (Chinese
next to English, code next to prose) has a lower loss per token for the same difficulty per byte, and the
rule would starve it. The rule is a multiplicative update on per-source excess loss, as DoReMi (Xie et al. 2023,
"DoReMi: Optimizing Data Mixtures Speeds Up Language Model Pretraining") applies it at every step, here once
per manifest version:

    excess_i = max(L_i - R_i, 0)          with a reference run: the loss above what the reference reached
    excess_i = L_i - min_j L_j            without one: the loss above the easiest source
    w'_i  = w_i * exp(step_size * excess_i) / sum_j w_j * exp(step_size * excess_j)
    w''_i = (1 - smoothing) * w'_i + smoothing / k                   (k sources: a pull toward uniform)
    floor: a source below min_weight is set to min_weight and the others scaled to fill the rest

``w_i`` are the requested weights of the manifest the run trained on (its parent). Without a reference the
shared constant ``min_j L_j`` cancels in the normalisation, so the update is the same as on the raw losses:
it favours the sources that are hardest for the model, whether they lag or are simply harder text (code and
web pages sit higher than prose); a reference run trained on a balanced mixture separates the two, which is
why DoReMi uses one. Losses in nats per token compare only under the same tokenizer: a run or reference
trained on another tokenization of the corpus is refused.

Parameters live in the mix file (``reweight: {step_size, smoothing, min_weight}``; defaults below), so the
decision is in the repository with the mixture. The new manifest is the next version,
``<d>/manifests/<name>.v<k>.json`` (k: one past the highest version there; the base ``<name>.json`` is version
1), with ``parent`` = the parent's ``content_hash`` and a ``reweight`` record holding the rule, its
parameters, the run and step read, the per-source evidence and the old and new weights. The mix file is
never written. Rerunning the same command finds its own earlier result (same content but for the version
number) and leaves that file as it is, so a rerun is byte-identical.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from glassbox.contracts import manifest_content_hash, metrics_row_kinds
from pipeline.mix.mixture import (DEFAULTS, MixConfig, MixError, ReweightParams, build_manifest,  # noqa: F401
                              check_sources, parse_params)

RULE = "multiplicative update on per-source excess validation loss (DoReMi-style), smoothed, with a floor"
FORMULA = ("excess_i = max(L_i - R_i, 0) with a reference run, else L_i - min_j L_j; "
           "w_i <- w_i * exp(step_size * excess_i), normalised; w_i <- (1 - smoothing) * w_i + smoothing / k; "
           "w_i >= min_weight (the others scaled to fill the rest)")
DECIMALS = 10
BPB, NATS = "bits/byte", "nats/token"
_VERSION_FILE = re.compile(r"^(?P<name>[A-Za-z0-9_-]+)\.v(?P<k>\d+)\.json$")


# --- the evidence --------------------------------------------------------------------------------------

@dataclass
class RunEvidence:
    """What a run's record says for re-weighting: its manifest and one validation row."""
    path: str                           # as given, normalised
    manifest: dict                      # manifest.json of the run (the plan it trained on)
    step: int
    tokens: int | None
    losses: dict[str, float]            # source -> val_bpb_<source> (or val_loss_<source>, see unit) at that step
    shares: dict[str, float] = field(default_factory=dict)   # realized share_<source> of the last telemetry row
    unit: str = NATS                    # BPB when every source of the row has val_bpb_<source>
    nats: dict[str, float] = field(default_factory=dict)     # val_loss_<source> at that step (always read)

    def in_nats(self) -> "RunEvidence":
        """The same evidence in nats per token (to compare with a record that has no bits per byte)."""
        return dataclasses.replace(self, losses=dict(self.nats), unit=NATS)


def _number(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def read_evidence(run_dir: str | os.PathLike, step: int | None = None, what: str = "REWEIGHT_FROM") -> RunEvidence:
    """The run's manifest.json and its validation row at `step` (default: the last with per-source losses).
    metrics.jsonl is the trainer's contract (train/loop/metrics.py); rows without ``kind`` count as validation when
    they carry val_loss (the form most scripts write); the last row of a repeated step wins."""
    run = Path(run_dir)
    metrics, man_path = run / "metrics.jsonl", run / "manifest.json"
    if not run.is_dir():
        raise MixError(f"{what}={run_dir}: no such run directory")
    if not metrics.is_file():
        raise MixError(f"{what}={run_dir}: no metrics.jsonl (the run has not logged a step)")
    if not man_path.is_file():
        raise MixError(f"{what}={run_dir}: no manifest.json (a Glassbox run directory holds the manifest it "
                       "trained on)")
    try:
        manifest = json.loads(man_path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise MixError(f"{man_path}: not valid JSON ({e})") from None
    vals: dict[int, dict] = {}
    last_train: dict = {}
    shares: dict[str, float] = {}
    with open(metrics, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                continue                      # a torn last line
            if not isinstance(row, dict) or not isinstance(row.get("step"), int) or isinstance(row["step"], bool):
                continue
            kinds = metrics_row_kinds(row)
            if "val" in kinds:
                per = {k[len("val_loss_"):]: _number(v) for k, v in row.items() if k.startswith("val_loss_")}
                per = {k: v for k, v in per.items() if v is not None}
                bpb = {k[len("val_bpb_"):]: _number(v) for k, v in row.items() if k.startswith("val_bpb_")}
                bpb = {k: v for k, v in bpb.items() if v is not None}
                if per:
                    vals[row["step"]] = {"losses": per, "tokens": row.get("tokens"),
                                         "bpb": bpb if set(per) <= set(bpb) else None}
            if "train" in kinds and "loss" in row:
                last_train = row
                for k, v in row.items():
                    if k.startswith("share_") and not k.startswith("share_target_") and _number(v) is not None:
                        shares[k[len("share_"):]] = float(v)
    if not vals:
        raise MixError(f"{what}={run_dir}: metrics.jsonl has no validation rows with per-source losses "
                       "(val_loss_<source>); train with eval.every > 0")
    if step is None:
        step = max(vals)
    elif step not in vals:
        raise MixError(f"STEP={step}: {run_dir} has no validation at that step; validation steps: "
                       + ", ".join(str(s) for s in sorted(vals)))
    tokens = vals[step]["tokens"] if isinstance(vals[step]["tokens"], int) else None
    if tokens is None and isinstance(last_train.get("tokens"), int) and last_train.get("step") == step:
        tokens = last_train["tokens"]
    v = vals[step]
    return RunEvidence(path=os.path.normpath(str(run_dir)), manifest=manifest, step=step, tokens=tokens,
                       losses={k: v["bpb"][k] for k in v["losses"]} if v["bpb"] else v["losses"], shares=shares,
                       unit=BPB if v["bpb"] else NATS, nats=v["losses"])


# --- the rule -------------------------------------------------------------------------------------------

def apply_floor(w: dict[str, float], min_weight: float) -> dict[str, float]:
    """Weights summing to 1 with every one >= min_weight: sources below it are set to it and the others
    scaled to fill the rest, until none falls below."""
    if min_weight * len(w) > 1 + 1e-12:
        raise MixError(f"reweight.min_weight: {min_weight:g} x {len(w)} sources is more than 1; lower it")
    fixed: set[str] = set()
    while True:
        free = [k for k in w if k not in fixed]
        rest = 1.0 - min_weight * len(fixed)
        s = sum(w[k] for k in free)
        out = {k: (min_weight if k in fixed else w[k] / s * rest) for k in w}
        low = {k for k in free if out[k] < min_weight}
        if not low:
            return out
        fixed |= low


def reweight(old: dict[str, float], losses: dict[str, float], params: ReweightParams,
             reference: dict[str, float] | None = None) -> tuple[dict[str, float], dict[str, dict]]:
    """(new weights, per-source evidence) by the module's rule. `old` are normalised here."""
    names = sorted(old)
    s = sum(old.values())
    w = {k: old[k] / s for k in names}
    if reference is not None:
        excess = {k: max(losses[k] - reference[k], 0.0) for k in names}
    else:
        low = min(losses[k] for k in names)
        excess = {k: losses[k] - low for k in names}
    # exp of (step_size * excess) relative to the largest: the same after normalisation, never overflows.
    top = max(params.step_size * excess[k] for k in names)
    mult = {k: math.exp(params.step_size * excess[k] - top) for k in names}
    z = sum(w[k] * mult[k] for k in names)
    updated = {k: w[k] * mult[k] / z for k in names}
    smoothed = {k: (1 - params.smoothing) * updated[k] + params.smoothing / len(names) for k in names}
    final = apply_floor(smoothed, params.min_weight)
    final = {k: round(v, DECIMALS) for k, v in final.items()}
    evidence = {}
    for k in names:
        e = {"val_loss": round(losses[k], 6), "excess": round(excess[k], 6), "old_weight": round(w[k], DECIMALS),
             "multiplier": round(math.exp(params.step_size * excess[k]), 6), "updated": round(updated[k], DECIMALS),
             "smoothed": round(smoothed[k], DECIMALS), "new_weight": final[k],
             "floored": smoothed[k] < params.min_weight}
        if reference is not None:
            e["reference_val_loss"] = round(reference[k], 6)
        evidence[k] = e
    return final, evidence


# --- versions -------------------------------------------------------------------------------------------

def versions(manifest_dir: str | os.PathLike, name: str) -> dict[int, Path]:
    """{version: path} of a mix's manifests: ``<name>.json`` is 1, ``<name>.v<k>.json`` is k."""
    d = Path(manifest_dir)
    out: dict[int, Path] = {}
    if (d / f"{name}.json").is_file():
        out[1] = d / f"{name}.json"
    if d.is_dir():
        for p in d.iterdir():
            m = _VERSION_FILE.match(p.name)
            if m and m.group("name") == name:
                out[int(m.group("k"))] = p
    return dict(sorted(out.items()))


def _without_version(manifest: dict) -> str:
    body = {k: v for k, v in manifest.items() if k not in ("version", "content_hash")}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def place_version(manifest: dict, manifest_dir: str | os.PathLike) -> tuple[dict, Path, bool]:
    """Give `manifest` (built, no version yet) its version and path: an existing version with the same
    content (a rerun) is reused, else the next number. -> (manifest with version and content_hash, path,
    already there)."""
    name = manifest["name"]
    have = versions(manifest_dir, name)
    key = _without_version(manifest)
    for k, p in have.items():
        if k == 1:
            continue
        try:
            old = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if _without_version(old) == key:
            out = dict(manifest, version=k)
            out["content_hash"] = manifest_content_hash(out)
            return out, p, True
    k = max(have, default=1) + 1
    out = dict(manifest, version=k)
    out["content_hash"] = manifest_content_hash(out)
    return out, Path(manifest_dir) / f"{name}.v{k}.json", False


def record(params: ReweightParams, run: RunEvidence, reference: RunEvidence | None, evidence: dict,
           old: dict[str, float], new: dict[str, float]) -> dict:
    """The ``reweight`` block of a manifest version."""
    def who(e: RunEvidence) -> dict:
        return {"path": e.path, "step": e.step, "tokens": e.tokens,
                "manifest_content_hash": e.manifest.get("content_hash"), "manifest_name": e.manifest.get("name"),
                "manifest_version": e.manifest.get("version", 1)}

    return {"rule": RULE, "formula": FORMULA, "unit": run.unit, "parameters": params.as_dict(), "run": who(run),
            "reference": who(reference) if reference else None,
            "realized_shares": {k: round(v, 6) for k, v in sorted(run.shares.items()) if k in new},
            "sources": evidence, "old_weights": {k: round(v, DECIMALS) for k, v in sorted(old.items())},
            "new_weights": dict(sorted(new.items()))}


def check_evidence(mix_name: str, sources: list[str], tokenizer_sha256: str, run: RunEvidence,
                   reference: RunEvidence | None) -> None:
    """The run trained on this mix over this tokenization, and both runs validated every source."""
    m = run.manifest
    if m.get("name") != mix_name:
        raise MixError(f"REWEIGHT_FROM={run.path} trained on mix {m.get('name')!r}, not {mix_name!r}: re-weight "
                       f"with MIX=mixes/{m.get('name')}.yaml")
    run_sources = sorted((m.get("sources") or {}))
    if run_sources != sorted(sources):
        raise MixError(f"REWEIGHT_FROM={run.path} trained on sources {', '.join(run_sources)}; the mix names "
                       f"{', '.join(sorted(sources))}. Re-weighting keeps the sources: edit the mix file and "
                       "build a new base manifest (make mix without REWEIGHT_FROM) to add or drop one")
    for e, what in ((run, "REWEIGHT_FROM"), (reference, "REFERENCE")):
        if e is None:
            continue
        if e.manifest.get("tokenizer_sha256") != tokenizer_sha256:
            raise MixError(f"{what}={e.path} trained with tokenizer {str(e.manifest.get('tokenizer_sha256'))[:12]}..., "
                           f"this corpus has {tokenizer_sha256[:12]}...: losses per token do not compare across "
                           "tokenizers")
        missing = sorted(set(sources) - set(e.losses))
        if missing:
            raise MixError(f"{what}={e.path}: no validation loss for {', '.join(missing)} at step {e.step} "
                           f"(it has {', '.join(sorted(e.losses)) or 'none'}); each source needs held-out "
                           "documents (eval.samples_per_source)")


def format_change(rec: dict, path: str, version: int, parent: str, again: bool) -> str:
    """old -> new weights and why, for the job's output."""
    ref = rec["reference"]
    run = rec["run"]
    lines = [f"re-weighting mix {run['manifest_name']} (version {run['manifest_version']}, "
             f"{str(run['manifest_content_hash'])[:12]}...) from {run['path']} at step {run['step']}"
             + (f" against reference {ref['path']} at step {ref['step']}" if ref else
                "; no reference run: excess = validation loss above the easiest source")]
    unit = rec.get("unit", NATS)
    head = ["source", "val_bpb" if unit == BPB else "val_loss"] + (["reference"] if ref else []) + [
        "excess", "old", "new", "change"]
    rows = [head]
    for k, e in rec["sources"].items():
        d = e["new_weight"] - e["old_weight"]
        rows.append([k, f"{e['val_loss']:.4f}"] + ([f"{e['reference_val_loss']:.4f}"] if ref else [])
                    + [f"{e['excess']:.4f}", f"{e['old_weight']:.4f}", f"{e['new_weight']:.4f}",
                       f"{d:+.4f}" + (" (floor)" if e["floored"] else "")])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines += ["  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)) for r in rows]
    p = rec["parameters"]
    lines.append(f"rule: {FORMULA}")
    lines.append(f"parameters: step_size {p['step_size']:g}, smoothing {p['smoothing']:g}, min_weight "
                 f"{p['min_weight']:g}")
    ex = {k: e["excess"] for k, e in rec["sources"].items()}
    up = max(ex, key=lambda k: (ex[k], k))
    if max(ex.values()) - min(ex.values()) > 0:
        lines.append(f"why: {up} has the largest excess loss ({ex[up]:.4f} {'bits per byte' if unit == BPB else 'nats per token'}): it lags most, so its weight grows "
                     f"by exp(step_size x excess) relative to the others")
    else:
        lines.append("why: no source lags the others, so the weights move only by smoothing and the floor")
    lines.append(f"manifest version {version}: {path} (parent {parent[:12]}...)"
                 + (" - already there from an earlier run of this command; left as it is" if again else ""))
    return "\n".join(lines)


def next_version(mix: MixConfig, counts: dict, tokenized_dir: str, manifest_dir: str, run: RunEvidence,
                 reference: RunEvidence | None = None) -> tuple[dict, Path, bool]:
    """The re-weighted manifest of `mix` over a tokenized corpus (counts.json, shards already verified):
    (manifest with version, parent and reweight, its path, already there). Nothing is written."""
    check_sources(mix, list(counts["sources"]), tokenized_dir)
    check_evidence(mix.name, list(mix.weights), counts["tokenizer"]["sha256"], run, reference)
    parent = run.manifest
    old = {k: float(parent["sources"][k]["requested_weight"]) for k in sorted(mix.weights)}
    params = mix.reweight or ReweightParams()
    if reference is not None and reference.unit != run.unit:     # compare in the unit both records have
        run, reference = run.in_nats(), reference.in_nats()
    new, per_source = reweight(old, run.losses, params, reference.losses if reference else None)
    manifest = build_manifest(dataclasses.replace(mix, weights=new, warnings=[]), counts, tokenized_dir, manifest_dir)
    manifest["parent"] = parent["content_hash"]
    manifest["reweight"] = record(params, run, reference, per_source, old, new)
    return place_version(manifest, manifest_dir)
