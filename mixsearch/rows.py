"""A swarm file: one JSON object per line, one proxy per row, from this project's swarm or anyone's.

    {"run": "p003", "weights": {"books": 0.61, "web": 0.39}, "tokens": 163840, "seed": 3,
     "losses": {"wikitext": 1.93, "shakespeare": 2.41}}

``losses`` are what the fit models, lower is better; this project writes bits per byte. Every problem is a
``SwarmError`` naming the line and the key: a line that is not JSON, a row without weights or losses, weights
that do not sum to 1 (within 1e-3) or name a domain the other rows do not have (or the --available file does
not), a negative weight, a target missing from some rows, a loss that is not a finite number, fewer rows than
domains + 1 (a law with one coefficient per domain and an offset cannot be fitted from fewer).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

SUM_TOLERANCE = 1e-3


class SwarmError(ValueError):
    """A swarm file or a fit request that cannot be used, with the row and key named."""


@dataclass
class Swarm:
    path: str
    domains: list[str]                 # sorted
    targets: list[str]                 # sorted
    runs: list[str]
    weights: np.ndarray                # [rows, domains], each row sums to 1
    losses: np.ndarray                 # [rows, targets]
    tokens: list[int | None]
    seeds: list[int | None]
    rows: list[dict]

    def natural(self) -> dict[str, float]:
        """The mean mixture of the swarm (the centre its mixtures were drawn around)."""
        m = self.weights.mean(axis=0)
        return {d: float(v) for d, v in zip(self.domains, m / m.sum())}


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def read_rows(path: str) -> list[tuple[int, dict]]:
    out = []
    try:
        fh = open(path, encoding="utf-8")
    except OSError as e:
        raise SwarmError(f"{path}: cannot read the swarm file ({e.strerror})") from None
    with fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise SwarmError(f"{path}:{n}: not a JSON object ({e.msg}); each line is one proxy's row") from None
            if not isinstance(row, dict):
                raise SwarmError(f"{path}:{n}: a JSON {type(row).__name__}, not an object; each line is one "
                                 "proxy's row {\"run\", \"weights\", \"tokens\", \"seed\", \"losses\"}")
            out.append((n, row))
    return out


def load_swarm(path: str, targets: list[str] | None = None, domains: list[str] | None = None) -> Swarm:
    """Read and check a swarm file. ``targets``: the targets to keep (default: every target of the rows);
    ``domains``: the domains that exist (an --available file), so a row naming another one is refused."""
    raw = read_rows(path)
    if not raw:
        raise SwarmError(f"{path}: no rows; a swarm file has one JSON object per proxy")
    names: set[str] = set()
    for n, row in raw:
        where = f"{path}:{n}" + (f" (run {row['run']})" if isinstance(row.get("run"), str) else "")
        w = row.get("weights")
        if not isinstance(w, dict) or not w:
            raise SwarmError(f"{where}: no \"weights\" object {{domain: share}}")
        for d, v in w.items():
            if not _finite(v):
                raise SwarmError(f"{where}: weights.{d} is {v!r}, not a finite number")
            if v < 0:
                raise SwarmError(f"{where}: weights.{d} is {v}, a negative share")
        s = sum(w.values())
        if abs(s - 1.0) > SUM_TOLERANCE:
            raise SwarmError(f"{where}: weights sum to {s:.6f}, not 1 (within {SUM_TOLERANCE:g}); write each "
                             "proxy's shares of its training tokens")
        if domains is not None:
            unknown = sorted(set(w) - set(domains))
            if unknown:
                raise SwarmError(f"{where}: weights.{unknown[0]} names a domain the available tokens do not have "
                                 f"(domains: {', '.join(sorted(domains))})")
        names |= set(w)
        lo = row.get("losses")
        if not isinstance(lo, dict) or not lo:
            raise SwarmError(f"{where}: no \"losses\" object {{target: loss}}")
    doms = sorted(names if domains is None else set(domains) | names)
    all_targets = sorted({t for _, r in raw for t in r["losses"]})
    want = sorted(targets) if targets else all_targets
    missing_t = [t for t in want if t not in all_targets]
    if missing_t:
        raise SwarmError(f"--targets: {missing_t[0]!r} is in no row of {path} (targets: {', '.join(all_targets)})")
    W = np.zeros((len(raw), len(doms)))
    L = np.zeros((len(raw), len(want)))
    for i, (n, row) in enumerate(raw):
        where = f"{path}:{n}" + (f" (run {row['run']})" if isinstance(row.get("run"), str) else "")
        for t_i, t in enumerate(want):
            if t not in row["losses"]:
                raise SwarmError(f"{where}: losses.{t} is missing (other rows have it); rerun that proxy's "
                                 f"evaluation, or fit without it (--targets)")
            v = row["losses"][t]
            if not _finite(v):
                raise SwarmError(f"{where}: losses.{t} is {v!r}, not a finite number (a diverged proxy?); drop "
                                 "the row or rerun the proxy")
            L[i, t_i] = float(v)
        for d, v in row["weights"].items():
            W[i, doms.index(d)] = float(v)
        W[i] /= W[i].sum()
    if len(raw) < len(doms) + 1:
        raise SwarmError(f"{path}: {len(raw)} rows for {len(doms)} domains; the mixing law has a coefficient per "
                         f"domain and an offset, so it needs at least {len(doms) + 1} rows (Olmix uses about "
                         f"5 x domains = {5 * len(doms)})")
    return Swarm(path=path, domains=doms, targets=want, runs=[str(r.get("run", f"row{n}")) for n, r in raw],
                 weights=W, losses=L, tokens=[r.get("tokens") for _, r in raw],
                 seeds=[r.get("seed") for _, r in raw], rows=[r for _, r in raw])


def load_available(arg: str) -> dict[str, int]:
    """--available: a DATA folder's tokenized/counts.json (or the folder), or a JSON object {domain: tokens}."""
    import os

    path = arg
    if os.path.isdir(path):
        path = os.path.join(path, "tokenized", "counts.json")
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
    except OSError as e:
        raise SwarmError(f"--available {arg}: cannot read {path} ({e.strerror})") from None
    except ValueError as e:
        raise SwarmError(f"--available {arg}: not JSON ({e})") from None
    if isinstance(obj, dict) and isinstance(obj.get("sources"), dict):
        obj = {k: v.get("tokens") for k, v in obj["sources"].items() if isinstance(v, dict)}
    if not isinstance(obj, dict) or not obj:
        raise SwarmError(f"--available {arg}: expected counts.json or a JSON object {{domain: tokens}}")
    out = {}
    for k, v in obj.items():
        if not _finite(v) or v < 0:
            raise SwarmError(f"--available {arg}: {k} has {v!r} tokens, not a count")
        out[str(k)] = int(v)
    return out
