"""train.record.diagnose: each pattern injected at a known step is found near it; healthy curves of several
shapes give no finding; the record reader survives torn lines, nulls, restarted steps and rows without a
kind; what could not be judged is said; the CLI."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from record_fixtures import LN_V, VOCAB, healthy, lr_schedule, noisy, rows_from, trend, write_run
from train.record.diagnose import DiagnoseConfig, assess, diagnose, format_table
from train.record.load import load_metrics

REPO = __import__("pathlib").Path(__file__).resolve().parents[3]


# ----------------------------------------------------------------------------------- healthy curves

CLEAN = {
    "power law, constant lr": dict(n=300, kind="constant", val_every=10),
    "warmup then cosine decay": dict(n=300, warmup=30, val_every=20),
    "end of a cosine schedule": dict(n=1000, warmup=50, val_every=50),
    "short run, 20 steps": dict(n=20, warmup=5),
    "short run, 20 steps, validation every 2": dict(n=20, warmup=2, val_every=2),
    "long run, 5000 steps": dict(n=5000, warmup=200, val_every=100),
    "noisy small batches (5%)": dict(n=400, sigma=0.05, warmup=20, val_every=20),
    "very noisy small batches (8%)": dict(n=2000, sigma=0.08, warmup=100, val_every=50),
    "noise-free": dict(n=500, sigma=0.0, warmup=20, val_every=25),
    "validation flattening, 1% noise": dict(n=600, sigma=0.02, warmup=30, val_every=15, val_sigma=0.01),
    "slow power law (alpha 0.2)": dict(n=1000, alpha=0.2, floor=1.5, warmup=50, val_every=50),
    "fast power law near its floor (alpha 0.8)": dict(n=1000, alpha=0.8, floor=3.0, warmup=50, val_every=50),
}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shape", list(CLEAN))
def test_healthy_curves_give_no_finding(shape, seed):
    kw = dict(CLEAN[shape])
    n = kw.pop("n")
    rows, _ = healthy(n, seed=seed, **kw)
    findings = diagnose(rows, vocab_size=VOCAB)
    assert findings == [], [f.to_dict() for f in findings]


# ---------------------------------------------------------------------------------- injected patterns

def _run(n, seed, sigma=0.01):
    base, lr = trend(n, warmup=n // 20)
    return base, lr, noisy(base, sigma, seed)


def inject_spike(n, seed):
    base, lr, y = _run(n, seed)
    t0 = int(0.6 * n)
    y[t0] *= 1.6                      # a bad batch, and half a recovery the step after
    y[t0 + 1] *= 1.2
    return rows_from(y, lr, seed=seed), t0 + 1


def inject_divergence(n, seed):
    base, lr, y = _run(n, seed)
    t0 = int(0.5 * n)
    t = np.arange(n)
    y = y + np.where(t >= t0, 0.8 * base[t0] * np.clip(t - t0, 0, None) / (n - t0), 0.0)
    return rows_from(y, lr, seed=seed), t0 + 1


def inject_nan(n, seed):
    base, lr, y = _run(n, seed)
    t0 = int(0.7 * n)
    y[t0:] = np.nan
    return rows_from(y, lr, seed=seed), t0 + 1


def inject_plateau(n, seed):
    base, lr = trend(n, kind="constant", tau=n / 200, alpha=0.6)
    t0 = int(0.2 * n)
    b = base.copy()
    b[t0:] = base[t0]
    return rows_from(noisy(b, 0.01, seed), lr, val=b + 0.05, val_every=max(1, n // 25), seed=seed), t0 + 1


def inject_overfitting(n, seed):
    base, lr, y = _run(n, seed)
    t0 = int(0.5 * n)
    t = np.arange(n)
    val = np.where(t < t0, base, base[t0] + 0.3 * (t - t0) / (n - t0)) + 0.05 \
        + 0.002 * np.random.default_rng(seed).standard_normal(n)
    return rows_from(y, lr, val=val, val_every=max(1, n // 40), seed=seed), t0 + 1


def inject_val_noisy(n, seed):
    base, lr, y = _run(n, seed)
    t0 = int(0.3 * n)
    t = np.arange(n)
    val = base + 0.05 + np.where(t >= t0, 0.06 * base * np.random.default_rng(seed + 3).standard_normal(n), 0.0)
    return rows_from(y, lr, val=val, val_every=max(1, n // 40), seed=seed), t0 + 1


def inject_low_initial_loss(n, seed):
    base, lr = trend(n, warmup=n // 20, start=5.0, floor=1.0)      # starts 5.4 nats below ln(32000)
    return rows_from(noisy(base, 0.01, seed), lr, seed=seed), 1


def inject_stalled_late(n, seed):
    base, lr = trend(n, warmup=n // 20, kind="constant")
    t0 = int(0.6 * n)
    b = base.copy()
    b[t0:] = base[t0]
    return rows_from(noisy(b, 0.01, seed), lr, val=b + 0.05, val_every=max(1, n // 25), seed=seed), t0 + 1


def inject_stalled_from_start(n, seed):
    b = np.full(n, LN_V + 0.2)                                    # learning nothing at all
    return rows_from(noisy(b, 0.01, seed), lr_schedule(n, "constant"), val=b + 0.01,
                     val_every=max(1, n // 25), seed=seed), 1


def inject_memorization(n, seed):
    """Training keeps falling faster than validation from t0 (the same text seen again and again); validation
    still falls a little, so it is not overfitting yet."""
    base, lr, y = _run(n, seed)
    t0 = int(0.4 * n)
    t = np.arange(n)
    y = y * (1 - 0.3 * np.clip((t - t0) / (n - t0), 0, 1))
    val = base + 0.05 + 0.002 * np.random.default_rng(seed).standard_normal(n)
    return rows_from(y, lr, val=val, val_every=max(1, n // 40), seed=seed), t0 + 1


PATTERNS = {
    "spike": (inject_spike, [100, 300, 2000]),
    "divergence": (inject_divergence, [100, 300, 2000]),
    "divergence/nan": (inject_nan, [100, 2000]),
    "plateau": (inject_plateau, [300, 2000]),
    "overfitting": (inject_overfitting, [100, 300, 2000]),
    "val_noisy": (inject_val_noisy, [300, 2000]),
    "low_initial_loss": (inject_low_initial_loss, [20, 300]),
    "stalled": (inject_stalled_late, [100, 300, 2000]),
    "stalled/from the start": (inject_stalled_from_start, [300, 2000]),
    "memorization": (inject_memorization, [100, 300, 2000]),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name,n", [(name, n) for name, (_, ns) in PATTERNS.items() for n in ns])
def test_injected_pattern_found_near_its_step(name, n, seed):
    make, _ = PATTERNS[name]
    kind = name.split("/")[0]
    rows, t0 = make(n, seed)
    findings = diagnose(rows, vocab_size=VOCAB)
    hits = [f for f in findings if f.kind == kind]
    assert hits, f"{kind} not found; got {[f.to_dict() for f in findings]}"
    best = min(hits, key=lambda f: abs(f.step - t0))
    assert abs(best.step - t0) <= max(2, 0.05 * n), (t0, best.to_dict())
    assert best.end_step >= best.step
    assert best.severity in ("info", "warning", "critical")
    assert best.advice and best.message
    assert best.evidence and all(isinstance(v, (int, float)) for v in best.evidence.values())
    # Nothing else is reported about these curves.
    assert {f.kind for f in findings} == {kind}, [f.to_dict() for f in findings]


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
    base, lr, y = _run(300, 0)
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


def test_strong_validation_noise_is_a_warning():
    """Validation that jumps by ~15% of its level between evaluations (0.6 nats at 4; a validation set of a
    few sequences) cannot show a data change's 1%: a warning; 2.5% (over smooth training) stays info."""
    def noisy_val(rel, seed=3, sigma=0.01):
        base, lr, y = _run(600, seed, sigma)
        val = base + 0.05 + rel * base * np.random.default_rng(seed).standard_normal(600)
        return diagnose(rows_from(y, lr, val=val, val_every=15, seed=seed), vocab_size=VOCAB)

    strong = [f for f in noisy_val(0.15) if f.kind == "val_noisy"]
    assert strong and strong[0].severity == "warning", [f.to_dict() for f in noisy_val(0.15)]
    mild = [f for f in noisy_val(0.025, sigma=0.002) if f.kind == "val_noisy"]
    assert mild and mild[0].severity == "info", [f.to_dict() for f in noisy_val(0.025, sigma=0.002)]


