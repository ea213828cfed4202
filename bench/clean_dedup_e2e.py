"""Benchmark: the whole `make clean-dedup`, as a user runs it, against the bare-trafilatura floor.

    python bench/clean_dedup_e2e.py [--sizes small,large] [--copies 28] [--width 2] [--no-one-file] [--executors spark,local]

Two corpora of real pages (the shared extraction sets plus the bundled sample's crawls), packed
into gzipped WARCs, each page under a URL of its own per copy:
  small  about 1.5k records in 8 files: every page twice, the second copy with 2 % of its words
         replaced;
  large  20k+ records in 16 files: `--copies` copies of every page, copy 1 as above, the others
         with 0, 1, 3, 10 or 30 % of their words replaced in turn, so dedup has real work (exact
         and near duplicates to find) but far from all documents are duplicates.
For each size, in one run: the floor (`trafilatura.extract` alone in a `--width` process pool over
the same decoded pages: no WARC, no charset detection, no cleaning, no Spark, no Parquet), then the
command, alternated `--rounds` times (small; `--large-rounds` for large) with the best of each side
reported, since a shared machine's noise (±20 % between identical runs here) is bigger than the
effects measured. The command is `make clean-dedup FRESH=1 SPARK_MASTER=local[width]`, timed from
start to exit, peak RSS of the driver's JVM and Python process sampled every 0.2 s. It prints the
ratio floor / command (targets: >= 0.5 at 1.5k, >= 0.8 at 20k), the stages' walls and where the rest went (config check,
JVM and driver start, Spark session, between stages, shutdown). With the large size it also packs
all its records into ONE WARC and times the extract stage alone on it against the same floor
(target >= 0.7: one big file must use every core).

Results go to build/bench/clean_dedup_e2e.json.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from extract_clean import find_pages, read_page, run_floor  # noqa: E402
from pipeline.read.warc import iter_records  # noqa: E402
from pipeline.read.warc_writer import write_html_warc  # noqa: E402

DEFAULT_PAGES = [REPO.parent / "shared" / "data" / "extraction"]
# floor / command, per engine and size: the bare-trafilatura floor is the same for every engine
TARGETS = {"trafilatura": {"small": 0.5, "large": 0.9}, "resiliparse": {"small": 2.5, "large": 2.5}}
RATES = (0.0, 0.01, 0.03, 0.1, 0.3)   # share of words replaced in copy k (k >= 1), in turn
_TEXT = re.compile(r">([^<>]{40,})<")


def bundled_pages() -> list[bytes]:
    out = []
    for path in sorted((REPO / "examples" / "sample").glob("*.warc.gz")):
        for rec in iter_records(str(path), max_payload_bytes=5_000_000):
            if getattr(rec, "record_type", None) == "response" and rec.payload and b"<" in rec.payload[:2048]:
                out.append(rec.payload)
    return out


def perturb(html: bytes, rate: float, rng: random.Random) -> bytes:
    """Replace about `rate` of the words of the page's text runs with other words of the page."""
    if rate <= 0:
        return html
    text = html.decode("utf-8", "replace")
    vocab = re.findall(r"[A-Za-z]{3,12}", text[:200_000]) or ["lorem"]

    def swap(m: re.Match) -> str:
        words = m.group(1).split(" ")
        return ">" + " ".join(rng.choice(vocab) if w and rng.random() < rate else w for w in words) + "<"
    return _TEXT.sub(swap, text).encode("utf-8")


