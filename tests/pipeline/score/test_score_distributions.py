"""The score stage's local distributions (pipeline/score/distributions.py) give Spark's numbers:
percentile_approx per language and per (language, source), on data with ties and nulls. (Scores are
never NaN: a perplexity comes from finite log-probabilities, quality is a probability; Spark's
answer with NaN depends on how partitions merge.)"""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.score import _distributions
from pipeline.score.distributions import LOCAL_MAX_ROWS, distributions, distributions_of_files, nearest_rank


def _scores(n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    rows = {"lang": [], "source": [], "quality": [], "perplexity": []}
    for _ in range(n):
        lang = rng.choice(["en", "en", "en", "de", "fr", None])
        rows["lang"].append(lang)
        rows["source"].append(rng.choice(["web", "cc", "books"]))
        q = rng.choice([None, round(rng.random(), 2), 0.5])  # rounding and a constant make ties
        rows["quality"].append(q)
        # French has no KenLM model here: its perplexities are all null
        p = None if lang == "fr" else rng.choice([rng.lognormvariate(5, 1), 300.0, None])
        rows["perplexity"].append(p)
    return pa.table(rows, schema=pa.schema([("lang", pa.string()), ("source", pa.string()),
                                            ("quality", pa.float64()), ("perplexity", pa.float64())]))


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("n, seed, cut", [(7, 1, (0.3, 0.6)), (400, 2, (0.3, 0.6)), (3000, 3, (0.0, 1.0)),
                                          (3000, 4, (0.25, 0.999995))])
@pytest.mark.spark
def test_local_distributions_equal_spark_percentile_approx(spark, n, seed, cut):
    table = _scores(n, seed)
    df = spark.createDataFrame(table.to_pylist(), "lang string, source string, quality double, perplexity double")
    df = df.repartition(3)  # partial aggregates are merged too
    want_rows, want_cut = _distributions(df, *cut)
    got_rows, got_cut = distributions(table, *cut)
    assert [(r["lang"], r["source"]) for r in got_rows] == [(r["lang"], r["source"]) for r in want_rows]
    assert _same(got_rows, want_rows), (got_rows, want_rows)
    assert _same(got_cut, want_cut)
    assert "fr" not in got_cut and got_cut  # no perplexity, no cut-offs


def test_nearest_rank_edges():
    assert nearest_rank(np.array([]), [0.5]) is None
    v = np.array([3.0, 1.0, 2.0, 4.0])
    assert nearest_rank(v, [0.0, 0.25, 0.5, 0.51, 1.0]) == [1.0, 1.0, 2.0, 3.0, 4.0]
    assert nearest_rank(np.array([1.0, float("nan")]), [0.99])[0] != 1.0  # NaN sorts last


def test_files_and_empty_input(tmp_path):
    table = _scores(200, 5)
    pq.write_table(table.slice(0, 120), tmp_path / "a.parquet")
    pq.write_table(table.slice(120), tmp_path / "b.parquet")
    files = sorted(str(p) for p in tmp_path.glob("*.parquet"))
    assert _same(distributions_of_files(files, 0.3, 0.6), distributions(table, 0.3, 0.6))
    assert distributions_of_files([], 0.3, 0.6) == ([], {})
    assert LOCAL_MAX_ROWS <= 50_000  # Spark's summaries are exact only below 1 / (2 * 1e-5) values
