"""Mean and spread over seeds, and a variant's paired difference from the base with its verdict.

Plain Python and scipy's t quantile: no torch, no Spark. A difference is a variant's value minus the base's: for
a held-out loss a negative difference is an improvement, for an lm-eval accuracy a positive one. Pairs are formed by position in the seed lists: the same
seed on both sides when the variant trains on other data (the init and the data-order seed are then shared),
other seeds when the variant is the null control (the base config again, so equal seeds would give equal
models and a zero spread).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

BETTER, WORSE, NOISE = "better", "worse", "within noise"


@dataclass
class Spread:
    mean: float
    std: float          # sample standard deviation over seeds (0 for one seed)
    n: int
    values: list[float]


@dataclass
class Paired:
    diff: float         # mean of (variant - base) over the pairs
    std: float
    n: int
    low: float          # t-interval of the mean difference
    high: float
    confidence: float
    verdict: str
    diffs: list[float]

    def as_dict(self) -> dict:
        return asdict(self)


def spread(values: list[float]) -> Spread:
    n = len(values)
    if not n:
        raise ValueError("no values")
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return Spread(mean, std, n, list(values))


def t_quantile(confidence: float, df: int) -> float:
    """The two-sided Student t critical value (12.71 for 95% with one degree of freedom)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2, df))


def verdict(low: float, high: float, lower_is_better: bool = True) -> str:
    """For a loss (lower is better) the whole interval below zero is better, above zero worse, else within
    noise; for a score such as accuracy the other way round."""
    if high < 0:
        return BETTER if lower_is_better else WORSE
    if low > 0:
        return WORSE if lower_is_better else BETTER
    return NOISE


def paired(variant: list[float], base: list[float], confidence: float = 0.95, lower_is_better: bool = True) -> Paired:
    """The paired t-interval of mean(variant_i - base_i). Needs two pairs at least: one pair has no spread,
    so nothing can be said about noise."""
    if len(variant) != len(base):
        raise ValueError(f"{len(variant)} variant values against {len(base)} base values: pairs need equal counts")
    if len(variant) < 2:
        raise ValueError("a paired interval needs at least 2 seeds")
    diffs = [v - b for v, b in zip(variant, base)]
    s = spread(diffs)
    half = t_quantile(confidence, s.n - 1) * s.std / math.sqrt(s.n)
    low, high = s.mean - half, s.mean + half
    return Paired(s.mean, s.std, s.n, low, high, confidence, verdict(low, high, lower_is_better), diffs)
