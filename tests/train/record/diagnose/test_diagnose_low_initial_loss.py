"""train/record/diagnose/kinds/low_initial_loss.py: first losses far below ln(vocabulary), judged only with the
vocabulary size known and a record that starts at the start."""
import pytest

from record_fixtures import LN_V, VOCAB, assert_found_near, inject_low_initial_loss
from train.record.diagnose import assess, diagnose


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [20, 300])
def test_low_initial_loss_found_at_the_start(n, seed):
    assert_found_near("low_initial_loss", *inject_low_initial_loss(n, seed), n)


def test_low_initial_loss_needs_the_vocabulary():
    rows, _ = inject_low_initial_loss(300, 0)
    assert diagnose(rows) == []                                  # unknown vocabulary: not judged
    (f,) = diagnose(rows, vocab_size=VOCAB)
    assert f.evidence["ln_vocab"] == pytest.approx(LN_V) and f.severity == "critical"
    assert diagnose(rows, vocab_size=300) == []                  # ln 300 = 5.7: 5.4 is not far below


def test_a_record_that_starts_late_has_no_initial_loss():
    rows, _ = inject_low_initial_loss(300, 0)
    late = [r for r in rows if r["step"] > 50]
    result = assess(late, vocab_size=VOCAB)
    assert result.findings == []
    assert {"check": "low_initial_loss", "reason": "the record starts at step 51: no initial loss to judge"} \
        in result.not_judged
