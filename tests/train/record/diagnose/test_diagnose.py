"""train.record.diagnose as a whole: healthy curves of several shapes give no finding of any kind; the record
reader survives torn lines, nulls, restarted steps and rows without a kind; what could not be judged is said;
the registry; the CLI. Each kind's injected pattern is tested beside it (test_diagnose_<kind>.py)."""
import json
import subprocess
import sys

import pytest

from record_fixtures import (VOCAB, healthy, inject_divergence, inject_low_initial_loss, inject_memorization,
                             inject_overfitting, inject_spike, inject_val_noisy, noisy_run, rows_from, write_run)
from train.record.diagnose import DiagnoseConfig, assess, diagnose, format_table
from train.record.load import load_metrics

REPO = __import__("pathlib").Path(__file__).resolve().parents[4]


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


INJECT = {"overfitting": inject_overfitting, "val_noisy": inject_val_noisy, "spike": inject_spike,
          "memorization": inject_memorization}


@pytest.mark.parametrize("name", list(INJECT))
def test_rows_without_kind_are_read_as_train_and_validation(name, tmp_path):
    make = INJECT[name]
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
    base, lr, y = noisy_run(50, 0)
    p = tmp_path / "log.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows_from(y, lr)))
    r = subprocess.run([sys.executable, "-m", "train.record.diagnose", str(p), "--flat-frac", "2"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == "error: flat_min_frac: must be <= 1, got 2.0", r.stderr


# ---------------------------------------------------------------------------------------------- registry

def test_every_kind_is_one_module_registered_with_its_test_beside_it():
    """A module under kinds/ with a KIND is in the registry under its own name, its settings are fields of
    DiagnoseConfig (no two kinds declaring one name: a dataclass would silently merge them), and its
    synthetic-curve test is tests/train/record/diagnose/test_diagnose_<kind>.py."""
    import dataclasses
    import importlib
    import pkgutil

    from train.record.diagnose import kinds
    from train.record.diagnose.registry import KINDS

    modules = [importlib.import_module(f"{kinds.__name__}.{m.name}") for m in pkgutil.iter_modules(kinds.__path__)]
    with_kind = {m.__name__.rsplit(".", 1)[1]: m.KIND for m in modules if hasattr(m, "KIND")}
    assert sorted(with_kind) == sorted(k.name for k in KINDS) and len(KINDS) == 9
    assert all(with_kind[k.name] is k for k in KINDS)
    here = REPO / "tests" / "train" / "record" / "diagnose"
    declared = []
    for k in KINDS:
        assert k.advice and k.needs is not None, k.name
        assert (here / f"test_diagnose_{k.name}.py").is_file(), k.name
        for cls in k.settings:
            if cls not in [c for c, _ in declared]:
                declared.append((cls, [f.name for f in dataclasses.fields(cls)]))
    names = [n for _, fields in declared for n in fields]
    assert len(names) == len(set(names)) and names == [f.name for f in dataclasses.fields(DiagnoseConfig)]


def test_diagnose_modules_import_each_other_without_a_circle():
    """Every import between the package's modules (those under TYPE_CHECKING too) runs one way: the kinds read
    their thresholds from settings.py, never from the registry that imports them."""
    import ast

    pkg = REPO / "train" / "record" / "diagnose"
    mods = {".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p
            for p in pkg.rglob("*.py")}
    edges = {}
    for name, path in mods.items():
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            out |= {t for t in targets if t in mods and t != name and not name.startswith(t + ".")}
        edges[name] = out
    assert "train.record.diagnose.settings" in mods and not edges["train.record.diagnose.settings"]
    state: dict[str, int] = {}

    def visit(n, path):
        state[n] = 1
        for m in edges[n]:
            assert state.get(m) != 1, " -> ".join(path + [m])
            if m not in state:
                visit(m, path + [m])
        state[n] = 2

    for n in sorted(mods):
        if n not in state:
            visit(n, [n])
    kinds = [n for n in mods if n.startswith("train.record.diagnose.kinds.")]
    assert len(kinds) >= 11 and all("train.record.diagnose.registry" not in edges[k] for k in kinds)


def test_judging_order_and_shared_notes():
    """Kinds run after the kinds they read (spike after divergence, memorization after overfitting), and kinds
    sharing one `needs` are named in one note, in registry order."""
    from train.record.diagnose.assess import judging_order, not_judged
    from train.record.diagnose.curves import prepare
    from train.record.diagnose.kind import Facts, Kind
    from train.record.diagnose.registry import KINDS

    order = [k.name for k in judging_order()]
    assert order.index("divergence") < order.index("spike") and order.index("overfitting") < order.index("memorization")
    nothing = lambda c, cfg, facts: []                                     # noqa: E731
    short = lambda c, cfg, facts: "too short"                              # noqa: E731
    a, b = Kind("a", nothing, "x", needs=short, after=("b",)), Kind("b", nothing, "x", needs=short)
    c = Kind("c", nothing, "x", needs=lambda c, cfg, facts: "other", check="c (some)")
    assert [k.name for k in judging_order((a, b, c))] == ["b", "a", "c"]
    assert not_judged(prepare([]), DiagnoseConfig(), Facts(), (a, b, c)) == [
        {"check": "a, b", "reason": "too short"}, {"check": "c (some)", "reason": "other"}]
    with pytest.raises(ValueError, match="wait on each other"):
        judging_order((Kind("a", nothing, "x", after=("b",)), Kind("b", nothing, "x", after=("a",))))
    assert [n["check"] for n in assess([]).not_judged] == [
        "spike", "divergence (sustained rise)", "plateau, stalled", "overfitting, val_noisy", "memorization",
        "low_initial_loss", "epochs_beyond_plan"]
    assert len(KINDS) == 9
