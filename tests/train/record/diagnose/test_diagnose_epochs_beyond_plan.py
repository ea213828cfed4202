"""train/record/diagnose/kinds/epochs_beyond_plan.py: tokens trained past the manifest's plan, and the passes
that makes over each source; judged only with a manifest and token counts."""
import pytest

from record_fixtures import VOCAB, healthy
from train.record.diagnose import assess, diagnose


def test_training_beyond_the_planned_epochs():
    rows, _ = healthy(300, seed=0, warmup=15, val_every=20)         # 300 x 4096 = 1,228,800 tokens
    manifest = {"total_tokens": 400_000, "max_epochs": 4.0, "sources": {
        "web": {"weight": 0.75, "available_tokens": 50_000, "epochs": 6.0, "target_tokens": 300_000},
        "books": {"weight": 0.25, "available_tokens": 500_000, "epochs": 0.2, "target_tokens": 100_000}}}
    (f,) = diagnose(rows, vocab_size=VOCAB, manifest=manifest)
    assert f.kind == "epochs_beyond_plan" and f.severity == "warning"
    assert f.step == 98 and f.end_step == 300                      # 98 x 4096 > 400,000: the plan ends there
    ev = f.evidence
    assert ev["trained_tokens"] == 300 * 4096 and ev["ratio"] == pytest.approx(300 * 4096 / 400_000)
    assert ev["epochs_web"] == pytest.approx(300 * 4096 * 0.75 / 50_000) and ev["planned_epochs_web"] == 6.0
    assert "web is repeated" in f.message and "past max_epochs 4" in f.message
    # Realized shares from telemetry win over the planned weight.
    for r in rows:
        if r["kind"] == "train":
            r["share_web"], r["share_books"] = 0.5, 0.5
    (g,) = diagnose(rows, vocab_size=VOCAB, manifest=manifest)
    assert g.evidence["epochs_web"] == pytest.approx(300 * 4096 * 0.5 / 50_000)
    # Within the cap: info; within the plan: nothing.
    manifest["sources"]["web"]["available_tokens"] = 5_000_000
    manifest["sources"]["books"]["available_tokens"] = 5_000_000
    (h,) = diagnose(rows, vocab_size=VOCAB, manifest=manifest)
    assert h.severity == "info"
    manifest["total_tokens"] = 300 * 4096
    assert diagnose(rows, vocab_size=VOCAB, manifest=manifest) == []


def test_epochs_need_a_manifest_and_token_counts():
    rows, _ = healthy(100, seed=0, warmup=5)
    reasons = {n["check"]: n["reason"] for n in assess(rows, vocab_size=VOCAB).not_judged}
    assert reasons["epochs_beyond_plan"].startswith("no manifest in the record")
    bare = [{k: v for k, v in r.items() if k != "tokens"} for r in rows]
    reasons = {n["check"]: n["reason"] for n in assess(bare, vocab_size=VOCAB, manifest={"total_tokens": 1}).not_judged}
    assert reasons["epochs_beyond_plan"] == "no token counts in the training rows"
