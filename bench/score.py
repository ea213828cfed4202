"""Benchmark: the score stage's speed per byte with one quality classifier against two, side by side on the same
files (issue 32: two classifiers at no less than 0.8 x the per-byte speed of one).

    python bench/score.py [--data data/sample] [--min-mb 2] [--rounds 3] [--width 2] [--stage] [--baseline-tree DIR]

Reads the cleaned documents of a pipeline run (`make demo` makes data/sample: English and Chinese). Record level,
in one process: the score stage's own batch function (pipeline/score/batches.py: classifiers, then KenLM) over the
same Arrow batch, repeated up to --min-mb of text, with `one` (English only, as before per-language models: other
languages unscored), `two` (English and Chinese) and `two_fasttext_kind` (the English model brought as `kind:
fasttext` with DCLM's preparation) classifier configs, alternated --rounds times; and each model alone. With
--stage, jobs/score.py on Spark local[width] with each config, twice each (the first warms the JVM).
With --baseline-tree (a checkout of an earlier commit's pipeline/, glassbox/ and quality_models/default/, e.g.
`git archive 275eff9 pipeline glassbox quality_models/default | tar -x -C build/main-tree`), that tree's score batch
function with its default config against this tree's `two`, each round in two fresh processes in alternating order,
timed in wall seconds and in the process's CPU seconds (the cost per core, steadier on a shared machine), and the
English classifier alone in CPU seconds.
Results in build/bench/score.json; a ratio is two / one (or / baseline) in MB/s, median and range over rounds.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402
import pyarrow.dataset as ds  # noqa: E402

from pipeline.config import parse_config  # noqa: E402
from pipeline.score.batches import score_partition  # noqa: E402
from pipeline.score.quality import get_classifier  # noqa: E402

DEFAULT = "quality_models/default"
CONFIGS = {
    "one": [{"model": f"{DEFAULT}/quality_en.ftz", "languages": ["en"], "column": "quality_en"}],
    "two": [{"model": f"{DEFAULT}/quality_en.ftz", "languages": ["en"], "column": "quality_en"},
            {"model": f"{DEFAULT}/quality_zh.ftz", "languages": ["zh"], "column": "quality_zh"}],
    # the same English model brought as a fastText model trained elsewhere: its label named, DCLM's preparation
    "two_fasttext_kind": [{"model": f"{DEFAULT}/quality_en.ftz", "kind": "fasttext", "languages": ["en"],
                           "column": "quality_en", "positive_label": "__label__hq", "preprocess": "dclm"},
                          {"model": f"{DEFAULT}/quality_zh.ftz", "languages": ["zh"], "column": "quality_zh"}],
}


def config(name: str):
    return parse_config({"sources": {"x": {"format": "text", "paths": [str(REPO / "README.md")]}},
                         "score": {"classifiers": CONFIGS[name]}}, base=REPO)


def record_level(batch: pa.RecordBatch, name: str) -> float:
    cfg = config(name)
    t0 = time.perf_counter()
    list(score_partition(cfg.score, batch.schema)(iter([batch])))
    return time.perf_counter() - t0


# One timing of a tree's own score batch function with its own config classes, in a fresh process.
_CHILD = r"""
import json, os, sys, time
from pathlib import Path
tree, data, min_mb, own = str(Path(sys.argv[1]).resolve()), sys.argv[2], float(sys.argv[3]), sys.argv[4] == "own"
sys.path.insert(0, tree); os.chdir(tree)
import pyarrow as pa, pyarrow.dataset as ds
from pipeline.config import parse_config
from pipeline.score.batches import score_partition
t = ds.dataset(data, format="parquet").to_table(columns=["id", "source", "text", "lang"])
mb1 = sum(len(x.encode()) for x in t.column("text").to_pylist()) / 1e6
batch = pa.concat_tables([t] * (int(min_mb / max(mb1, 1e-9)) + 1)).combine_chunks().to_batches()[0]
score = {} if own else {"classifiers": json.loads(sys.argv[5])}
cfg = parse_config({"sources": {"x": {"format": "text", "paths": ["pipeline/__init__.py"]}}, "score": score},
                   base=Path(tree))
