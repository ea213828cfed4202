"""train/record/diagnose/kinds/divergence.py: a sustained rise found where it starts; a non-finite loss is a
critical divergence from its first step."""
import json
import math

import pytest

from record_fixtures import assert_found_near, inject_divergence, inject_nan
from train.record.diagnose import diagnose


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [100, 300, 2000])
def test_divergence_found_near_its_step(n, seed):
    assert_found_near("divergence", *inject_divergence(n, seed), n)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [100, 2000])
def test_nonfinite_loss_found_near_its_step(n, seed):
    assert_found_near("divergence", *inject_nan(n, seed), n)


def test_nonfinite_loss_is_critical_divergence():
    rows, t0 = inject_nan(300, 0)
    (f,) = diagnose(rows)
    assert (f.kind, f.step, f.severity) == ("divergence", t0, "critical")
    assert f.evidence["nonfinite_rows"] == 300 - t0 + 1 and math.isfinite(f.evidence["last_finite_loss"])
    assert json.loads(json.dumps(f.to_dict()))["step"] == t0
