import pytest

from pipeline.run.stats import AccountingError, StageStats, load_stats


def test_balanced_stats_round_trip(tmp_path):
    s = StageStats("clean", records_in=10, records_out=6, rejected={"lang_not_allowed": 3},
                   unreadable={"bad_json": 1}, wall_s=1.5)
    s.check()
    s.write(str(tmp_path))
    assert load_stats(str(tmp_path), "clean") == s
    assert "lang_not_allowed 3" in s.summary()


def test_unbalanced_stats_fail():
    with pytest.raises(AccountingError, match="records_in=10"):
        StageStats("clean", records_in=10, records_out=6, rejected={"x": 3}).check()
