"""The proposal: the mixture that minimises the objective under the constraints.

    minimise   sum_t a_t L_t(r)  +  kl * KL(r || natural)
    subject to sum_j r_j = 1,   r_j >= min_weight,   r_j * budget <= max_epochs * available_j

``a_t``: the objective's weight of target t (mean: 1 / targets). The repetition cap is a box bound per domain,
``r_j <= max_epochs * available_j / budget``, so every candidate is projected onto the box-and-simplex set, and
the answer is projected once more at the end: whatever the optimiser did, no domain is ever planned beyond
max_epochs (the test checks it on random problems). Constraints no mixture satisfies are refused before any
search, naming which: the caps sum to less than the budget, the floors to more than 1, or one domain's cap is
below its floor.

Smooth laws are minimised by SLSQP from several starts (the natural mix, uniform, the best swarm row, random draws);
a learner without gradients (LightGBM) by RegMix's recipe: many Dirichlet candidates, the best one's neighbourhood.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixsearch.rows import SwarmError

BIND_TOL = 1e-6


@dataclass
class Bounds:
    domains: list[str]
    lo: np.ndarray
    hi: np.ndarray
    why_hi: list[str]          # per domain: "max_epochs" when its cap is below 1, else ""


def bounds(domains: list[str], min_weight: float = 0.0, available: dict[str, int] | None = None,
           budget: int | None = None, max_epochs: float | None = None) -> Bounds:
    """The box of every domain, or a SwarmError naming the constraint no mixture satisfies."""
    n = len(domains)
    if min_weight < 0:
        raise SwarmError(f"--min-weight {min_weight:g}: a floor cannot be negative")
    if min_weight * n > 1 + 1e-12:
        raise SwarmError(f"--min-weight {min_weight:g} x {n} domains = {min_weight * n:g} > 1: no mixture has every "
                         f"domain at its floor; lower --min-weight below {1 / n:.4f}")
    lo = np.full(n, float(min_weight))
    hi = np.ones(n)
    why = [""] * n
    if available is not None or budget is not None:
        if available is None or budget is None:
            raise SwarmError("the repetition cap needs both --available (tokens per domain) and --budget (tokens)")
        if budget <= 0:
            raise SwarmError(f"--budget {budget}: must be a positive token count")
        missing = [d for d in domains if d not in available]
        if missing:
            raise SwarmError(f"--available: no token count for domain {missing[0]!r} (it has "
                             f"{', '.join(sorted(available))})")
        k = 4.0 if max_epochs is None else float(max_epochs)
        if k <= 0:
            raise SwarmError(f"--max-epochs {k:g}: must be positive")
        for j, d in enumerate(domains):
            cap = k * available[d] / budget
            if cap < 1:
                hi[j], why[j] = cap, "max_epochs"
        if hi.sum() < 1 - 1e-12:
            total = sum(available[d] for d in domains)
            raise SwarmError(f"--budget {budget:,} tokens is more than the domains hold at --max-epochs {k:g} "
                             f"({total:,} tokens x {k:g} = {int(k * total):,}): no mixture satisfies the repetition "
                             "cap; lower --budget, raise --max-epochs or add data")
        short = [d for j, d in enumerate(domains) if hi[j] < lo[j] - 1e-15]
        if short:
            d = short[0]
            j = domains.index(d)
            raise SwarmError(f"domain {d!r}: {available[d]:,} tokens x --max-epochs {k:g} is {hi[j]:.4f} of the "
                             f"--budget {budget:,}, below --min-weight {min_weight:g}: no mixture gives it its floor "
                             "without repeating it too often; lower --min-weight or --budget")
        if lo.sum() > 1 + 1e-12:
            raise SwarmError("the floors sum to more than 1")
    return Bounds(list(domains), lo, hi, why)


def project(x: np.ndarray, b: Bounds) -> np.ndarray:
    """The closest point (Euclidean) of {sum r = 1, lo <= r <= hi} to x: r = clip(x - tau, lo, hi), tau by
    bisection; the last rounding residue goes to a domain with room, so the bounds hold exactly."""
    lo_t, hi_t = float(np.min(x - b.hi)) - 1.0, float(np.max(x - b.lo)) + 1.0
    for _ in range(200):
        tau = 0.5 * (lo_t + hi_t)
        if np.clip(x - tau, b.lo, b.hi).sum() > 1:
            lo_t = tau
        else:
            hi_t = tau
    r = np.clip(x - 0.5 * (lo_t + hi_t), b.lo, b.hi)
    for _ in range(3):
        resid = 1.0 - r.sum()
        if resid == 0:
            break
        room = (b.hi - r) if resid > 0 else (r - b.lo)
        j = int(np.argmax(room))
        r[j] = float(np.clip(r[j] + resid, b.lo[j], b.hi[j]))
    return r


def _objective(models: list, a: np.ndarray, natural: np.ndarray | None, kl: float):
    def f(r):
        val = float(sum(ai * m.predict(r[None, :])[0] for ai, m in zip(a, models)))
        if kl and natural is not None:
            rr = np.clip(r, 1e-12, None)
            val += kl * float((rr * np.log(rr / natural)).sum())
        return val

    def g(r):
        grad = sum(ai * m.grad(r) for ai, m in zip(a, models))
        if kl and natural is not None:
            rr = np.clip(r, 1e-12, None)
            grad = grad + kl * (np.log(rr / natural) + 1.0)
        return np.asarray(grad, float)

    return f, g


def minimise(models: list, a: np.ndarray, b: Bounds, starts: list[np.ndarray], natural: np.ndarray | None = None,
             kl: float = 0.0, seed: int = 0) -> tuple[np.ndarray, float]:
    """The best feasible mixture found: (weights, objective)."""
    from scipy.optimize import minimize

    f, g = _objective(models, a, natural, kl)
    rng = np.random.default_rng(seed)
    n = len(b.domains)
    cands = [project(np.asarray(s, float), b) for s in starts]
    cands += [project(x, b) for x in rng.dirichlet(np.ones(n), size=8)]
    best_r, best_f = None, np.inf
    if all(getattr(m, "smooth", False) for m in models):
        cons = [{"type": "eq", "fun": lambda r: r.sum() - 1.0, "jac": lambda r: np.ones_like(r)}]
        for x0 in cands:
            sol = minimize(f, x0, jac=g, method="SLSQP", bounds=list(zip(b.lo, b.hi)), constraints=cons,
                           options={"maxiter": 500, "ftol": 1e-12})
            r = project(sol.x if np.all(np.isfinite(sol.x)) else x0, b)
            fr = f(r)
            if fr < best_f:
                best_r, best_f = r, fr
    else:                                   # RegMix: many candidates, then around the best ones
        pool = [project(x, b) for x in rng.dirichlet(np.ones(n), size=20000)] + cands
        vals = np.array([f(r) for r in pool])
        top = [pool[i] for i in np.argsort(vals)[:10]]
        best_r = project(np.mean(top, axis=0), b)
        best_f = f(best_r)
        i = int(np.argmin(vals))
        if vals[i] < best_f:
            best_r, best_f = pool[i], float(vals[i])
    return best_r, float(best_f)


def binding(r: np.ndarray, b: Bounds) -> dict[str, str]:
    """{domain: "max_epochs" | "min_weight"} for every bound the proposal sits on."""
    out = {}
    for j, d in enumerate(b.domains):
        if b.why_hi[j] and r[j] >= b.hi[j] - BIND_TOL:
            out[d] = "max_epochs"
        elif b.lo[j] > 0 and r[j] <= b.lo[j] + BIND_TOL:
            out[d] = "min_weight"
    return out
