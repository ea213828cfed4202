"""What a metrics.jsonl row records is decided once (glassbox.contracts.metrics_row_kinds), and the three
readers of validation rows (the run record, re-weighting, the trainer's own reader) agree on a record that
mixes the trainer's rows with a kind-less script's."""
import json
import math

from glassbox.contracts import metrics_row_kinds
from pipeline.mix.reweight import read_evidence
from train.loop.metrics import read_metrics
from train.record.load import load_metrics


def test_the_rule():
    assert metrics_row_kinds({"kind": "val", "loss": 1.0}) == ("val",)
    assert metrics_row_kinds({"kind": "sample"}) == ("sample",)
    assert metrics_row_kinds({"step": 1, "loss": 2.0}) == ("train",)
    assert metrics_row_kinds({"step": 1, "val_loss": 2.0}) == ("val",)
    assert metrics_row_kinds({"step": 1, "val_loss_web": math.nan}) == ("val",)   # a diverged validation
    assert metrics_row_kinds({"step": 1, "loss": 2.0, "val_loss_web": 3.0}) == ("train", "val")
    assert metrics_row_kinds({"step": 1, "val_loss": True}) == ("train",)        # a bool is not a loss


def test_the_readers_agree(tmp_path):
    rows = [{"kind": "train", "step": 1, "loss": 5.0, "tokens": 64},
            {"step": 2, "loss": 4.5, "val_loss": 4.8, "val_loss_web": 5.0, "val_loss_books": 4.6, "tokens": 128},
            {"kind": "val", "step": 3, "val_loss": 4.4, "val_loss_web": 4.7, "val_loss_books": 4.2, "tokens": 192}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "manifest.json").write_text(json.dumps({"sources": {}}))
    record_val = [r["step"] for r in load_metrics(tmp_path) if r["kind"] == "val"]
    trainer_val = [r["step"] for r in read_metrics(tmp_path, "val")]
    assert record_val == trainer_val == [2, 3]
    assert [r["step"] for r in read_metrics(tmp_path, "train")] == [1, 2]
    assert read_evidence(tmp_path, step=2).losses == {"web": 5.0, "books": 4.6}
