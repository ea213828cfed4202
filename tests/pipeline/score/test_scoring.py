from pipeline.score.decisions import ScoreConfig, bucket_for, random_draw, score_reason
from pipeline.score.settings import ClassifierSpec


def test_buckets_follow_the_cutoffs_and_leave_unscored_alone():
    cut = (100.0, 300.0)
    assert [bucket_for(p, cut) for p in (50, 100, 101, 300, 301)] == ["head", "head", "middle", "middle", "tail"]
    assert bucket_for(None, cut) is None and bucket_for(50.0, None) is None


def test_nothing_is_dropped_by_default_and_thresholds_name_the_reason():
    assert score_reason(0.01, "tail", ScoreConfig(), "en", "d1") is None
    cfg = ScoreConfig(min_quality=0.5, drop_buckets=["tail"])
    assert score_reason(0.2, "head", cfg, "en") == "low_quality"
    assert score_reason(0.9, "tail", cfg, "en") == "ppl_bucket_tail"
    assert score_reason(None, None, cfg, "ja") is None  # unscored (no classifier for it) is never dropped


def test_each_language_reads_its_own_classifier_threshold():
    """A classifier's own min_quality overrides the global one for the documents of its languages; a language
    no classifier names falls to the one for * when there is one."""
    cfg = ScoreConfig(min_quality=0.5, classifiers=[
        ClassifierSpec("en.ftz", ["en"], "quality_en"), ClassifierSpec("zh.ftz", ["zh"], "quality_zh", 0.9),
        ClassifierSpec("any.ftz", ["*"], "quality_any", 0.1)])
    assert score_reason(0.6, None, cfg, "en") is None and score_reason(0.6, None, cfg, "zh") == "low_quality"
    assert score_reason(0.2, None, cfg, "fr") is None and score_reason(0.05, None, cfg, "fr") == "low_quality"
    assert [cfg.classifier_for(x) for x in ("en", "zh", "fr", None)] == [0, 1, 2, 2]
    assert ScoreConfig(classifiers=cfg.classifiers[:2]).classifier_for("fr") is None


def test_random_drop_is_a_fixed_fraction_of_ids_whatever_the_scores():
    ids = [f"doc-{i}" for i in range(4000)]
    cfg = ScoreConfig(random_drop=0.3, random_seed=7)
    dropped = {d for d in ids if score_reason(0.99, "head", cfg, "en", d) == "random_drop"}
    assert 0.27 < len(dropped) / len(ids) < 0.33
    again = {d for d in ids if score_reason(0.01, None, cfg, "xx", d) == "random_drop"}
    assert again == dropped                                   # scores and language play no part; reruns agree
    other = {d for d in ids if score_reason(0.5, None, ScoreConfig(random_drop=0.3, random_seed=8), "en", d)}
    assert other != dropped and 0 <= random_draw("doc-1", 7) < 1
