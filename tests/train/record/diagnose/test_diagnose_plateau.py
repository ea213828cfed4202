"""train/record/diagnose/kinds/plateau.py: a fast early drop then a long flat stretch, found where it starts;
not a finding at the expected floor (converged)."""
import numpy as np
import pytest

from record_fixtures import assert_found_near, inject_plateau
from train.record.diagnose import DiagnoseConfig, diagnose


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [300, 2000])
def test_plateau_found_near_its_step(n, seed):
    assert_found_near("plateau", *inject_plateau(n, seed), n)


def test_plateau_not_reported_at_the_expected_floor():
    rows, t0 = inject_plateau(300, 0)
    level = float(np.median([r["loss"] for r in rows if r.get("kind") == "train" and r["step"] > t0]))
    assert [f.kind for f in diagnose(rows, cfg=DiagnoseConfig(expected_floor=level - 1.0))] == ["plateau"]
    assert diagnose(rows, cfg=DiagnoseConfig(expected_floor=level - 0.1)) == []        # converged
