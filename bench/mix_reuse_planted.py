"""Mixture reuse measured against a full search on a planted law (docs/mixture-search.md, "Mixture reuse").

The planted log-linear law of tests/mixsearch/test_fit.py (three domains code, prose, web; two targets). A full
search: 15 rows over the three domains. Reuse: an old search over {prose, web} (10 rows, the mixture before code
existed), its proposal frozen as one domain, then 5 new rows over {frozen, code}. Each proposal is scored by the
true law against the true optimum (a dense grid), over 5 draws of rows (noise 0.002).

    .venv/bin/python bench/mix_reuse_planted.py
"""
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "mixsearch")]
import numpy as np

from test_fit import TRUE, AVAILABLE, law, grid_optimum
from mixsearch.fit import run_fit
D = ["code", "prose", "web"]
obj = lambda r: float((law("python", r) + law("novels", r))[0] / 2)
tmp = Path(tempfile.mkdtemp())
natural = np.array([AVAILABLE[d] for d in D], float); natural /= natural.sum()
def rows_for(ws, names, expand, seed):
    rng = np.random.default_rng(seed); out = []
    for i, w in enumerate(ws):
        r = expand(w)
        out.append({"run": f"p{i}", "weights": dict(zip(names, map(float, w))), "tokens": 1, "seed": i,
                    "losses": {t: float(law(t, r)[0] + rng.normal(0, 0.002)) for t in TRUE}})
    return out
def write(p, rows): p.write_text("".join(json.dumps(r) + "\n" for r in rows))
res = {}
for seed in range(5):
    rng = np.random.default_rng(100 + seed)
    # full search: 15 rows over 3 domains
    full = rows_for(rng.dirichlet(natural * 4 + 0.3, 15), D, lambda w: w, seed)
    write(tmp / "full.jsonl", full)
    pf = run_fit(str(tmp / "full.jsonl"), str(tmp / "full"), kind="loglinear")
    rf = np.array([pf["weights"][d] for d in D])
    # old search without code: 10 rows over {prose, web}
    nat2 = natural[1:] / natural[1:].sum()
    old = rows_for(rng.dirichlet(nat2 * 4 + 0.3, 10), ["prose", "web"], lambda w: np.array([0, w[0], w[1]]), seed + 10)
    write(tmp / "old.jsonl", old)
    po = run_fit(str(tmp / "old.jsonl"), str(tmp / "old"), kind="loglinear")
    frozen = np.array([po["weights"]["prose"], po["weights"]["web"]])
    # reuse: 5 rows over {searched, code}
    nat_r = np.array([natural[1] + natural[2], natural[0]])
    reuse = rows_for(rng.dirichlet(nat_r * 4 + 0.3, 5), ["searched", "code"],
                     lambda w: np.array([w[1], w[0] * frozen[0], w[0] * frozen[1]]), seed + 20)
    write(tmp / "reuse.jsonl", reuse)
    pr = run_fit(str(tmp / "reuse.jsonl"), str(tmp / "reuse"), kind="loglinear")
    rr = np.array([pr["weights"]["code"], pr["weights"]["searched"] * frozen[0], pr["weights"]["searched"] * frozen[1]])
    truth = grid_optimum(np.zeros(3), np.ones(3))
    res[seed] = (obj(truth), obj(rf), obj(rr), obj(natural), np.abs(rf - truth).sum(), np.abs(rr - truth).sum())
    print(seed, [round(x, 4) for x in res[seed]], "full", np.round(rf, 3), "reuse", np.round(rr, 3), "truth", truth)
a = np.array(list(res.values()))
print("mean true objective: optimum %.4f full %.4f reuse %.4f natural %.4f; L1 to optimum full %.3f reuse %.3f" % tuple(a.mean(0)))
