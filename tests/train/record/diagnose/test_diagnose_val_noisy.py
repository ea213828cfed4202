"""train/record/diagnose/kinds/val_noisy.py: validation jumping far more than training, found where the noise
starts; strong noise a warning, mild noise info."""
import numpy as np
import pytest

from record_fixtures import VOCAB, assert_found_near, inject_val_noisy, noisy_run, rows_from
from train.record.diagnose import diagnose


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [300, 2000])
def test_val_noisy_found_near_its_step(n, seed):
    assert_found_near("val_noisy", *inject_val_noisy(n, seed), n)


def test_strong_validation_noise_is_a_warning():
    """Validation that jumps by ~15% of its level between evaluations (0.6 nats at 4; a validation set of a
    few sequences) cannot show a data change's 1%: a warning; 2.5% (over smooth training) stays info."""
    def noisy_val(rel, seed=3, sigma=0.01):
        base, lr, y = noisy_run(600, seed, sigma)
        val = base + 0.05 + rel * base * np.random.default_rng(seed).standard_normal(600)
        return diagnose(rows_from(y, lr, val=val, val_every=15, seed=seed), vocab_size=VOCAB)

    strong = [f for f in noisy_val(0.15) if f.kind == "val_noisy"]
    assert strong and strong[0].severity == "warning", [f.to_dict() for f in noisy_val(0.15)]
    mild = [f for f in noisy_val(0.025, sigma=0.002) if f.kind == "val_noisy"]
    assert mild and mild[0].severity == "info", [f.to_dict() for f in noisy_val(0.025, sigma=0.002)]
