"""Classifiers a user brings, through `make clean-dedup` as a user runs it (spark-submit, the pipeline zip): a
Hugging Face regression model for English and a fastText model trained elsewhere (DCLM's labels) for Chinese,
each cut into buckets (quantiles of the run, fixed edges), and a spam classifier (`axis: spam`) beside the English
one; the columns in scored/ and dedup/. One make run."""
import json

import pyarrow.dataset as ds
import pytest
import yaml

from pipeline.score.decisions import cut
from pipeline.score.distributions import nearest_rank
from score_fixtures import build_tiny_bert, train_fasttext_hq_cc
from tests.conftest import REPO, make

pytestmark = pytest.mark.slow
COLUMNS = ["id", "lang", "quality", "quality_edu", "quality_dclm", "quality_edu_bucket", "quality_dclm_bucket",
           "spam_en"]


def test_hf_and_fasttext_classifiers_with_buckets_through_make(tmp_path):
    edu = build_tiny_bert(tmp_path / "edu")
    dclm = train_fasttext_hq_cc(tmp_path / "dclm.bin")
    raw = yaml.safe_load((REPO / "examples" / "sample.yaml").read_text())
    raw["score"]["classifiers"] = [
        {"model": str(edu), "kind": "hf", "languages": ["en"], "column": "quality_edu", "batch_size": 8,
         "buckets": {"quantiles": [0.25, 0.5, 0.75]}},
        {"model": str(dclm), "kind": "fasttext", "languages": ["zh"], "column": "quality_dclm",
         "positive_label": "__label__hq", "preprocess": "dclm",
         "buckets": {"edges": [0.5], "names": ["cc", "hq"]}},
        # a spam score without max_score: a signal in its own column (the same toy model, its other label)
        {"model": str(dclm), "kind": "fasttext", "languages": ["en"], "axis": "spam", "positive_label": "__label__cc"}]
    config = tmp_path / "byo.yaml"
    config.write_text(yaml.safe_dump(raw))
    data = tmp_path / "data"
    proc = make("clean-dedup", f"CONFIG={config}", f"DATA={data}", "SPARK_MASTER=local[2]")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-4000:]

    stats = json.loads((data / "stats" / "score.json").read_text())["extra"]
    assert [(c["column"], c["kind"]) for c in stats["classifiers"]] == [("quality_edu", "hf"),
                                                                        ("quality_dclm", "fasttext"),
                                                                        ("spam_en", "fasttext")]
    scored = ds.dataset(str(data / "scored"), format="parquet").to_table(columns=COLUMNS).to_pylist()
    en = [r for r in scored if r["lang"] == "en"]
    zh = [r for r in scored if r["lang"] == "zh"]
    assert len(en) > 100 and len(zh) > 20
    assert all(r["quality_edu"] is not None and r["quality_dclm"] is None and r["quality"] == r["quality_edu"]
               for r in en)
    assert all(r["quality_dclm"] is not None and 0 <= r["quality_dclm"] <= 1 and r["quality_edu"] is None and
               r["quality"] == r["quality_dclm"] for r in zh)
    assert len({round(r["quality_edu"], 6) for r in en}) > len(en) / 2   # a real model's spread, not a constant
    assert all(r["spam_en"] is not None and 0 <= r["spam_en"] <= 1 for r in en) and all(r["spam_en"] is None
                                                                                       for r in zh)

    # quartiles of the run's English documents (nothing is dropped by score here, so scored/ holds them all)
    edu_edges = stats["buckets"]["quality_edu_bucket"]
    assert edu_edges["edges"] == nearest_rank(sorted(r["quality_edu"] for r in en), [0.25, 0.5, 0.75])
    assert edu_edges["names"] == ["0", "1", "2", "3"] and edu_edges["quantiles"] == [0.25, 0.5, 0.75]
    assert all(r["quality_edu_bucket"] == cut(r["quality_edu"], edu_edges["edges"], edu_edges["names"]) for r in en)
    counts = {b: sum(r["quality_edu_bucket"] == b for r in en) for b in "0123"}
    assert all(abs(n - len(en) / 4) <= len(en) / 10 for n in counts.values()), counts
    assert stats["buckets"]["quality_dclm_bucket"]["edges"] == [0.5]
    assert all(r["quality_dclm_bucket"] == ("hq" if r["quality_dclm"] > 0.5 else "cc") for r in zh)
    assert all(r["quality_dclm_bucket"] is None for r in en) and all(r["quality_edu_bucket"] is None for r in zh)

    # dedup keeps the signals: the survivors carry the same scores and buckets
    kept = ds.dataset(str(data / "dedup"), format="parquet").to_table(columns=COLUMNS).to_pylist()
    by_id = {r["id"]: r for r in scored}
    assert kept and all(r == by_id[r["id"]] for r in kept)