def test_nonfinite_loss_is_critical_divergence():
    rows, t0 = inject_nan(300, 0)
    (f,) = diagnose(rows)
    assert (f.kind, f.step, f.severity) == ("divergence", t0, "critical")
    assert f.evidence["nonfinite_rows"] == 300 - t0 + 1 and math.isfinite(f.evidence["last_finite_loss"])
    assert json.loads(json.dumps(f.to_dict()))["step"] == t0


def test_plateau_not_reported_at_the_expected_floor():
    rows, t0 = inject_plateau(300, 0)
    level = float(np.median([r["loss"] for r in rows if r.get("kind") == "train" and r["step"] > t0]))
    assert [f.kind for f in diagnose(rows, cfg=DiagnoseConfig(expected_floor=level - 1.0))] == ["plateau"]
    assert diagnose(rows, cfg=DiagnoseConfig(expected_floor=level - 0.1)) == []        # converged


def test_low_initial_loss_needs_the_vocabulary():
    rows, _ = inject_low_initial_loss(300, 0)
    assert diagnose(rows) == []                                  # unknown vocabulary: not judged
    (f,) = diagnose(rows, vocab_size=VOCAB)
    assert f.evidence["ln_vocab"] == pytest.approx(LN_V) and f.severity == "critical"
    assert diagnose(rows, vocab_size=300) == []                  # ln 300 = 5.7: 5.4 is not far below


