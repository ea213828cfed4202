"""Mean and spread over seeds, and a variant's difference from the base with its interval and verdict.

Plain Python and scipy's t quantile: no torch, no Spark. A difference is a variant's value minus the base's: for
a held-out loss a negative difference is an improvement, for an lm-eval accuracy a positive one.

Which interval depends on what the two sides share. A variant that trains on other data with the base's seeds
shares each proxy's init and data-order seed with its partner: the paired t-interval removes that shared noise.
The null control (the base config again) must run on other seeds, or equal seeds would give equal models; its
proxies share nothing with the base's, so pairing them by position is arbitrary, and the paired interval rests on
n - 1 degrees of freedom of arbitrary differences (three seeds whose ranks happen to match give a tight interval
around a chance shift). Welch's two-sample interval, with both sides' own spreads, is the test for it.
`compare` chooses by the seeds.
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
    std: float          # sd of the pair differences; for Welch's interval the standard error of the difference
    n: int
    low: float          # t-interval of the mean difference
    high: float
    confidence: float
    verdict: str
    diffs: list[float]  # per pair; for Welch's interval the two sides' values are in the spreads instead
    test: str = "paired"   # or "welch"

    def as_dict(self) -> dict:
        return asdict(self)


def spread(values: list[float]) -> Spread:
    n = len(values)
    if not n:
        raise ValueError("no values")
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return Spread(mean, std, n, list(values))


def t_quantile(confidence: float, df: float) -> float:
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


def welch(variant: list[float], base: list[float], confidence: float = 0.95, lower_is_better: bool = True) -> Paired:
    """Welch's t-interval of mean(variant) - mean(base) for two independent sets of seeds (Welch-Satterthwaite
    degrees of freedom). Needs two values on each side."""
    if len(variant) < 2 or len(base) < 2:
        raise ValueError("a two-sample interval needs at least 2 seeds on each side")
    v, b = spread(variant), spread(base)
    qv, qb = v.std ** 2 / v.n, b.std ** 2 / b.n
    diff = v.mean - b.mean
    se = math.sqrt(qv + qb)
    if se == 0:                  # no spread on either side: the difference is exact
        low = high = diff
    else:
        df = (qv + qb) ** 2 / (qv ** 2 / (v.n - 1) + qb ** 2 / (b.n - 1))
        half = t_quantile(confidence, df) * se
        low, high = diff - half, diff + half
    return Paired(diff, se, min(v.n, b.n), low, high, confidence, verdict(low, high, lower_is_better), [], "welch")


def compare(variant: list[float], base: list[float], variant_seeds: list[int], base_seeds: list[int],
            confidence: float = 0.95, lower_is_better: bool = True) -> Paired:
    """The paired interval when both sides ran on the same seeds (shared init and data order), else Welch's."""
    if list(variant_seeds) == list(base_seeds):
        return paired(variant, base, confidence, lower_is_better)
    return welch(variant, base, confidence, lower_is_better)
