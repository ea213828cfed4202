"""Incremental dedup as a whole command (issue 42): `make clean-dedup` of a new crawl B with
`dedup.against: [A]` against `make clean-dedup` of A and B together from scratch, both timed from the
shell, command start to exit.

    python bench/incremental_whole.py [--new 1000] [--old-per-new 10] [--rounds 3] [--executors auto,spark]

The corpora are bench/incremental_dedup.py's `crawls()` (bench/dedup_scale.py's planted families, cut at
random into A, about 10 n documents, and B, about n, with 1 % of B records of A fetched again), written
as a user has them after extraction: gzipped JSONL files (`id`, `text`) of one source `web`, two files
each. A is built first with `make clean-dedup` (not timed). Then, `--rounds` times, each executor in
`--executors` (EXECUTOR=auto is what a user gets; which one it chose is read from stats/run.json):
  incremental  `make clean-dedup CONFIG=b.yaml DATA=...` (B's files, `dedup.against: [A's DATA]`);
  full         `make clean-dedup CONFIG=full.yaml DATA=...` (A's files and B's, from scratch);
alternated (the order of the runs is reversed every other round), each into a DATA folder emptied
before the clock starts. The machine is shared: the load average is recorded around every run.

The config is examples/sample.yaml's extract, clean, score and dedup sections (the quality classifiers
on, as a user has them). Its keep rule ranks documents by their classifier score, so the full run may
keep a new document and drop the old one it repeats, which an incremental run never does
(docs/incremental-dedup.md): the agreement on B under that config is reported as measured (`scored`).
The decisions check proper (`--check`, once per executor, untimed) runs the same pair with the
classifiers off, so both runs rank by id alone, and gives A's documents ids that sort before B's (the
JSONL `id` field is chosen so; a document's id is a hash of it): then the full run ranks A first, as the
incremental one does, and precision, recall and the same `duplicate_of` on B (bench/incremental_dedup.py's
`agreement`) must all be 1.000. B's re-fetched records of A are left out of the agreement (the full run's
extract stage rejects the second copy as `repeated_record` before dedup; the incremental run's dedup
stage does); how the incremental run decides them is reported beside it.

Prints a table and writes build/bench/incremental_whole.json.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.clean_dedup_e2e import run_times  # noqa: E402
from bench.incremental_dedup import agreement, crawls, decisions  # noqa: E402
from pipeline.read.ids import doc_id  # noqa: E402

SOURCE = "web"


def ground_ids(docs: list[dict], old: bool) -> None:
    """Give every document a JSONL id whose document id (a hash of source, id and text) sorts in A's half
    (first hex digit 0-7) or B's (8-f): ranked by id alone, every A document comes before every B one."""
    for d in docs:
        k = 0
        while True:
            sid = f"{d['id']}-{k}"
            did = doc_id(SOURCE, sid, content=d["text"])
            if (did[0] < "8") == old:
                d["sid"], d["did"] = sid, did
                break
            k += 1


