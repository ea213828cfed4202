"""glassbox mix-search fit on synthetic swarms: a planted log-linear law is recovered and its constrained optimum
found (within 0.05 L1 of the true one, found here by a dense grid), the proposer never plans a domain beyond
max_epochs, and every bad input gets a message naming the row or key (never a traceback, never a proposal)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mixsearch.fit import main, run_fit
from mixsearch.propose import bounds, minimise, project
from mixsearch.rows import SwarmError, load_swarm

DOMAINS = ["code", "prose", "web"]
TRUE = {  # target: (c, k, t) of L = c + k exp(t . r)
    "python": (0.9, 1.2, np.array([-2.5, 0.4, 0.3])),
    "novels": (1.1, 0.9, np.array([0.5, -2.0, -0.4])),
}
AVAILABLE = {"code": 30_000, "prose": 200_000, "web": 400_000}
BUDGET, MAX_EPOCHS = 200_000, 2.0           # code's cap: 2 x 30k / 200k = 0.30 of the budget


def law(target: str, r: np.ndarray) -> np.ndarray:
    c, k, t = TRUE[target]
    return c + k * np.exp(np.atleast_2d(r) @ t)


def write_swarm(path, n=15, noise=0.002, seed=0, rows=None):
    rng = np.random.default_rng(seed)
    natural = np.array([AVAILABLE[d] for d in DOMAINS], float)
    natural /= natural.sum()
    out = []
    for i in range(n):
        r = rng.dirichlet(natural * 4 + 0.3)
        losses = {t: float(law(t, r)[0] + rng.normal(0, noise)) for t in TRUE}
        out.append({"run": f"p{i:02d}", "weights": dict(zip(DOMAINS, map(float, r))), "tokens": 163840, "seed": i,
                    "losses": losses})
    for row in rows or []:
        out.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return out


def grid_optimum(lo: np.ndarray, hi: np.ndarray, step: float = 0.0025) -> np.ndarray:
    best, best_v = None, np.inf
    for a in np.arange(0, 1 + 1e-9, step):
        b = np.arange(0, 1 - a + 1e-9, step)
        r = np.stack([np.full_like(b, a), b, 1 - a - b], axis=1)
        ok = np.all((r >= lo - 1e-12) & (r <= hi + 1e-12), axis=1)
        if not ok.any():
            continue
        r = r[ok]
        v = (law("python", r) + law("novels", r)) / 2
        i = int(np.argmin(v))
        if v[i] < best_v:
            best, best_v = r[i], v[i]
    return best


def test_a_planted_law_is_recovered_and_its_constrained_optimum_found(tmp_path):
    swarm = tmp_path / "swarm.jsonl"
    write_swarm(swarm)
    avail = tmp_path / "available.json"
    avail.write_text(json.dumps(AVAILABLE))
    prop = run_fit(str(swarm), str(tmp_path / "out"), available=str(avail), budget=BUDGET, max_epochs=MAX_EPOCHS,
                   min_weight=0.02, kind="loglinear")
    r = np.array([prop["weights"][d] for d in DOMAINS])
    lo = np.full(3, 0.02)
    hi = np.array([min(1.0, MAX_EPOCHS * AVAILABLE[d] / BUDGET) for d in DOMAINS])
    truth = grid_optimum(lo, hi)
    assert np.abs(r - truth).sum() < 0.05, (r, truth)
    assert prop["constraints"]["binding"].get("code") == "max_epochs"       # the cap binds, and says so
    assert prop["weights"]["code"] * BUDGET <= MAX_EPOCHS * AVAILABLE["code"]
    for t in TRUE:
        assert prop["predicted"][t] == pytest.approx(float(law(t, r)[0]), abs=0.01)
    assert prop["fit"]["kind"] == "loglinear" and prop["fit"]["cv_spearman"] > 0.95
    on_disk = json.loads((tmp_path / "out" / "proposal.json").read_text())
    assert on_disk["weights"] == prop["weights"]
    fit = json.loads((tmp_path / "out" / "fit.json").read_text())
    assert len(fit["rows"]) == 15 and set(fit["rows"][0]["cv_predicted"]) == set(TRUE)
    assert "warning" not in prop["fit"]


def test_a_fit_that_ranks_no_better_than_chance_says_so(tmp_path, capsys):
    """Losses that do not depend on the weights (noise only, as in a reuse swarm whose draws barely vary the new
    source): the cross-validated rank correlation is not above 0 and the proposal carries a warning."""
    rng = np.random.default_rng(3)
    rows = [{"run": f"p{i}", "weights": {"a": float(w), "b": float(1 - w)}, "tokens": 1, "seed": i,
             "losses": {"x": float(3 + rng.normal(0, 0.05))}} for i, w in enumerate(rng.uniform(0, 0.03, 5))]
    swarm = tmp_path / "swarm.jsonl"
    swarm.write_text("".join(json.dumps(r) + "\n" for r in rows))
    prop = run_fit(str(swarm), str(tmp_path / "out"))
    if prop["fit"]["cv_spearman"] > 0:          # chance can rank 5 noisy rows; this seed does not
        pytest.skip(f"cv_spearman {prop['fit']['cv_spearman']}")
    assert "no learner ranks the swarm's rows better than chance" in prop["fit"]["warning"]
    assert main([str(swarm), "--out", str(tmp_path / "again")]) == 0
    assert "warning: the fit's" in capsys.readouterr().out


def test_the_proposer_never_breaks_max_epochs():
    """Random laws, availabilities, budgets and floors: the proposal is a mixture inside every cap."""
    from mixsearch.law import LogLinear

    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(40):
        n = int(rng.integers(2, 6))
        doms = [f"d{j}" for j in range(n)]
        avail = {d: int(rng.integers(1_000, 100_000)) for d in doms}
        budget = int(rng.integers(10_000, 400_000))
        mx = float(rng.choice([1.0, 2.0, 4.0]))
        mw = float(rng.choice([0.0, 0.01]))
        try:
            b = bounds(doms, mw, avail, budget, mx)
        except SwarmError as e:
            assert "no mixture" in str(e) or "more than the domains hold" in str(e)
            continue
        models = [LogLinear(c=1.0, sign=1.0, t=rng.normal(0, 3, n)) for _ in range(2)]
        r, _ = minimise(models, np.array([0.5, 0.5]), b, [np.full(n, 1 / n)], seed=trial)
        assert abs(r.sum() - 1) < 1e-9 and np.all(r >= mw - 1e-12)
        for j, d in enumerate(doms):
            assert r[j] * budget <= mx * avail[d] * (1 + 1e-12), (trial, d)
        checked += 1
    assert checked >= 20
    # the projection alone keeps the caps too, from anywhere
    b = bounds(["a", "b", "c"], 0.0, {"a": 10, "b": 10, "c": 1000}, 100, 2.0)
    for x in rng.normal(0, 5, (50, 3)):
        r = project(x, b)
        assert r[0] <= 0.2 + 1e-15 and r[1] <= 0.2 + 1e-15 and abs(r.sum() - 1) < 1e-12


def _err(capsys, *args):
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    return err


def test_bad_input_names_the_row_or_key(tmp_path, capsys):
    out = tmp_path / "out"
    few = tmp_path / "few.jsonl"
    write_swarm(few, n=3)
    assert "3 rows for 3 domains" in _err(capsys, few, "--out", out)
    bad_sum = tmp_path / "sum.jsonl"
    write_swarm(bad_sum, rows=[{"run": "odd", "weights": {"code": 0.5, "prose": 0.4, "web": 0.3},
                                "losses": {"python": 1.0, "novels": 1.0}}])
    err = _err(capsys, bad_sum, "--out", out)
    assert "sum.jsonl:16 (run odd)" in err and "sum to 1.200000" in err
    unknown = tmp_path / "unknown.jsonl"
    write_swarm(unknown, rows=[{"run": "u", "weights": {"code": 0.5, "math": 0.5}, "losses": {"python": 1.0,
                                                                                          "novels": 1.0}}])
    avail = tmp_path / "a.json"
    avail.write_text(json.dumps(AVAILABLE))
    assert "weights.math names a domain" in _err(capsys, unknown, "--out", out, "--available", avail)
    missing = tmp_path / "missing.jsonl"
    write_swarm(missing, rows=[{"run": "m", "weights": {"code": 0.2, "prose": 0.3, "web": 0.5},
                                "losses": {"python": 1.0}}])
    assert "(run m): losses.novels is missing" in _err(capsys, missing, "--out", out)
    nan = tmp_path / "nan.jsonl"
    write_swarm(nan, rows=[{"run": "n", "weights": {"code": 0.2, "prose": 0.3, "web": 0.5},
                            "losses": {"python": float("nan"), "novels": 1.0}}])
    assert "(run n): losses.python is nan, not a finite number" in _err(capsys, nan, "--out", out)
    good = tmp_path / "good.jsonl"
    write_swarm(good)
    err = _err(capsys, good, "--out", out, "--available", avail, "--budget", "5M", "--max-epochs", "2")
    assert "more than the domains hold at --max-epochs 2" in err
    err = _err(capsys, good, "--out", out, "--available", avail, "--budget", "1M", "--max-epochs", "2",
               "--min-weight", "0.1")
    assert "domain 'code'" in err and "below --min-weight 0.1" in err
    assert "lower --min-weight below" in _err(capsys, good, "--out", out, "--min-weight", "0.4")
    assert not (out / "proposal.json").exists()                  # no silent proposal from any of them
    assert main([str(good), "--out", str(out)]) == 0 and (out / "proposal.json").is_file()


def test_swarm_reader_checks_rows(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"run": "a", "weights": {"x": 1.0}, "losses": {"t": 1.0}}\nnot json\n')
    with pytest.raises(SwarmError, match=r"s.jsonl:2: not a JSON object"):
        load_swarm(str(p))
    p.write_text('{"run": "a", "weights": {"x": -0.5, "y": 1.5}, "losses": {"t": 1.0}}\n')
    with pytest.raises(SwarmError, match="weights.x is -0.5, a negative share"):
        load_swarm(str(p))