# ------------------------------------------------------------------------------------- reading rows

def test_rows_torn_null_and_restarted(tmp_path):
    rows, t0 = inject_spike(300, 0)
    # A resumed run that did not truncate: steps 150..200 written twice, the first time with a spike that
    # the rerun did not have; the last row of each step wins, so the only spike is the real one.
    first = [dict(r) for r in rows if r["step"] <= 200]
    for r in first:
        if r["step"] == 170 and r["kind"] == "train":
            r["loss"] *= 3
    rerun = [r for r in rows if r["step"] >= 150]
    # Nulls: a missing grad_norm and a null loss are missing values, not zeros or crashes.
    rerun[5]["grad_norm"] = None
    rerun[7]["loss"] = None
    del rerun[9]["lr"]
    write_run(tmp_path, first + rerun, torn=True)
    loaded = load_metrics(tmp_path)
    steps = [r["step"] for r in loaded if r["kind"] == "train"]
    assert steps == sorted(set(steps)) and steps[-1] == 300 and 99999 not in steps
    assert loaded == load_metrics(tmp_path / "metrics.jsonl")
    findings = diagnose(loaded, vocab_size=VOCAB)
    assert [(f.kind, f.step) for f in findings] == [("spike", t0)]
    # Rows handed in directly (not sorted, steps repeated) get the same treatment: the later row wins.
    assert [(f.kind, f.step) for f in diagnose(first + rerun, vocab_size=VOCAB)] == [("spike", t0)]
    assert ("spike", 170) in [(f.kind, f.step) for f in diagnose(rerun + first, vocab_size=VOCAB)]


def _unkinded(rows):
    """The rows as most training scripts write them: no kind field."""
    return [{k: v for k, v in r.items() if k != "kind"} for r in rows]