def write_jsonl(docs: list[dict], folder: Path, files: int = 2) -> list[str]:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    chunk = -(-len(docs) // files)
    out = []
    for i in range(files):
        path = folder / f"part-{i:05d}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for d in docs[i * chunk:(i + 1) * chunk]:
                fh.write(json.dumps({"id": d["sid"], "text": d["text"]}) + "\n")
        out.append(str(path))
    return out


def write_config(path: Path, folders: list[Path], against: list[Path], classifiers: bool) -> Path:
    import yaml

    base = yaml.safe_load((REPO / "examples" / "sample.yaml").read_text())
    cfg = {k: base[k] for k in ("extract", "clean", "score", "dedup", "spark") if k in base}
    cfg["sources"] = {SOURCE: {"format": "jsonl", "paths": [str(f / "*.jsonl.gz") for f in folders],
                               "text_field": "text", "id_field": "id"}}
    cfg["dedup"] = {**cfg["dedup"], "against": [str(a) for a in against]}
    if not classifiers:
        cfg["score"] = {**cfg["score"], "classifiers": []}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def run_command(config: Path, data: Path, executor: str, width: int) -> dict:
    """`make clean-dedup` from start to exit, as a user types it (into an emptied DATA folder)."""
    shutil.rmtree(data, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["PYTHONPATH"] = str(REPO)   # this checkout's code, also for `glassbox config check`
    load0 = os.getloadavg()[0]
    t0 = time.time()
    proc = subprocess.run(["make", "--no-print-directory", "clean-dedup", f"CONFIG={config}", f"DATA={data}",
                           f"SPARK_MASTER=local[{width}]", f"EXECUTOR={executor}"], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t1 = time.time()
    if proc.returncode != 0:
        sys.exit(f"make clean-dedup failed:\n{proc.stdout[-5000:]}")
    run, stages, rest = run_times(data, t0, t1)
    dedup = json.loads((data / "stats" / "dedup.json").read_text())
    return {"wall_s": round(t1 - t0, 2), "executor": run.get("executor", "spark"),
            "executor_reason": run.get("executor_reason"), "master": run.get("master"),
            "dedup_path": dedup.get("extra", {}).get("path"), "stages_s": stages,
            "rest_s": {k: round(v, 2) for k, v in rest.items()},
            "records": {s["stage"]: [s["records_in"], s["records_out"]] for s in run["stages"]},
            "load_avg": [round(load0, 2), round(os.getloadavg()[0], 2)]}


def rejected_elsewhere(data: Path, ids: set[str]) -> dict[str, tuple[str, str]]:
    """id -> (stage, reason) of the given documents rejected before dedup."""
    import pyarrow.parquet as pq

    out = {}
    for stage in ("extract", "clean", "score"):
        folder = data / "rejected" / f"stage={stage}"
        if folder.exists() and any(folder.rglob("*.parquet")):
            for r in pq.read_table(folder, columns=["id", "reason"]).to_pylist():
                if r["id"] in ids:
                    out[r["id"]] = (stage, r["reason"])
    return out


def compare(inc_data: Path, full_data: Path, new_ids: set[str], refetched: set[str]) -> dict:
    inc, full = decisions(inc_data), decisions(full_data)
    e = agreement(inc, full, new_ids)
    # B documents the incremental run removes for an old one that the full run keeps, dropping that old one
    # instead (its keep rule ranks by score: a better-scored new copy wins there, never in an incremental run)
    only_inc = [i for i in inc if i in new_ids and i not in full]
    e["kept_by_full_over_the_old"] = sum(1 for i in only_inc if inc[i][1] in full and full[inc[i][1]][1] == i)
    e["only_incremental"] = len(only_inc)
    e["rejected_before_dedup_same"] = (rejected_elsewhere(inc_data, new_ids) == rejected_elsewhere(full_data, new_ids))
    e["refetched_in_incremental"] = dict(sorted(_count(inc.get(i, ("kept",))[0] for i in refetched).items()))
    return e


def _count(xs) -> dict:
    out: dict = {}
    for x in xs:
        out[x] = out.get(x, 0) + 1
    return out


def spread(xs: list[float]) -> list[float]:
    return [round(min(xs), 2), round(max(xs), 2)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--new", type=int, default=1000, help="documents of the new crawl B (A: old-per-new times as many)")
    ap.add_argument("--old-per-new", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--executors", default="auto,spark")
    ap.add_argument("--width", type=int, default=2, help="SPARK_MASTER=local[width] (the local executor's processes too)")
    ap.add_argument("--no-check", action="store_true", help="skip the decisions check with the classifiers off")
    ap.add_argument("--work", type=Path, default=REPO / "build" / "bench" / "incremental_whole")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "incremental_whole.json")
    args = ap.parse_args()
    executors = args.executors.split(",")
    w = args.work
    old, new = crawls(args.new, args.old_per_new, seed=args.new)
    refetched_planted = {d["id"] for d in new if d["id"].startswith("a")}
    ground_ids(old, old=True)
    by_planted = {d["id"]: d for d in old}
    ground_ids([d for d in new if d["id"] not in refetched_planted], old=False)
    for d in new:
        if d["id"] in refetched_planted:   # the very record of A again: its id and text
            d["sid"], d["did"] = by_planted[d["id"]]["sid"], by_planted[d["id"]]["did"]
    write_jsonl(old, w / "input" / "A")
    write_jsonl(new, w / "input" / "B")
    refetched = {d["did"] for d in new if d["id"] in refetched_planted}
    new_ids = {d["did"] for d in new} - refetched
    result: dict = {"old_docs": len(old), "new_docs": len(new), "refetched": len(refetched), "width": args.width,
                    "rounds": args.rounds, "executors": executors, "load_avg_start": os.getloadavg(), "runs": {}}

    variants = [("scored", True)] + ([] if args.no_check else [("check", False)])
    for variant, classifiers in variants:
        cfgs = w / "configs" / variant
        a_data = w / variant / "A"
        a_cfg = write_config(cfgs / "a.yaml", [w / "input" / "A"], [], classifiers)
        b_cfg = write_config(cfgs / "b.yaml", [w / "input" / "B"], [a_data], classifiers)
        full_cfg = write_config(cfgs / "full.yaml", [w / "input" / "A", w / "input" / "B"], [], classifiers)
        built = run_command(a_cfg, a_data, "auto", args.width)   # A, not timed
        print(f"[{variant}] A built: {built['wall_s']:.1f}s ({built['executor']}), records {built['records']}", flush=True)
        rounds = args.rounds if variant == "scored" else 1
        runs: dict = {f"{arm}/{ex}": [] for ex in executors for arm in ("incremental", "full")}
        agreements: dict = {}
        for r in range(rounds):
            order = [(arm, ex) for ex in executors for arm in ("incremental", "full")]
            if r % 2:
                order.reverse()
            for arm, ex in order:
                data = w / variant / f"{arm}-{ex}"
                res = run_command(b_cfg if arm == "incremental" else full_cfg, data, ex, args.width)
                res["round"] = r
                runs[f"{arm}/{ex}"].append(res)
                print(f"[{variant}] round {r} {arm:<11} EXECUTOR={ex:<5} {res['wall_s']:>6.1f}s  ran {res['executor']}"
                      f" (dedup {res['dedup_path']})  stages {res['stages_s']}  load {res['load_avg']}", flush=True)
            for ex in executors:
                agreements[ex] = compare(w / variant / f"incremental-{ex}", w / variant / f"full-{ex}", new_ids, refetched)
        same_across = None
        if len(executors) > 1:   # the incremental run's decisions do not depend on the executor
            d0 = decisions(w / variant / f"incremental-{executors[0]}")
            same_across = all(decisions(w / variant / f"incremental-{ex}") == d0 for ex in executors[1:])
        summary: dict = {}
        for ex in executors:
            inc = [x["wall_s"] for x in runs[f"incremental/{ex}"]]
            full = [x["wall_s"] for x in runs[f"full/{ex}"]]
            ratios = [i / f for i, f in zip(inc, full)]
            summary[ex] = {"ran": sorted({x["executor"] for x in runs[f"incremental/{ex}"] + runs[f"full/{ex}"]}),
                           "incremental_median_s": statistics.median(inc), "incremental_spread_s": spread(inc),
                           "full_median_s": statistics.median(full), "full_spread_s": spread(full),
                           "ratio": round(statistics.median(inc) / statistics.median(full), 3),
                           "ratio_spread": [round(min(ratios), 3), round(max(ratios), 3)],
                           "agreement_on_new": agreements[ex]}
            ag = agreements[ex]
            print(f"[{variant}] EXECUTOR={ex:<5} (ran {'/'.join(summary[ex]['ran'])}): incremental "
                  f"{summary[ex]['incremental_median_s']:.1f}s {summary[ex]['incremental_spread_s']}, full "
                  f"{summary[ex]['full_median_s']:.1f}s {summary[ex]['full_spread_s']}, ratio {summary[ex]['ratio']:.3f} "
                  f"{summary[ex]['ratio_spread']}; on B: P {ag['precision']:.4f} R {ag['recall']:.4f} pairs "
                  f"{ag['pairs']:.4f} (removed {ag['removed_incremental']}/{ag['removed_full']}, other "
                  f"{ag['pairs_other']}, named-by-full-removed {ag['other_named_by_full_removed']}; removed only incrementally "
                  f"{ag['only_incremental']}, of which the full run kept over the old document {ag['kept_by_full_over_the_old']}), "
                  f"earlier stages same "
                  f"{ag['rejected_before_dedup_same']}, re-fetched {ag['refetched_in_incremental']}", flush=True)
        result["runs"][variant] = {"build_old": built, "runs": runs, "summary": summary,
                                   "incremental_same_across_executors": same_across}
        if same_across is not None:
            print(f"[{variant}] incremental decisions the same under {', '.join(executors)}: {same_across}", flush=True)
    result["load_avg_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}))


if __name__ == "__main__":
    main()