list(score_partition(cfg.score, batch.schema)(iter([batch.slice(0, 40)])))
t0, c0 = time.perf_counter(), time.process_time()
list(score_partition(cfg.score, batch.schema)(iter([batch])))
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
mb = sum(len(x.encode()) for x in batch.column("text").to_pylist()) / 1e6
# the English classifier alone (the kind a fastText model is scored by), CPU time: the cost per core on a busy machine
from pipeline.score.quality import get_classifier
texts = [x for x, l in zip(batch.column("text").to_pylist(), batch.column("lang").to_pylist()) if l == "en"]
clf = get_classifier("quality_models/default/quality_en.ftz")
c0 = time.process_time()
clf.predict_proba(texts, ["en"] * len(texts))
en_mb = sum(len(x.encode()) for x in texts) / 1e6
en_cpu = time.process_time() - c0
print(json.dumps({"mb_per_s": mb / wall, "mb_per_cpu_s": mb / cpu, "en_classifier_mb_per_cpu_s": en_mb / en_cpu}))
"""


def against_baseline(tree: Path, cleaned: Path, rounds: int, min_mb: float) -> dict:
    import subprocess

    def one(which: str) -> float:
        root = tree if which == "baseline" else REPO
        args = [sys.executable, "-c", _CHILD, str(root), str(cleaned.resolve()), str(min_mb),
                "own" if which == "baseline" else "two", json.dumps(CONFIGS["two"])]
        r = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
        if r.returncode:
            sys.exit(f"{which} run failed:\n{r.stderr[-2000:]}")
        return {k: round(v, 3) for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()}

    got = {"baseline": [], "two": []}
    for k in range(rounds):
        for which in (("baseline", "two") if k % 2 == 0 else ("two", "baseline")):
            got[which].append(one(which))
    out = {}
    for key in got["two"][0]:   # wall MB/s, MB per CPU second (the cost per core), the English classifier alone
        ratios = [t[key] / b[key] for b, t in zip(got["baseline"], got["two"])]
        out[key] = {"baseline": [b[key] for b in got["baseline"]], "two": [t[key] for t in got["two"]],
                    "ratio_two_over_baseline": {"median": round(statistics.median(ratios), 3),
                                                "min": round(min(ratios), 3), "max": round(max(ratios), 3)}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO / "data" / "sample")
    ap.add_argument("--min-mb", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--width", type=int, default=2)
    ap.add_argument("--stage", action="store_true", help="also time jobs/score.py on Spark with each config")
    ap.add_argument("--baseline-tree", type=Path, help="an earlier commit's tree to time against (see above)")
    args = ap.parse_args()
    cleaned = args.data / "cleaned"
    if not cleaned.exists():
        sys.exit(f"{cleaned} not found: run `make demo` (or pass --data of a pipeline run)")
    os.chdir(REPO)   # the configs name the default models relative to the repository
    table = ds.dataset(str(cleaned), format="parquet").to_table(columns=["id", "source", "text", "lang"])
    mb_once = sum(len(t.encode()) for t in table.column("text").to_pylist()) / 1e6
    table = pa.concat_tables([table] * max(1, int(args.min_mb / max(mb_once, 1e-9)) + 1))
    batch = table.combine_chunks().to_batches()[0]
    texts, langs = batch.column("text").to_pylist(), batch.column("lang").to_pylist()
    mb = sum(len(t.encode()) for t in texts) / 1e6
    share = {lang: sum(len(t.encode()) for t, l in zip(texts, langs) if l == lang) / 1e6 / mb for lang in ("en", "zh")}
    for name in CONFIGS:       # load and warm every model once
        record_level(batch.slice(0, 50), name)

    rounds = {name: [] for name in CONFIGS}
    for _ in range(args.rounds):
        for name in CONFIGS:
            rounds[name].append(round(mb / record_level(batch, name), 3))
    ratios = [two / one for one, two in zip(rounds["one"], rounds["two"])]
    kind_ratios = [k / two for two, k in zip(rounds["two"], rounds["two_fasttext_kind"])]
    alone = {}
    for lang in ("en", "zh"):
        idx = [i for i, l in enumerate(langs) if l == lang]
        sub = [texts[i] for i in idx]
        clf = get_classifier(f"{DEFAULT}/quality_{lang}.ftz")
        t0 = time.perf_counter()
        clf.predict_proba(sub, [lang] * len(sub))
        alone[f"classifier_{lang}_mb_per_s"] = round(sum(len(t.encode()) for t in sub) / 1e6 /
                                                     (time.perf_counter() - t0), 2)
    result = {"documents": len(texts), "mb_text": round(mb, 2),
              "byte_share": {k: round(v, 3) for k, v in share.items()},
              "record_level_mb_per_s": rounds, "ratio_two_over_one": {
                  "median": round(statistics.median(ratios), 3), "min": round(min(ratios), 3),
                  "max": round(max(ratios), 3)},
              "ratio_fasttext_kind_over_two": {"median": round(statistics.median(kind_ratios), 3),
                                               "min": round(min(kind_ratios), 3), "max": round(max(kind_ratios), 3)},
              **alone}

    if args.baseline_tree:
        result["baseline"] = {"tree": str(args.baseline_tree), **against_baseline(args.baseline_tree, cleaned,
                                                                                  args.rounds, args.min_mb)}
    if args.stage:
        os.environ["SPARK_MASTER"] = f"local[{args.width}]"
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("SPARK_CONF_DIR", str(REPO / "conf"))
        from jobs import score
        from pipeline.run.spark import get_spark

        spark = get_spark("glassbox-bench-score", {"spark.ui.enabled": "false"})
        stage = {}
        for name in CONFIGS:
            work = REPO / "build" / "bench" / f"score-{name}"
            work.mkdir(parents=True, exist_ok=True)
            if (work / "cleaned").exists():
                (work / "cleaned").unlink()
            (work / "cleaned").symlink_to(cleaned.resolve(), target_is_directory=True)
            runs = [score.run(spark, config(name), str(work)) for _ in range(2)]
            stage[name] = {"wall_s": runs[-1].wall_s, "mb_per_s": round(runs[-1].bytes_in / 1e6 / runs[-1].wall_s, 3)}
        spark.stop()
        result["stage"] = stage
        result["stage_ratio_two_over_one"] = round(stage["two"]["mb_per_s"] / stage["one"]["mb_per_s"], 3)
    out = REPO / "build" / "bench" / "score.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