@pytest.mark.parametrize("name", ["overfitting", "val_noisy", "spike", "memorization"])
def test_rows_without_kind_are_read_as_train_and_validation(name, tmp_path):
    make, _ = PATTERNS[name]
    rows, t0 = make(300, 0)
    want = [(f.kind, f.step) for f in diagnose(rows, vocab_size=VOCAB)]
    assert name in [k for k, _ in want]
    bare = _unkinded(rows)
    assert [(f.kind, f.step) for f in diagnose(bare, vocab_size=VOCAB)] == want
    write_run(tmp_path, bare)
    loaded = load_metrics(tmp_path)
    assert {r["kind"] for r in loaded} == {r["kind"] for r in rows}
    assert len([r for r in loaded if r["kind"] == "train"]) == 300                 # no training row replaced
    assert [(f.kind, f.step) for f in diagnose(loaded, vocab_size=VOCAB)] == want


def test_one_row_with_both_losses_is_split_and_aliases_are_mapped(tmp_path):
    rows, t0 = inject_overfitting(300, 0)
    want = [(f.kind, f.step) for f in diagnose(rows, vocab_size=VOCAB)]
    # nanoGPT-style rows: iter, train/loss and val/loss in the same row at evaluation steps.
    val = {r["step"]: r["val_loss"] for r in rows if r["kind"] == "val"}
    merged = []
    for r in rows:
        if r["kind"] == "train":
            m = {"iter": r["step"], "train/loss": r["loss"], "learning_rate": r["lr"], "grad_norm": r["grad_norm"],
                 "tokens": r["tokens"]}
            if r["step"] in val:
                m["val/loss"] = val[r["step"]]
            merged.append(m)
    write_run(tmp_path, merged, vocab_size=None)
    loaded = load_metrics(tmp_path)
    assert len([r for r in loaded if r["kind"] == "val"]) == len(val)
    tr = [r for r in loaded if r["kind"] == "train"]
    assert len(tr) == 300 and all("val_loss" not in r and "lr" in r for r in tr)
    assert [(f.kind, f.step) for f in diagnose(loaded, vocab_size=VOCAB)] == want


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


def test_not_judged_is_said_instead_of_no_findings():
    rows, _ = healthy(200, seed=0, warmup=10)                     # no validation, no vocabulary, no manifest
    result = assess(rows)
    assert result.findings == []
    checks = {n["check"] for n in result.not_judged}
    assert checks == {"overfitting, val_noisy", "memorization", "low_initial_loss", "epochs_beyond_plan"}
    table = format_table(result.findings, result.not_judged)
    assert table.startswith("no findings among the checks that could be judged")
    assert "not judged: memorization: no validation loss in the record" in table
    full, _ = healthy(300, seed=0, warmup=15, val_every=20)
    manifest = {"total_tokens": 300 * 4096, "max_epochs": 4.0, "sources": {}}
    done = assess(full, vocab_size=VOCAB, manifest=manifest)
    assert done.findings == [] and done.not_judged == [] and format_table([], []) == "no findings"
    short = assess(healthy(6, seed=0)[0], vocab_size=VOCAB)
    assert {"spike", "plateau, stalled"} <= {n["check"] for n in short.not_judged}


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


def test_empty_and_tiny_inputs():
    assert diagnose([]) == []
    assert diagnose([{"kind": "train", "step": 1, "loss": 10.0}]) == []
    assert diagnose([{"kind": "val", "step": 5, "val_loss": 3.0}, {"step": "x"}, "junk"]) == []


# --------------------------------------------------------------------------------------------- CLI

