from pipeline.score.decisions import ScoreConfig, bucket_for, score_reason


def test_buckets_follow_the_cutoffs_and_leave_unscored_alone():
    cut = (100.0, 300.0)
    assert [bucket_for(p, cut) for p in (50, 100, 101, 300, 301)] == ["head", "head", "middle", "middle", "tail"]
    assert bucket_for(None, cut) is None and bucket_for(50.0, None) is None


def test_nothing_is_dropped_by_default_and_thresholds_name_the_reason():
    assert score_reason(0.01, "tail", ScoreConfig()) is None
    cfg = ScoreConfig(min_quality=0.5, drop_buckets=["tail"])
    assert score_reason(0.2, "head", cfg) == "low_quality_ft"
    assert score_reason(0.9, "tail", cfg) == "ppl_bucket_tail"
    assert score_reason(None, None, cfg) is None  # unscored (other language) is never dropped
