"""The statistics behind an ablation's verdicts (ablation/stats.py): pure functions, no processes."""
import math

import pytest
from scipy import stats as sps

from ablation.stats import BETTER, NOISE, WORSE, compare, paired, spread, t_quantile, welch


def test_spread_is_the_mean_and_sample_sd():
    s = spread([1.0, 2.0, 4.0])
    assert s.mean == pytest.approx(7 / 3) and s.std == pytest.approx(math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2
                                                                                 + (4 - 7 / 3) ** 2) / 2))
    assert spread([3.0]).std == 0.0


def test_the_interval_is_scipys_paired_t_interval():
    variant, base = [5.10, 5.31, 5.02, 5.20], [5.00, 5.12, 5.05, 5.01]
    p = paired(variant, base, 0.95)
    ci = sps.ttest_rel(variant, base).confidence_interval(0.95)
    assert (p.low, p.high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert t_quantile(0.95, 1) == pytest.approx(12.7062, abs=1e-4)


@pytest.mark.parametrize("variant, base, verdict", [
    ([4.80, 4.79], [5.00, 5.01], BETTER),        # lower held-out loss on both seeds, consistently
    ([5.30, 5.32], [5.00, 5.01], WORSE),
    ([5.02, 4.99], [5.00, 5.01], NOISE),         # one seed up, one down: the null control's outcome
    ([5.10, 4.99], [5.00, 5.00], NOISE),         # both up, but the spread is wide for two seeds
    ([5.00, 5.01], [5.00, 5.01], NOISE),         # identical: no difference at all
])
def test_verdicts(variant, base, verdict):
    assert paired(variant, base).verdict == verdict


def test_pairs_need_equal_counts_and_two_seeds():
    with pytest.raises(ValueError, match="pairs need equal counts"):
        paired([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least 2 seeds"):
        paired([1.0], [1.0])


def test_a_score_where_higher_is_better_turns_the_verdict_round():
    """lm-eval accuracies: a variant above the base on every seed is better, not worse."""
    up, base = [0.31, 0.33, 0.32], [0.25, 0.26, 0.27]
    assert paired(up, base, lower_is_better=False).verdict == BETTER
    assert paired(base, up, lower_is_better=False).verdict == WORSE
    assert paired(up, base).verdict == WORSE                     # the same numbers read as a loss


def test_welchs_interval_is_scipys():
    variant, base = [5.269, 5.293, 5.279, 5.31], [5.262, 5.283, 5.273]
    w = welch(variant, base, 0.95)
    ci = sps.ttest_ind(variant, base, equal_var=False).confidence_interval(0.95)
    assert (w.low, w.high) == (pytest.approx(ci.low), pytest.approx(ci.high)) and w.test == "welch"
    with pytest.raises(ValueError, match="2 seeds on each side"):
        welch([1.0], [1.0, 2.0])


def test_compare_pairs_shared_seeds_only():
    """The null control's seeds share nothing with the base's: three seeds whose ranks happen to match the
    base's give a tight paired interval around a chance shift (the planted case's figures), Welch's does not."""
    base, null = [5.2618, 5.2834, 5.2731], [5.2692, 5.2927, 5.2795]
    assert paired(null, base).verdict == WORSE
    assert compare(null, base, [4, 5, 6], [1, 2, 3]).test == "welch"
    assert compare(null, base, [4, 5, 6], [1, 2, 3]).verdict == NOISE
    same = compare(null, base, [1, 2, 3], [1, 2, 3])
    assert same.test == "paired" and same.verdict == WORSE


def test_identical_sides_on_other_seeds_are_within_noise():
    assert welch([5.0, 5.0], [5.0, 5.0]).verdict == NOISE
    assert welch([6.0, 6.0], [5.0, 5.0]).verdict == WORSE     # no spread at all: the difference is exact
