"""`make tokenize` and `make mix` of a small corpus, without the JVM (EXECUTOR=auto: what a user gets) against the
Spark path (EXECUTOR=spark) in the same run (issue 42, docs/benchmarks.md).

    python bench/tokenize_mix_small.py [--config examples/sample.yaml] [--mix mixes/sample.yaml] [--rounds 3]

`make clean-dedup` of the config runs once (not timed). Then, `--rounds` times, for each executor (alternated, the
order reversed every other round): a fresh DATA folder holding that dedup/ and its stats, `make tokenize` and
`make mix` timed from the shell, command start to exit. Every run's tokenized/ files (sha256 each) and manifest must
be the same bytes as the first run's, or the bench fails. Prints the walls (median, min-max), the ratio of the
medians and which executor each run reported (stats/tokenize.json); writes build/bench/tokenize_mix_small.json.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def make(*args: str, env: dict) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"make {' '.join(args)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return wall


def digest(data: Path) -> dict[str, str]:
    files = sorted(p for p in (data / "tokenized").rglob("*") if p.is_file()) + sorted((data / "manifests").glob("*.json"))
    return {str(p.relative_to(data)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="examples/sample.yaml")
    ap.add_argument("--mix", default="mixes/sample.yaml")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="build/bench/tokenize_mix_small")
    args = ap.parse_args()
    work = REPO / args.work
    shutil.rmtree(work, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_", "GLASSBOX_"))}
    env["SPARK_MASTER"] = os.environ.get("SPARK_MASTER", "local[2]")
    base = work / "base"
    make("clean-dedup", f"CONFIG={args.config}", f"DATA={base}", env=env)

    walls: dict[str, dict[str, list[float]]] = {e: {"tokenize": [], "mix": []} for e in ("auto", "spark")}
    chosen: dict[str, set] = {e: set() for e in walls}
    want = None
    for r in range(args.rounds):
        for executor in (("auto", "spark") if r % 2 == 0 else ("spark", "auto")):
            data = work / f"{executor}-{r}"
            shutil.rmtree(data, ignore_errors=True)
            data.mkdir(parents=True)
            shutil.copytree(base / "dedup", data / "dedup")
            shutil.copytree(base / "stats", data / "stats")
            common = (f"DATA={data}", f"EXECUTOR={executor}")
            walls[executor]["tokenize"].append(make("tokenize", f"CONFIG={args.config}", *common, env=env))
            walls[executor]["mix"].append(make("mix", f"MIX={args.mix}", f"CONFIG={args.config}", *common, env=env))
            chosen[executor].add(json.loads((data / "stats" / "tokenize.json").read_text())["extra"]["executor"])
            got = digest(data)
            want = want or got
            if got != want:
                sys.exit(f"{data}: tokenized/ or the manifest differ from the first run's")
            print(f"round {r + 1} {executor:5s} tokenize {walls[executor]['tokenize'][-1]:6.2f} s  "
                  f"mix {walls[executor]['mix'][-1]:6.2f} s  (load {os.getloadavg()[0]:.1f})", flush=True)

    med = {e: {k: statistics.median(v) for k, v in w.items()} for e, w in walls.items()}
    print(f"\n{args.config}, {args.rounds} rounds, {len(want)} output files the same bytes in every run")
    print(f"{'executor':28s} {'tokenize':>22s} {'mix':>22s}")
    for e, w in walls.items():
        cells = [f"{med[e][k]:6.2f} ({min(v):.2f}-{max(v):.2f})" for k, v in w.items()]
        print(f"{e + ' (ran: ' + ','.join(sorted(chosen[e])) + ')':28s} {cells[0]:>22s} {cells[1]:>22s}")
    ratio = {k: med["auto"][k] / med["spark"][k] for k in ("tokenize", "mix")}
    print(f"auto / spark: tokenize {ratio['tokenize']:.3f}, mix {ratio['mix']:.3f}")
    out = REPO / "build" / "bench" / "tokenize_mix_small.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": args.config, "rounds": args.rounds, "walls": walls,
                               "chosen": {e: sorted(c) for e, c in chosen.items()}, "ratio": ratio}, indent=2))


if __name__ == "__main__":
    main()
