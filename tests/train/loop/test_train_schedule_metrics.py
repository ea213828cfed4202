"""Learning-rate schedules and the metrics writer."""

import pytest

from train.loop.metrics import MetricsLog, device_peak_flops, read_metrics
from train.loop.schedule import lr_at


def _lrs(kind, steps=100, warmup=10, **kw):
    return [lr_at(s, kind=kind, lr=1.0, min_lr=0.1, warmup_steps=warmup, total_steps=steps, **kw)
            for s in range(steps + 5)]


@pytest.mark.parametrize("kind", ["cosine", "linear", "wsd", "constant"])
def test_warmup_then_decay_to_min(kind):
    lrs = _lrs(kind)
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)      # linear warmup over 10 steps
    assert all(a <= b + 1e-12 for a, b in zip(lrs[:10], lrs[1:10]))
    end = 1.0 if kind == "constant" else 0.1
    assert lrs[99] == pytest.approx(end) and lrs[104] == pytest.approx(end)   # held past the horizon
    assert all(a >= b - 1e-12 for a, b in zip(lrs[10:], lrs[11:]))            # never rises after warmup


def test_shapes_of_cosine_linear_wsd():
    cos, lin, wsd = _lrs("cosine"), _lrs("linear"), _lrs("wsd", decay_fraction=0.2)
    mid = 10 + (99 - 10) // 2
    assert cos[mid] == pytest.approx(0.55, abs=0.02) and lin[mid] == pytest.approx(0.55, abs=0.02)
    assert cos[20] > lin[20] and cos[90] < lin[90]
    assert wsd[79] == 1.0 and wsd[80] < 1.0 and wsd[99] == pytest.approx(0.1)   # stable, then the last 20%


def test_metrics_rows_console_and_truncation(tmp_path, capsys):
    log = MetricsLog(tmp_path, stop_step=4, log_every=2, flops_per_token=6e6, peak_flops_per_device=None, devices=1)
    for step in range(1, 5):
        log.train(step=step, tokens=step * 100, loss=5.0 - step, lr=1e-3, grad_norm=0.5, step_tokens=100,
                  seconds=0.1, samples_consumed=step * 4)
    log.val(step=4, tokens=400, val_loss=1.5, per_source={"web": 1.4, "book": 1.6})
    out = capsys.readouterr().out
    assert "step      2/4 | loss 3.0000" in out and "1,000 tok/s" in out and "eta" in out and "mfu -" in out
    rows = read_metrics(tmp_path)
    assert [r["step"] for r in rows] == [1, 2, 3, 4] and rows[0]["mfu"] is None
    assert rows[0]["tokens_per_s"] == pytest.approx(1000) and rows[0]["samples_consumed"] == 4
    assert read_metrics(tmp_path, "val")[0]["val_loss_book"] == 1.6
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"kind": "train", "step": 5, "lo')                          # torn line of a killed run
    assert log.truncate_after(2) == 4
    assert [r["step"] for r in read_metrics(tmp_path, None)] == [1, 2]
    assert len((tmp_path / "metrics.discarded.jsonl").read_text().splitlines()) == 4


def test_mfu_uses_the_peak():
    log = MetricsLog("/nonexistent", stop_step=1, log_every=1, flops_per_token=1e9,
                     peak_flops_per_device=1e12, devices=2, enabled=False)
    assert log.mfu(1000) == pytest.approx(0.5)
    assert device_peak_flops("bf16", override_tflops=100) == 1e14
    assert device_peak_flops("bf16") is None        # CPU here: unknown peak, mfu null


def test_deferred_rows_are_the_rows_written_at_once(tmp_path):
    """On a GPU rows wait for the log step: the same rows (tensors read then), in order, nothing lost at the
    stop step, and nothing written before the log step."""
    import torch

    from train.loop.metrics import DeferredRows

    def log(d):
        return MetricsLog(tmp_path / d, stop_step=7, log_every=3, flops_per_token=6e6, peak_flops_per_device=None,
                          devices=1)
    for d in ("now", "later"):
        (tmp_path / d).mkdir()
    now, later = DeferredRows(log("now"), True, 3, 7), DeferredRows(log("later"), False, 3, 7)
    for step in range(1, 8):
        for rows in (now, later):
            rows.add(step=step, tokens=step * 64, loss=torch.tensor(5.0 - step / 8), lr=1e-3,
                     grad_norm=torch.tensor(0.5 * step), step_tokens=64, seconds=0.01, ce=torch.tensor(4.0))
        written = (tmp_path / "later" / "metrics.jsonl")
        assert (written.is_file() and len(read_metrics(tmp_path / "later"))) == (step // 3 * 3 if step < 7 else 7)
    a, b = read_metrics(tmp_path / "now"), read_metrics(tmp_path / "later")
    keys = ("step", "tokens", "loss", "lr", "grad_norm", "ce")
    assert [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b]
    assert all(isinstance(r["loss"], float) and r["step_s"] >= 0 for r in b)
