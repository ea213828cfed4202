"""train/record/diagnose/kinds/overfitting.py: validation rising from its minimum while training falls, found
at the minimum; memorization is then not reported beside it."""
import pytest

from record_fixtures import VOCAB, assert_found_near, inject_overfitting
from train.record.diagnose import assess


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [100, 300, 2000])
def test_overfitting_found_near_its_step(n, seed):
    assert_found_near("overfitting", *inject_overfitting(n, seed), n)


def test_overfitting_evidence_and_memorization_yields_to_it():
    rows, t0 = inject_overfitting(300, 0)
    (f,) = assess(rows, vocab_size=VOCAB).findings
    ev = f.evidence
    assert f.kind == "overfitting" and ev["val_rise"] > 0 and ev["train_drop_rel"] > 0.01
    assert ev["gap_end"] == pytest.approx(ev["val_end"] - ev["train_end"])
    # The gap between the losses grows as well: memorization's own rule alone would report it.
    from train.record.diagnose.curves import prepare
    from train.record.diagnose.kinds.memorization import detect_memorization
    from train.record.diagnose.registry import DiagnoseConfig

    assert [m.kind for m in detect_memorization(prepare(rows), DiagnoseConfig())] == ["memorization"]
