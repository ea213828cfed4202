"""train/record/diagnose/kinds/memorization.py: training falling away from validation, found where the gap
opens; judged on as few as 3 validation points, where overfitting needs 6."""
import numpy as np
import pytest

from record_fixtures import VOCAB, assert_found_near, inject_memorization, lr_schedule, noisy, rows_from
from train.record.diagnose import assess, format_table


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n", [100, 300, 2000])
def test_memorization_found_near_its_step(n, seed):
    assert_found_near("memorization", *inject_memorization(n, seed), n)


def test_memorization_of_a_small_corpus_with_few_validation_points():
    """The old demo's shape: 200 steps, validation every 50 (4 points), training falling to 3.1 while
    validation climbs to 6.4. Overfitting needs 6 points, so it is named as not judged; memorization is
    judged on 4 and is critical."""
    n = 200
    t = np.arange(1, n + 1)
    train = 3.1 + 5.0 * np.exp(-t / 40)
    val_at = {50: 5.9, 100: 6.0, 150: 6.2, 200: 6.4}
    rows = rows_from(noisy(train, 0.01, 0), lr_schedule(n, warmup=20))
    rows += [{"kind": "val", "step": s, "tokens": s * 4096, "val_loss": v} for s, v in val_at.items()]
    result = assess(rows, vocab_size=3000)
    kinds = {f.kind: f for f in result.findings}
    assert set(kinds) == {"memorization"}, [f.to_dict() for f in result.findings]
    m = kinds["memorization"]
    assert m.severity == "critical" and m.evidence["gap_end"] > 3 and m.evidence["val_points"] == 4
    assert m.step <= 100 and m.end_step == 200
    checks = {n["check"]: n["reason"] for n in result.not_judged}
    assert "4 validation points; 6 needed" in checks["overfitting, val_noisy"]
    table = format_table(result.findings, result.not_judged)
    assert "memorization" in table and "not judged: overfitting, val_noisy: 4 validation points" in table
    assert result.reading[1].startswith("validation loss 5.900 -> 6.400 over 4 evaluations (steps 50-200): lowest "
                                        "5.900 at step 50, +0.500 since")


def test_memorization_severity_bands():
    """info below a 20% gap, warning to 40%, critical beyond (memo_warning_rel, memo_critical_rel)."""
    rows, _ = inject_memorization(300, 0)
    (f,) = assess(rows, vocab_size=VOCAB).findings
    rel = f.evidence["gap_end_rel"]
    assert f.severity == ("critical" if rel >= 0.4 else "warning" if rel >= 0.2 else "info")
    from train.record.diagnose import DiagnoseConfig

    loose = DiagnoseConfig(memo_warning_rel=rel + 0.01, memo_critical_rel=rel + 0.02)
    assert [g.severity for g in assess(rows, vocab_size=VOCAB, cfg=loose).findings] == ["info"]
