"""The score stage's distributions in one process: percentiles of quality and perplexity per
language and per (language, source), and each language's perplexity bucket cut-offs.

On a small corpus the Spark path (jobs/score.py: one groupBy with percentile_approx, per language
and per source) costs seconds of small jobs for a few hundred values. Below LOCAL_MAX_ROWS scores
Spark's answer is exact and this module gives the same numbers: percentile_approx keeps every value
while its summaries never merge (fewer than 1 / (2 * relative error) = 50,000 values at the
accuracy used), and then answers the nearest rank, the value at rank ceil(q * n) in ascending order,
the smallest value for q <= relative error and the largest for q >= 1 - relative error. Scores are
finite (a perplexity comes from finite log-probabilities, quality is a probability); a NaN would
sort last here, while Spark's answer with NaN depends on how its partial summaries merge.
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# What stats/score.json reports of each score, per language and per (language, source).
REPORT_PERCENTILES = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]
ACCURACY = 100_000      # percentile_approx's accuracy on the Spark path
LOCAL_MAX_ROWS = 50_000  # below it both paths are exact, so the local one is used
SCORES = ("quality", "perplexity")   # quality: each document's own language's classifier score


def nearest_rank(values: np.ndarray, quantiles: list[float]) -> list[float] | None:
    """Spark's percentile_approx of `values` (nulls already dropped) when it is exact; None if empty."""
    if not len(values):
        return None
    ordered = np.sort(values)  # NaN sorts last, as in Spark's ordering of doubles
    eps, n = 1.0 / ACCURACY, len(ordered)
    out = []
    for q in quantiles:
        if q <= eps:
            i = 0
        elif q >= 1 - eps:
            i = n - 1
        else:
            i = min(max(math.ceil(q * n) - 1, 0), n - 1)
        out.append(float(ordered[i]))
    return out


def _describe(rows: pa.Table, low: float, high: float) -> tuple[dict, list[float] | None]:
    d = {"documents": rows.num_rows}
    values = {col: rows.column(col).drop_null().to_numpy(zero_copy_only=False) for col in SCORES}
    for col in SCORES:
        d[f"{col}_scored"] = int(len(values[col]))
        p = nearest_rank(values[col], REPORT_PERCENTILES)
        d[col] = dict(zip((f"p{round(q * 100)}" for q in REPORT_PERCENTILES), p)) if p else None
    return d, nearest_rank(values["perplexity"], [low, high])


def distributions(scores: pa.Table, low: float, high: float) -> tuple[list[dict], dict]:
    """(one row per language (source "*") and per (language, source), ordered by both; bucket
    cut-offs (low, high percentile of perplexity) per language that has perplexities)."""
    langs = scores.column("lang").to_pylist()
    sources = scores.column("source").to_pylist()
    groups: dict[tuple, list[int]] = {}
    for i, (lang, source) in enumerate(zip(langs, sources)):
        groups.setdefault((lang, "*"), []).append(i)
        groups.setdefault((lang, source), []).append(i)
    out, cutoffs = [], {}
    # Spark orders nulls first, then strings by their UTF-8 bytes (the order of code points)
    for lang, source in sorted(groups, key=lambda k: tuple((v is not None, v or "") for v in k)):
        d, cut = _describe(scores.take(groups[(lang, source)]), low, high)
        out.append({"lang": lang, "source": source, **d})
        if source == "*" and cut is not None:
            cutoffs[lang] = tuple(cut)
    return out, cutoffs


def distributions_of_files(files: list[str], low: float, high: float) -> tuple[list[dict], dict]:
    """The same, read from the score signals' Parquet files (four columns only)."""
    columns = ["lang", "source", *SCORES]
    tables = [pq.read_table(f, columns=columns) for f in files]
    empty = pa.schema([("lang", pa.string()), ("source", pa.string()),
                       *((c, pa.float64()) for c in SCORES)])
    scores = pa.concat_tables(tables) if tables else empty.empty_table()
    return distributions(scores, low, high)


# --- quantile buckets of classifier scores ----------------------------------------------------------------------

def quantile_requests(score_cfg) -> dict[str, list[float]]:
    """{score column: quantiles} of the classifiers whose buckets are quantiles of this run's scores."""
    return {col: list(spec.quantiles) for col, _, spec in score_cfg.bucketed() if spec.quantiles is not None}


def score_quantiles(scores: pa.Table, requests: dict[str, list[float]]) -> dict[str, list[float] | None]:
    """Each requested column's quantiles over its scored documents (the nulls of other languages left out), as
    the perplexity cut-offs are computed; None where no document has a score."""
    return {col: nearest_rank(scores.column(col).drop_null().to_numpy(zero_copy_only=False), qs)
            for col, qs in requests.items()}


def quantiles_of_files(files: list[str], requests: dict[str, list[float]]) -> dict[str, list[float] | None]:
    """The same, read from the score signals' Parquet files (the requested columns only)."""
    if not requests:
        return {}
    cols = list(requests)
    tables = [pq.read_table(f, columns=cols) for f in files]
    empty = pa.schema([(c, pa.float64()) for c in cols])
    return score_quantiles(pa.concat_tables(tables) if tables else empty.empty_table(), requests)
