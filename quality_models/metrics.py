"""Held-out metrics of a classifier: ROC AUC, precision and recall at a threshold, and score summaries."""
from __future__ import annotations

import math


def roc_auc(scores: list[float], labels: list[int]) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney U) formula; ties share their average rank."""
    n_pos = sum(1 for y in labels if y)
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("ROC AUC needs both classes")
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # 1-based average rank of the tie group
        i = j + 1
    rank_sum = sum(r for r, y in zip(ranks, labels) if y)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def binary_metrics(scores: list[float], labels: list[int], threshold: float = 0.5) -> dict:
    """Precision and recall of the positive class at `threshold`, accuracy, ROC AUC."""
    tp = sum(1 for s, y in zip(scores, labels) if s >= threshold and y)
    fp = sum(1 for s, y in zip(scores, labels) if s >= threshold and not y)
    fn = sum(1 for s, y in zip(scores, labels) if s < threshold and y)
    tn = len(labels) - tp - fp - fn
    return {
        "threshold": threshold,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "accuracy": (tp + tn) / len(labels) if labels else 0.0,
        "roc_auc": roc_auc(scores, labels),
        "n": len(labels),
    }


def quantile(sorted_values: list[float], q: float) -> float:
    """The nearest-rank quantile of already sorted values."""
    i = min(max(math.ceil(q * len(sorted_values)) - 1, 0), len(sorted_values) - 1)
    return sorted_values[i]


def summary(scores: list[float], threshold: float = 0.5) -> dict:
    """n, quartiles and the share at or above `threshold` of a set of scores."""
    v = sorted(scores)
    if not v:
        return {"n": 0}
    return {"n": len(v), "p25": quantile(v, 0.25), "median": quantile(v, 0.5), "p75": quantile(v, 0.75),
            "share_hq": sum(1 for s in v if s >= threshold) / len(v)}
