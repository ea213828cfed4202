"""A classifier's score cut into named buckets (`buckets:` fixed edges, or quantiles of this run's documents of
that classifier), written as a column by the score stage's decide phase with the machinery of the perplexity
buckets (one `cut`, one nearest-rank quantile as Spark's percentile_approx computes it)."""
import pyarrow as pa
import pytest

from conftest import REPO
from glassbox.schema import ConfigError
from pipeline.config import parse_config
from pipeline.score.batches import decide_score_partition
from pipeline.score.decisions import bucket_edges, bucket_for, cut
from pipeline.score.distributions import nearest_rank, quantile_requests, quantiles_of_files, score_quantiles

EN = str(REPO / "quality_models" / "default" / "quality_en.ftz")
ZH = str(REPO / "quality_models" / "default" / "quality_zh.ftz")


def parse(tmp_path, en_buckets=None, zh_buckets=None):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    en = {"model": EN, "languages": ["en"], **({"buckets": en_buckets} if en_buckets is not None else {})}
    zh = {"model": ZH, "languages": ["zh"], **({"buckets": zh_buckets} if zh_buckets is not None else {})}
    return parse_config({"sources": {"d": {"format": "jsonl", "paths": ["a.jsonl"]}},
                         "score": {"classifiers": [en, zh]}}, base=tmp_path).score


def refused(tmp_path, buckets) -> str:
    with pytest.raises(ConfigError) as e:
        parse(tmp_path, buckets)
    return str(e.value)


def test_cut_puts_a_score_on_a_cut_point_in_the_lower_bucket():
    names = ["low", "mid", "high"]
    assert [cut(v, [0.1, 0.5], names) for v in (0.0, 0.1, 0.1000001, 0.5, 0.9)] == \
        ["low", "low", "mid", "mid", "high"]
    assert cut(None, [0.1], ["a", "b"]) is None and cut(0.3, None, ["a", "b"]) is None
    # the perplexity buckets are the same cut: head up to the 30th percentile's value, middle to the 60th's
    assert [bucket_for(p, (10.0, 20.0)) for p in (5, 10, 15, 20, 25)] == ["head", "head", "middle", "middle", "tail"]


@pytest.mark.parametrize("buckets, key, words", [
    ({"edges": [0.5, 0.1, 0.9]}, "edges", "must increase strictly"),
    ({"edges": [0.5, 0.5]}, "edges", "must increase strictly"),
    ({"quantiles": [0.4, 0.2]}, "quantiles", "must increase strictly"),
    ({"quantiles": [0.5, 1.0]}, "quantiles[1]", "< 1"),
    ({"edges": [0.5], "quantiles": [0.5]}, "edges", "not both or neither"),
    ({}, "edges", "not both or neither"),
    ({"edges": []}, "edges", "at least one"),
    ({"edges": [0.5], "names": ["low", "mid", "high"]}, "names", "1 cut points make 2 buckets"),
    ({"edges": [0.5], "names": ["low", "low"]}, "names", "its own non-empty name"),
    ({"edges": [0.5], "column": "bucket"}, "column", "quality_"),
    ({"edges": [0.5], "column": "quality_zh"}, "column", "another classifier's"),
])
def test_bucket_mistakes_name_the_key(tmp_path, buckets, key, words):
    msg = refused(tmp_path, buckets)
    assert msg.startswith(f"score.classifiers[0].buckets.{key}: ") and words in msg, msg


def test_two_classifiers_cannot_write_one_bucket_column(tmp_path):
    with pytest.raises(ConfigError) as e:
        parse(tmp_path, {"edges": [0.5], "column": "quality_b"}, {"quantiles": [0.5], "column": "quality_b"})
    assert str(e.value).startswith("score.classifiers[1].buckets.column:"), e.value


