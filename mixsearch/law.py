"""Mixing laws: a model per target of its loss (bits per byte) as a function of the mixture weights.

The default is the log-linear law of Data Mixing Laws (Ye et al. 2024) and Olmix:

    L(r) = c + k * exp(sum_j t_j r_j)

Because the weights sum to one, k and a common shift of the t_j are the same freedom, so it is fitted as
``L = c + exp(sum_j t_j r_j)``, D + 1 free numbers for D domains, k > 0: the loss falls toward a floor c and never
below it. (A law with k < 0 has no floor: fitted to a few noisy rows, it predicted minus 7e29 bits per byte for a
mixture outside the swarm, and a proposer minimising it goes there.) The fit profiles c: for a fixed c, log(L - c)
is linear in r, an ordinary least squares; c is searched on a grid of gaps below the smallest loss, then all D + 1
numbers are refined together by bounded least squares on the losses themselves (c below the smallest loss,
|t_j| <= 30).

The others it is measured against: ``linear`` (ridge regression on the weights, the baseline any law must beat),
and ``lightgbm`` (RegMix's learner; only when the package is installed: it is not a dependency of the project).
Each is cross-validated the same way (`cross_validate`): leave-one-out for up to 40 rows, else 5-fold, and the
Spearman rank correlation of held-out predictions with the measured losses; a mixture search cares about order.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

KINDS = ("loglinear", "linear", "lightgbm")
T_BOUND = 30.0


@dataclass
class LogLinear:
    kind: str = "loglinear"
    c: float = 0.0
    sign: float = 1.0
    t: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def predict(self, W: np.ndarray) -> np.ndarray:
        return self.c + self.sign * np.exp(np.atleast_2d(W) @ self.t)

    def grad(self, r: np.ndarray) -> np.ndarray:
        return self.sign * math.exp(float(r @ self.t)) * self.t

    def params(self) -> dict:
        return {"c": self.c, "k_sign": self.sign, "t": [float(x) for x in self.t]}

    smooth = True


@dataclass
class Linear:
    kind: str = "linear"
    alpha: float = 1e-3
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def predict(self, W: np.ndarray) -> np.ndarray:
        return np.atleast_2d(W) @ self.coef

    def grad(self, r: np.ndarray) -> np.ndarray:
        return self.coef

    def params(self) -> dict:
        return {"coef": [float(x) for x in self.coef], "alpha": self.alpha}

    smooth = True


class Boosted:
    kind = "lightgbm"
    smooth = False

    def __init__(self, model):
        self.model = model

    def predict(self, W: np.ndarray) -> np.ndarray:
        return self.model.predict(np.atleast_2d(W))

    def params(self) -> dict:
        return {"n_estimators": self.model.n_estimators}


def _ols(W: np.ndarray, z: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(W, z, rcond=None)[0]


def fit_loglinear(W: np.ndarray, y: np.ndarray) -> LogLinear:
    from scipy.optimize import least_squares

    y = np.asarray(y, float)
    spread = float(y.max() - y.min()) or 1e-3
    best = None
    for gap in spread * np.logspace(-3, 2.5, 40):
        c = y.min() - gap
        t = np.clip(_ols(W, np.log(y - c)), -T_BOUND, T_BOUND)
        sse = float(((c + np.exp(W @ t) - y) ** 2).sum())
        if best is None or sse < best[0]:
            best = (sse, c, t)
    _, c0, t0 = best

    def resid(p):
        return p[0] + np.exp(np.clip(W @ p[1:], -50, 50)) - y

    lo = np.concatenate([[-np.inf], np.full(len(t0), -T_BOUND)])
    hi = np.concatenate([[y.min() - 1e-9], np.full(len(t0), T_BOUND)])
    x0 = np.clip(np.concatenate([[c0], t0]), lo + 1e-12, hi - 1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sol = least_squares(resid, x0, bounds=(lo, hi), method="trf", max_nfev=2000)
    p = sol.x if np.all(np.isfinite(sol.x)) and sol.cost * 2 <= best[0] + 1e-15 else x0
    return LogLinear(c=float(p[0]), sign=1.0, t=np.asarray(p[1:], float))


def fit_linear(W: np.ndarray, y: np.ndarray, alpha: float = 1e-3) -> Linear:
    d = W.shape[1]
    coef = np.linalg.solve(W.T @ W + alpha * np.eye(d), W.T @ y)
    return Linear(alpha=alpha, coef=coef)


def lightgbm_available() -> bool:
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        return False
    return True


def fit_lightgbm(W: np.ndarray, y: np.ndarray) -> Boosted:
    import lightgbm

    m = lightgbm.LGBMRegressor(n_estimators=200, learning_rate=0.05, num_leaves=8,
                               min_child_samples=max(2, len(y) // 10), verbose=-1, random_state=0,
                               n_jobs=1)
    m.fit(W, y)
    return Boosted(m)


FITTERS = {"loglinear": fit_loglinear, "linear": fit_linear, "lightgbm": fit_lightgbm}


def available_kinds() -> list[str]:
    return [k for k in KINDS if k != "lightgbm" or lightgbm_available()]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def folds(n: int) -> list[np.ndarray]:
    """Leave-one-out up to 40 rows, else 5 folds (a fixed interleaving: reproducible)."""
    if n <= 40:
        return [np.array([i]) for i in range(n)]
    return [np.arange(k, n, 5) for k in range(5)]


def cross_validate(kind: str, W: np.ndarray, y: np.ndarray) -> dict:
    """Held-out predictions of every row, their Spearman rank correlation with y, and the mean absolute error."""
    pred = np.zeros_like(y, dtype=float)
    for test in folds(len(y)):
        train = np.setdiff1d(np.arange(len(y)), test)
        pred[test] = FITTERS[kind](W[train], y[train]).predict(W[test])
    return {"spearman": spearman(pred, y), "mae": float(np.abs(pred - y).mean()),
            "scheme": "leave-one-out" if len(y) <= 40 else "5-fold", "predicted": [float(x) for x in pred]}