def build_corpus(pages: list[bytes], copies: int, n_files: int, out: Path, rates=RATES) -> list[bytes]:
    """WARC files under `out`; returns the HTML of every record, in the floor's order."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    items = []
    for k in range(copies):
        # copy 0 is the page, copy 1 a light edit of it, the others cycle through `rates`
        rate = 0.0 if k == 0 else 0.02 if k == 1 else rates[(k - 2) % len(rates)]
        rng = random.Random(k)
        for i, html in enumerate(pages):
            body = perturb(html, rate, rng)
            items.append((f"https://bench.example/c{k}/{i}", body, "2024-01-01T00:00:00Z"))
    random.Random(0).shuffle(items)  # copies of a page land in different files, as in a crawl
    for f in range(n_files):
        write_html_warc(str(out / f"crawl-{f:03d}.warc.gz"), items[f::n_files])
    return [html for _, html, _ in items]


def write_config(warcs: str, path: Path, split_bytes: int | None = None, engine: str | None = None) -> Path:
    text = (REPO / "examples" / "sample.yaml").read_text()
    text = text.replace('paths: ["examples/sample/*.warc.gz"]', f'paths: ["{warcs}"]')
    if split_bytes:
        text = text.replace("extract:\n", f"extract:\n  split_bytes: {split_bytes}\n", 1)
    if engine:
        text = text.replace("extract:\n", f"extract:\n  engine: {engine}\n", 1)
    text = re.sub(r"  cc:\n(    .*\n)+", "", text)  # web pages only
    path.write_text(text)
    return path


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _rss_mb(pid: int) -> tuple[str, float]:
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode("utf-8", "replace")
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return cmd, int(line.split()[1]) / 1024
    except OSError:
        pass
    return "", 0.0


def run_command(config: Path, data: Path, width: int, executor: str = "auto") -> dict:
    """`make clean-dedup` from start to exit, with the driver's peak RSS sampled."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    t0 = time.time()
    proc = subprocess.Popen(["make", "--no-print-directory", "clean-dedup", f"CONFIG={config}", f"DATA={data}",
                             f"SPARK_MASTER=local[{width}]", "FRESH=1", f"EXECUTOR={executor}"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = {"jvm_mb": 0.0, "python_driver_mb": 0.0}
    stop = threading.Event()

    def sample():
        while not stop.wait(0.2):
            for pid in _tree(proc.pid):
                cmd, mb = _rss_mb(pid)
                if "java" in cmd and "SparkSubmit" in cmd:
                    peak["jvm_mb"] = max(peak["jvm_mb"], mb)
                elif "jobs/clean_dedup.py" in cmd and "SparkSubmit" not in cmd:  # local path: its biggest process
                    peak["python_driver_mb"] = max(peak["python_driver_mb"], mb)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = proc.communicate()[0]
    t1 = time.time()
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        sys.exit(f"make clean-dedup failed:\n{output[-5000:]}")
    run, stages, rest = run_times(data, t0, t1)
    counts = {s["stage"]: [s["records_in"], s["records_out"]] for s in run["stages"]}
    return {"wall_s": round(t1 - t0, 2), "executor": run.get("executor", "spark"), "stages_s": stages, "rest_s": {k: round(v, 2) for k, v in rest.items()},
            "records": counts, "peak_rss_mb": {k: round(v) for k, v in peak.items()},
            "peak_driver_rss_mb": round(peak["jvm_mb"] + peak["python_driver_mb"]), "log_tail": output[-2500:]}


def run_times(data: Path, t0: float, t1: float) -> tuple[dict, dict, dict]:
    """(stats/run.json, the stages' walls, where the rest went) of one `make clean-dedup` timed from t0 to t1 by
    the shell's clock."""
    run = json.loads((data / "stats" / "run.json").read_text())
    stages = {s["stage"]: s["wall_s"] for s in run["stages"]}
    rest = {
        "before the driver (make, config check, spark-submit JVM, Python start)": run["driver_started_at"] - t0,
        "driver imports and config check": run["config_checked_at"] - run["driver_started_at"],
        "Spark session (local path: its process pool)": run["session_s"],
        "between stages": run["finished_at"] - run["config_checked_at"] - run["session_s"] - sum(stages.values()),
        "after the stages (summary, Spark shutdown, exit)": t1 - run["finished_at"],
    }
    return run, stages, rest


def time_config_check(config: Path) -> float:
    t0 = time.time()
    subprocess.run([str(REPO / ".venv" / "bin" / "glassbox"), "config", "check", "--kind", "pipeline", str(config)],
                   cwd=REPO, check=True, capture_output=True)
    return round(time.time() - t0, 2)


def one_file_extract(warc_dir: Path, work: Path, width: int, split_bytes: int | None = None) -> dict:
    """Every record of the large corpus in one WARC; the extract stage alone on it."""
    one = work / "one-file"
    shutil.rmtree(one, ignore_errors=True)
    one.mkdir(parents=True)
    with open(one / "all.warc.gz", "wb") as out:  # gzip members concatenate into one valid file
        for f in sorted(warc_dir.glob("*.warc.gz")):
            with open(f, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
    config = write_config(str(one / "all.warc.gz"), work / "one-file.yaml", split_bytes)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    data = work / "one-file-data"
    shutil.rmtree(data, ignore_errors=True)
    submit = subprocess.run(["make", "-s", "spark-submit-command"], cwd=REPO, env=env, check=True,
                            capture_output=True, text=True).stdout.strip()  # as the make targets submit
    cmd = f"{submit} --master 'local[{width}]' --driver-memory 4g jobs/extract.py --config {config} --data {data}"
    subprocess.run(["bash", "-c", cmd], cwd=REPO, env=env, check=True, capture_output=True)
    stats = json.loads((data / "stats" / "extract.json").read_text())
    return {"file_mb": round((one / "all.warc.gz").stat().st_size / 1e6, 1), "records": stats["records_in"],
            "units": stats["extra"]["units"], "extract_wall_s": stats["wall_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=Path, action="append", help="folder of .html/.html.gz pages (repeatable)")
    ap.add_argument("--sizes", default="small,large")
    ap.add_argument("--copies", type=int, default=28, help="copies of every page in the large corpus")
    ap.add_argument("--width", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="small size: floor and command alternated this often, "
                    "best of each reported (the machines are shared and noisy)")
    ap.add_argument("--large-rounds", type=int, default=1, help="the same for the large size")
    ap.add_argument("--no-one-file", action="store_true")
    ap.add_argument("--one-file-sizes", default="large", help="sizes whose records also go through one WARC")
    ap.add_argument("--split-bytes", type=int, help="extract.split_bytes for the one-file run (default: config's)")
    ap.add_argument("--no-command", action="store_true", help="skip make clean-dedup (floor and one file only)")
    ap.add_argument("--engines", default="trafilatura,resiliparse",
                    help="extract.engine of the command, one command per engine in every round (same floor)")
    ap.add_argument("--work", type=Path, default=REPO / "build" / "bench" / "e2e")
    ap.add_argument("--executors", default="auto",
                    help="EXECUTOR= of each command (auto, local, spark; comma-separated: each engine with each, "
                         "alternated in every round, e.g. spark,local for the JVM path against the local one)")
    args = ap.parse_args()

    pages = [read_page(p) for p in find_pages(args.pages or DEFAULT_PAGES)] + bundled_pages()
    executors = args.executors.split(",")
    # an engine alone, or engine+executor when several executors are compared
    engines = [e if len(executors) == 1 else f"{e}+{x}" for e in args.engines.split(",") for x in executors]
    results = {"pages": len(pages), "width": args.width, "engines": engines, "sizes": {}}
    for size in args.sizes.split(","):
        copies, n_files = (2, 8) if size == "small" else (args.copies, 16)
        warcs = args.work / size / "warcs"
        htmls = build_corpus(pages, copies, n_files, warcs)
        configs = {e: write_config(str(warcs / "*.warc.gz"), args.work / f"{size}-{e.split('+')[0]}.yaml",
                                   engine=e.split("+")[0]) for e in engines}
        print(f"== {size}: {len(htmls)} records in {n_files} files", flush=True)
        rounds = args.rounds if size == "small" else args.large_rounds
        floors, cmds = [], {e: [] for e in engines}
        for r in range(rounds):  # alternate, so that a noisy minute weighs on both sides
            floors.append(run_floor([h.decode("utf-8", "replace") for h in htmls], args.width))
            print(f"   floor (bare trafilatura, {args.width} processes): {floors[-1]:.1f}s", flush=True)
            if not args.no_command:
                for e in engines:
                    executor = e.split("+")[1] if "+" in e else executors[0]
                    cmds[e].append(run_command(configs[e], args.work / size / "data", args.width, executor))
                    print(f"   make clean-dedup, extract.engine {e}: {cmds[e][-1]['wall_s']:.1f}s "
                          f"(stages: " + ", ".join(f"{k} {v:.1f}s" for k, v in cmds[e][-1]["stages_s"].items())
                          + ")", flush=True)
        floor_s = min(floors)  # best of the rounds on each side, as timeit reports
        entry = {"records": len(htmls), "files": n_files, "floor_s": round(floor_s, 2),
                 "floor_rounds_s": [round(f, 2) for f in floors], "engines": {}}
        for e in ([] if args.no_command else engines):
            cmd = min(cmds[e], key=lambda c: c["wall_s"])
            cmd["rounds_s"] = [c["wall_s"] for c in cmds[e]]
            cmd["ratio_rounds"] = [round(f / c["wall_s"], 3) for f, c in zip(floors, cmds[e])]
            cmd["config_check_alone_s"] = time_config_check(configs[e])
            ratio = floor_s / cmd["wall_s"]
            target = TARGETS.get(e.split("+")[0], {}).get(size)
            print(f"   {e}: best of {rounds}: floor {floor_s:.1f}s, make clean-dedup {cmd['wall_s']:.1f}s = "
                  f"{ratio:.2f} x floor (target {target}); per round {cmd['ratio_rounds']}", flush=True)
            print("   stages: " + ", ".join(f"{k} {v:.1f}s" for k, v in cmd["stages_s"].items()))
            print("   rest:   " + "; ".join(f"{k} {v:.1f}s" for k, v in cmd["rest_s"].items()))
            print(f"   config check alone: {cmd['config_check_alone_s']}s;  peak driver RSS: "
                  f"{cmd['peak_driver_rss_mb']} MB (JVM {cmd['peak_rss_mb']['jvm_mb']}, "
                  f"Python {cmd['peak_rss_mb']['python_driver_mb']})", flush=True)
            entry["engines"][e] = {"command": cmd, "ratio": round(ratio, 3), "target": target}
        if engines and not args.no_command:  # the first engine's figures where earlier results had them
            entry.update({k: entry["engines"][engines[0]][k] for k in ("command", "ratio", "target")})
        if size in args.one_file_sizes.split(",") and not args.no_one_file:
            one = one_file_extract(warcs, args.work / size, args.width, args.split_bytes)
            one["ratio"] = round(floor_s / one["extract_wall_s"], 3)
            entry["one_file"] = one
            print(f"   one WARC of {one['records']} records ({one['file_mb']} MB, {one['units']} units): "
                  f"extract {one['extract_wall_s']:.1f}s = {one['ratio']:.2f} x floor (target 0.7)", flush=True)
        results["sizes"][size] = entry
        args.work.mkdir(parents=True, exist_ok=True)
        (args.work.parent / "clean_dedup_e2e.json").write_text(json.dumps(results, indent=2) + "\n")
    s = results["sizes"]
    if all(k in s and "command" in s[k] for k in ("small", "large")):
        r = s["large"]["command"]["peak_driver_rss_mb"] / max(1, s["small"]["command"]["peak_driver_rss_mb"])
        results["rss_large_over_small"] = round(r, 2)
        print(f"peak driver RSS, large / small: {r:.2f} (target <= 1.2)")
        (args.work.parent / "clean_dedup_e2e.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
