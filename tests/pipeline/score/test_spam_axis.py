"""A spam classifier as a `score.classifiers` entry (`axis: spam`, docs/spam.md): beside a language's quality
classifier, its own column that never feeds `quality`, and `max_score` dropping at or above it with the reason
spam_classifier, through the score stage's own batch functions; its mistakes are config errors naming the key. The
spam model here is a fastText model made in the test whose positive label is the lower-case "common crawl" text
(tests/score_fixtures.py), standing in for quality_models/spam_classifier.py's __label__spam."""
import pyarrow as pa
import pytest

from conftest import REPO
from glassbox.schema import ConfigError
from pipeline.config import parse_config
from pipeline.score.batches import decide_score_partition, score_partition
from score_fixtures import CC_TEXT, HQ_TEXT, train_fasttext_hq_cc

EN = str(REPO / "quality_models" / "default" / "quality_en.ftz")


@pytest.fixture(scope="module")
def spam_model(tmp_path_factory):
    return str(train_fasttext_hq_cc(tmp_path_factory.mktemp("spam") / "spam.bin"))


def parse(tmp_path, *classifiers, **score):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    return parse_config({"sources": {"d": {"format": "jsonl", "paths": ["a.jsonl"]}},
                         "score": {"classifiers": list(classifiers), **score}}, base=tmp_path).score


def spam_entry(model, **extra) -> dict:
    return {"model": model, "kind": "fasttext", "positive_label": "__label__cc", "languages": ["en"], "axis": "spam",
            **extra}


def decided(cfg, texts, langs) -> pa.Table:
    batch = pa.RecordBatch.from_pydict({"id": [f"d{i}" for i in range(len(texts))], "source": ["web"] * len(texts),
                                        "text": texts, "lang": langs})
    cfg.kenlm_dir = str(REPO / "no-kenlm-here")   # classifiers only
    scored = list(score_partition(cfg, batch.schema)(iter([batch])))
    return pa.Table.from_batches(list(decide_score_partition(cfg, {}, scored[0].schema)(iter(scored))))


def test_a_spam_classifier_has_its_own_column_and_rejects_at_max_score(tmp_path, spam_model):
    cfg = parse(tmp_path, {"model": EN, "languages": ["en"]}, spam_entry(spam_model, max_score=0.5))
    assert [c.column for c in cfg.classifiers] == ["quality_en", "spam_en"]
    texts = [HQ_TEXT, CC_TEXT, "Ein deutscher Satz steht hier.", CC_TEXT]
    t = decided(cfg, texts, ["en", "en", "de", "en"]).to_pydict()
    assert t["spam_en"][0] < 0.1 and t["spam_en"][1] > 0.9 and t["spam_en"][2] is None, t["spam_en"]
    # quality is the quality classifier's score, whatever the spam classifier says
    assert t["quality"][:2] == t["quality_en"][:2] and t["quality"][2] is None
    assert t["reason"] == [None, "spam_classifier", None, "spam_classifier"]
    assert t["status"] == ["kept", "rejected", "kept", "rejected"]
    # without max_score it is a signal only; a spam classifier alone leaves quality empty
    only = parse(tmp_path, spam_entry(spam_model))
    t = decided(only, texts[:2], ["en", "en"]).to_pydict()
    assert t["reason"] == [None, None] and t["quality"] == [None, None] and t["spam_en"][1] > 0.9
    # spam is judged before a low quality
    both = parse(tmp_path, {"model": EN, "languages": ["en"], "min_quality": 0.999}, spam_entry(spam_model,
                                                                                               max_score=0.5))
    t = decided(both, [CC_TEXT, HQ_TEXT], ["en", "en"]).to_pydict()
    assert t["reason"][0] == "spam_classifier"


def test_spam_classifier_mistakes_name_the_setting(tmp_path, spam_model):
    def refused(*classifiers) -> str:
        with pytest.raises(ConfigError) as e:
            parse(tmp_path, *classifiers)
        return str(e.value)

    assert "min_quality" in refused(spam_entry(spam_model, min_quality=0.5))
    assert "max_score" in refused({"model": EN, "languages": ["en"], "max_score": 0.5})
    assert "max_score" in refused(spam_entry(spam_model, max_score=1.5))
    assert "column" in refused(spam_entry(spam_model, column="quality_spam"))
    assert "positive_label" in refused(spam_entry(spam_model, positive_label="__label__spam"))
    assert "one spam classifier" in refused(spam_entry(spam_model), spam_entry(spam_model, column="spam_other"))
    assert "axis" in refused(spam_entry(spam_model, axis="toxicity"))
