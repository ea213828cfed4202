"""train/record/diagnose/kinds/stalled.py: a flat stretch late in the run, or learning nothing from the start,
with validation not improving either; a flat training loss while validation still improves is no stall."""
import numpy as np
import pytest

from record_fixtures import assert_found_near, inject_stalled_from_start, inject_stalled_late, rows_from
from train.record.diagnose import diagnose


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [100, 300, 2000])
def test_stalled_late_found_near_its_step(n, seed):
    assert_found_near("stalled", *inject_stalled_late(n, seed), n)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [300, 2000])
def test_stalled_from_the_start_found(n, seed):
    assert_found_near("stalled", *inject_stalled_from_start(n, seed), n)


def test_validation_still_improving_is_no_stall():
    rows, t0 = inject_stalled_late(300, 0)
    (f,) = diagnose(rows)
    assert f.kind == "stalled" and f.evidence["val_change"] > -0.01 and "validation does not improve" in f.message
    train = [r for r in rows if r["kind"] == "train"]
    val = np.array([r["loss"] for r in train]) + 0.05
    val[t0:] -= np.linspace(0, 0.5, len(val) - t0)                      # validation keeps falling by 0.5 nats
    improving = rows_from(np.array([r["loss"] for r in train]), np.array([r["lr"] for r in train]), val=val,
                          val_every=12)
    assert "stalled" not in {f.kind for f in diagnose(improving)}
