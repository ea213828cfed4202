"""train/record/diagnose/kinds/spike.py: a bad batch (+60%, half a recovery) found at its step; a moderate jump a
warning; the gradient norm's swings in warm-up no spike unless the loss moves too; a spike inside a
divergence's rise is the divergence's."""
import numpy as np
import pytest

from record_fixtures import VOCAB, assert_found_near, inject_spike, noisy, noisy_run, rows_from, trend
from train.record.diagnose import DiagnoseConfig, diagnose


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [100, 300, 2000])
def test_spike_found_near_its_step(n, seed):
    assert_found_near("spike", *inject_spike(n, seed), n)


def test_spike_evidence_and_severity():
    rows, t0 = inject_spike(300, 0)
    (f,) = diagnose(rows)
    assert f.kind == "spike" and f.step == t0 and f.severity == "critical"      # +60%
    ev = f.evidence
    assert ev["loss"] == pytest.approx(rows[t0 - 1]["loss"])
    assert ev["z"] > 6 and ev["jump_rel"] == pytest.approx(ev["loss"] / ev["rolling_median"] - 1)
    assert ev["mad"] > 0 and ev["noise_sigma"] > 0 and ev["recovered"] == 1
    assert "lr" in ev and "grad_norm" in ev
    # A moderate one (+20%, one point, recovered) is a warning; the threshold is configurable.
    base, lr, y = noisy_run(300, 0)
    y[150] *= 1.2
    (g,) = diagnose(rows_from(y, lr))
    assert g.severity == "warning" and g.step == 151
    assert diagnose(rows_from(y, lr), cfg=DiagnoseConfig(spike_z=1000)) == []


def test_grad_norm_excursions_in_warmup_are_no_spike_unless_the_loss_moves():
    """Held-out-like: 300 steps, 60 of warm-up; the gradient norm of a healthy run swings 3x while the learning
    rate rises (fresh Adam moments, a growing lr). The same swing after warm-up, or with the loss up 30%, is one."""
    n, warm = 300, 60
    base, lr = trend(n, warmup=warm)
    rng = np.random.default_rng(5)
    y = noisy(base, 0.01, 5)
    gn = (0.3 + 2.0 * np.exp(-np.arange(n) / 15)) * np.exp(0.05 * rng.standard_normal(n))
    swing = gn.copy()
    swing[40] *= 3.0                                    # inside warm-up, loss untouched
    assert diagnose(rows_from(y, lr, grad_norm=swing), vocab_size=VOCAB) == []
    late = gn.copy()
    late[150] *= 3.0                                    # the same swing after warm-up is a spike
    assert [f.kind for f in diagnose(rows_from(y, lr, grad_norm=late), vocab_size=VOCAB)] == ["spike"]
    moved = y.copy()
    moved[40] *= 1.3                                    # in warm-up, but the loss moves with it
    assert "spike" in {f.kind for f in diagnose(rows_from(moved, lr, grad_norm=swing), vocab_size=VOCAB)}


def test_a_spike_inside_a_divergence_is_the_divergences():
    """A loss that jumps 40% and stays there trips the spike rule from the jump to the end (the jumped points
    never enter the baseline) and is a sustained rise: one finding, the divergence. With the divergence rule
    off, the same curve is a critical spike."""
    base, lr, y = noisy_run(300, 0)
    y[180:] *= 1.4
    rows = rows_from(y, lr)
    assert [(f.kind, f.end_step) for f in diagnose(rows, vocab_size=VOCAB)] == [("divergence", 300)]
    alone = diagnose(rows, vocab_size=VOCAB, cfg=DiagnoseConfig(divergence_rise=100.0))
    assert [(f.kind, f.step, f.severity) for f in alone] == [("spike", 181, "critical")]