def test_fixed_edges_and_run_quantiles_become_bucket_columns(tmp_path):
    cfg = parse(tmp_path, {"edges": [0.1, 0.5, 0.9], "names": ["poor", "fair", "good", "best"]},
                {"quantiles": [0.2, 0.4, 0.6, 0.8]})
    assert [(c, b) for c, b, _ in cfg.bucketed()] == [("quality_en", "quality_en_bucket"),
                                                      ("quality_zh", "quality_zh_bucket")]
    assert quantile_requests(cfg) == {"quality_zh": [0.2, 0.4, 0.6, 0.8]}
    n_zh = 50
    en = [0.05, 0.1, 0.3, 0.5, 0.7, 0.95, None]
    zh = [(i * 37 % n_zh) / n_zh for i in range(n_zh)]          # 0.00 .. 0.98, shuffled
    langs = ["en"] * len(en) + ["zh"] * n_zh
    table = pa.table({"id": [f"d{i}" for i in range(len(langs))], "lang": langs,
                      "quality_en": en + [None] * n_zh, "quality_zh": [None] * len(en) + zh,
                      "quality": en + zh, "perplexity": [None] * len(langs)})
    quantiles = score_quantiles(table, quantile_requests(cfg))
    # over this classifier's documents only (the English rows' nulls left out), nearest rank as Spark answers
    assert quantiles == {"quality_zh": nearest_rank(pa.array(zh).to_numpy(), [0.2, 0.4, 0.6, 0.8])}
    assert quantiles["quality_zh"] == [0.18, 0.38, 0.58, 0.78]
    edges = bucket_edges(cfg, quantiles)
    assert edges == {"quality_en_bucket": [0.1, 0.5, 0.9], "quality_zh_bucket": [0.18, 0.38, 0.58, 0.78]}

    out = pa.Table.from_batches(list(decide_score_partition(cfg, {}, table.schema, edges)(iter(table.to_batches()))))
    assert out.column_names[len(table.column_names):] == ["ppl_bucket", "quality_en_bucket", "quality_zh_bucket",
                                                          "status", "reason", "detail"]
    en_b = out.column("quality_en_bucket").to_pylist()
    assert en_b[:len(en)] == ["poor", "poor", "fair", "fair", "good", "best", None]
    zh_b = out.column("quality_zh_bucket").to_pylist()[len(en):]
    assert {b: zh_b.count(b) for b in "01234"} == {b: 10 for b in "01234"}  # quintiles of the run: 10 each
    assert all(b is None for b in out.column("quality_zh_bucket").to_pylist()[:len(en)])
    assert out.column("status").to_pylist() == ["kept"] * len(langs)   # buckets drop nothing


def test_no_scores_no_edges_and_files_give_the_same_quantiles(tmp_path):
    import pyarrow.parquet as pq

    cfg = parse(tmp_path, {"quantiles": [0.5]})
    t = pa.table({"quality_en": [0.2, None, 0.4, 0.9], "quality_zh": [None] * 4})
    for i in range(2):
        pq.write_table(t.slice(2 * i, 2), tmp_path / f"part-{i}.parquet")
    files = sorted(str(p) for p in tmp_path.glob("part-*.parquet"))
    assert quantiles_of_files(files, quantile_requests(cfg)) == score_quantiles(t, quantile_requests(cfg)) == \
        {"quality_en": [0.4]}
    empty = score_quantiles(pa.table({"quality_en": pa.array([None, None], pa.float64())}), {"quality_en": [0.5]})
    assert empty == {"quality_en": None} and cut(0.3, empty["quality_en"], ["0", "1"]) is None


@pytest.mark.spark
def test_the_spark_path_gives_the_local_quantiles(spark, tmp_path):
    """Above LOCAL_MAX_ROWS the stage asks Spark's percentile_approx; below it, and here, both are exact."""
    from jobs.score import _quantiles

    values = [((i * 7919) % 1000) / 997 for i in range(1000)]
    t = pa.table({"quality_en": values[:600] + [None] * 400, "quality_zh": [None] * 600 + values[600:]})
    requests = {"quality_en": [0.1, 0.25, 0.5, 0.9], "quality_zh": [0.3, 0.6]}
    df = spark.createDataFrame(list(zip(*(t.column(c).to_pylist() for c in t.column_names))),
                               "quality_en double, quality_zh double")   # nulls stay nulls (pandas would make NaN)
    assert _quantiles(df, requests) == score_quantiles(t, requests)