def _cli(*args):
    return subprocess.run([sys.executable, "-m", "train.record.diagnose", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_cli_json_on_a_directory_with_only_metrics(tmp_path):
    rows, t0 = inject_divergence(300, 0)
    write_run(tmp_path, rows, vocab_size=None, torn=True)
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.jsonl"]
    p = _cli(tmp_path, "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"findings", "not_judged", "reading"} and [f["kind"] for f in out["findings"]] == ["divergence"]
    assert out["reading"][0].startswith("training loss ")
    assert set(out["findings"][0]) == {"kind", "step", "end_step", "severity", "message", "evidence", "advice"}
    assert abs(out["findings"][0]["step"] - t0) <= 15
    assert {n["check"] for n in out["not_judged"]} == {"overfitting, val_noisy", "memorization", "low_initial_loss",
                                                       "epochs_beyond_plan"}
    # Plain mode: a table, exit 0 (findings are not errors).
    p = _cli(tmp_path)
    assert p.returncode == 0 and "divergence" in p.stdout and "advice:" in p.stdout
    assert "1 unreadable lines skipped" in p.stdout
    # Healthy: "no findings", still 0.
    clean = tmp_path / "clean"
    write_run(clean, healthy(200, seed=0, warmup=10)[0], vocab_size=None)
    p = _cli(clean)
    assert p.returncode == 0 and "no findings among the checks that could be judged" in p.stdout
    assert "not judged: overfitting, val_noisy: no validation loss" in p.stdout
    assert json.loads(_cli(clean, "--json").stdout)["findings"] == []


def test_cli_vocab_size_from_config_or_flag(tmp_path):
    rows, _ = inject_low_initial_loss(300, 0)
    bare = write_run(tmp_path / "bare", rows, vocab_size=None)
    with_cfg = write_run(tmp_path / "cfg", rows, vocab_size=VOCAB)
    kinds = lambda p: [f["kind"] for f in json.loads(p.stdout)["findings"]]     # noqa: E731
    assert kinds(_cli(bare, "--json")) == []
    assert "vocabulary unknown" in _cli(bare).stdout
    assert kinds(_cli(bare, "--json", "--vocab-size", VOCAB)) == ["low_initial_loss"]
    assert kinds(_cli(with_cfg, "--json")) == ["low_initial_loss"]
    assert kinds(_cli(with_cfg, "--json", "--vocab-size", 300)) == []       # the flag wins


def test_cli_flags_and_errors(tmp_path):
    rows, _ = inject_spike(300, 0)
    write_run(tmp_path, rows)
    assert [f["kind"] for f in json.loads(_cli(tmp_path, "--json").stdout)["findings"]] == ["spike"]
    assert json.loads(_cli(tmp_path, "--json", "--spike-z", "1e6").stdout)["findings"] == []
    missing = _cli(tmp_path / "nope")
    assert missing.returncode == 2 and "no such run directory" in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _cli(empty).returncode == 2 and "metrics.jsonl" in _cli(empty).stderr
    (empty / "metrics.jsonl").write_text('{"kind": "train", "st')
    p = _cli(empty)
    assert p.returncode == 2 and "no metrics rows" in p.stderr


def test_thresholds_are_declared_with_ranges(tmp_path):
    """DiagnoseConfig sits on the shared schema (glassbox/schema.py): every threshold has its range, the bands
    are checked against each other, and the CLI's flags go through the same check."""
    from glassbox.schema import ConfigError, settings, validate

    assert all(meta for name, _, meta in settings(DiagnoseConfig) if name != "spike_from_run")
    validate(DiagnoseConfig())
    with pytest.raises(ConfigError, match=r"^flat_min_frac: must be <= 1, got 2.0"):
        validate(DiagnoseConfig(flat_min_frac=2.0))
    with pytest.raises(ConfigError, match=r"^spike_info_rel: 0.6 is above spike_critical_rel 0.5"):
        validate(DiagnoseConfig(spike_info_rel=0.6))
    base, lr, y = _run(50, 0)
    p = tmp_path / "log.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows_from(y, lr)))
    r = subprocess.run([sys.executable, "-m", "train.record.diagnose", str(p), "--flat-frac", "2"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == "error: flat_min_frac: must be <= 1, got 2.0", r.stderr
