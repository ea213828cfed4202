"""Mixture reuse measured on the demo's real proxies (docs/mixture-search.md, "Mixture reuse").

Three searches on data/sample, same proxy (examples/ablate/proxy.yaml, 163,840 tokens), targets and fit:
- the full search over books, web, zh and cc (examples/mix-search/sample.yaml: 20 proxies), verified on seeds 101-103;
- the old search over books, web and zh only (examples/mix-search/reuse-old3.yaml: 15 proxies, no verify);
- reuse: old3's proposal frozen as one virtual domain, 5 proxies over {old3, cc} (examples/mix-search/reuse-cc.yaml),
  verified on the same seeds 101-103.
Training is deterministic for one manifest and seed (the natural arms of the two verify runs are compared here to
check it), so the reuse proposal's verify proxies pair seed by seed with the full search's.

    glassbox mix-search examples/mix-search/sample.yaml                  # or an earlier run of it: --full DIR
    glassbox mix-search examples/mix-search/reuse-old3.yaml --no-verify
    glassbox mix-search examples/mix-search/reuse-cc.yaml
    .venv/bin/python bench/mix_reuse_demo.py --full mix-searches/sample --old mix-searches/reuse-old3 \
        --reuse mix-searches/reuse-cc
"""
import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from ablation import stats  # noqa: E402


def load(d: Path, name: str):
    return json.loads((d / name).read_text())


def rows(d: Path) -> int:
    return sum(1 for line in (d / "swarm.jsonl").read_text().splitlines() if line.strip())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", required=True)
    ap.add_argument("--old", required=True)
    ap.add_argument("--reuse", required=True, action="append", help="a reuse search's folder (repeatable)")
    a = ap.parse_args()
    full, old = Path(a.full), Path(a.old)
    for r in a.reuse:
        report(full, old, Path(r))
    return 0


def report(full: Path, old: Path, reuse: Path) -> None:
    print(f"== {reuse}")
    pf, po, pr = load(full, "fit/proposal.json"), load(old, "fit/proposal.json"), load(reuse, "fit/proposal.json")
    vf, vr = load(full, "verify/results.json"), load(reuse, "verify/results.json")
    assert vf["seeds"] == vr["seeds"], (vf["seeds"], vr["seeds"])
    targets = [t for t in vf["measured"]["proposal"] if t != "mean"]
    drift = max(abs(x - y) for t in targets + ["mean"]
                for x, y in zip(vf["measured"]["natural"][t], vr["measured"]["natural"][t]))
    sources = sorted(pf["weights"])
    print(f"proxies: full search {rows(full)}; reuse {rows(old)} (old search) + {rows(reuse)} (new)")
    print(f"natural arm, full vs reuse verify, largest difference in bpb: {drift:.2e} (0: the arms pair)")
    print(f"{'':<22}" + "".join(f"{s:>9}" for s in sources))
    print(f"{'natural':<22}" + "".join(f"{pf['natural'][s]:>9.4f}" for s in sources))
    print(f"{'full search':<22}" + "".join(f"{pf['weights'][s]:>9.4f}" for s in sources))
    print(f"{'old3 (no cc)':<22}" + "".join(f"{po['weights'].get(s, 0):>9.4f}" for s in sources))
    print(f"{'reuse':<22}" + "".join(f"{pr['sources'][s]:>9.4f}" for s in sources)
          + f"   (over {{old3, cc}}: {json.dumps(pr['weights'])})")
    print("cv_spearman: full %.3f, old3 %.3f, reuse %.3f" % (pf["fit"]["cv_spearman"], po["fit"]["cv_spearman"],
                                                         pr["fit"]["cv_spearman"]))
    print(f"\nverified bpb on seeds {vf['seeds']} (mean over seeds; paired differences, 95% t-interval)")
    print(f"{'target':<12}{'natural':>9}{'full':>9}{'reuse':>9}  {'reuse - full':<34}{'reuse - natural':<34}")
    for t in targets + ["mean"]:
        n, f, r = (vf["measured"]["natural"][t], vf["measured"]["proposal"][t], vr["measured"]["proposal"][t])
        d1, d2 = stats.paired(r, f), stats.paired(r, n)
        cell = lambda p: f"{p.diff:+.4f} [{p.low:+.4f}, {p.high:+.4f}] {p.verdict.replace('within ', '')}"  # noqa
        print(f"{t:<12}{sum(n) / len(n):>9.4f}{sum(f) / len(f):>9.4f}{sum(r) / len(r):>9.4f}  {cell(d1):<34}"
              f"{cell(d2):<34}")
    print("\npredicted (reuse law): " + ", ".join(f"{t} {v:.4f}" for t, v in pr["predicted"].items()))
    print("predicted (full law):  " + ", ".join(f"{t} {v:.4f}" for t, v in pf["predicted"].items()))
    new = [k for k in pr["weights"] if k in pr["sources"]]           # the searched domains that are not frozen
    shares = sorted(round(json.loads(x)["weights"][k], 4) for x in (reuse / "swarm.jsonl").read_text().splitlines()
                    if x.strip() for k in new)
    print(f"the new rows' shares of {', '.join(new)}: {shares}\n")


if __name__ == "__main__":
    sys.exit(main())
