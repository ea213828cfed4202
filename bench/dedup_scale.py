"""Scaling bench of the dedup stage against DataTrove's MinHash, on planted corpora with exact truth.

    python bench/dedup_scale.py [--sizes 10000,30000,100000] [--width 2] [--peers auto|off]

For every size a corpus is drawn from the bundled WikiText-2 text (quality_models/data): words sampled
from its unigram distribution (plain ASCII words, so both systems' text normalisations agree), then
families of edited variants (substituted, deleted, inserted or swapped words at 0.2-8 % of positions),
pasted tails, truncations, copies that differ only in case and punctuation, and template families whose
members share most of their text (hard negatives around Jaccard 0.4-0.7). The truth is the exact
Jaccard of word 5-gram sets (`pipeline.dedup.minhash.shingles`, the reference definition): a pair is a
duplicate iff J >= 0.8 (pairs inside a family are all checked; texts of different families share
next to no 5-gram). Scored on the decisions (see `score`): precision, the share of removed documents
within the threshold of the document they were removed for; recall, the share of true pairs of
which at least one document is removed; and the usual pair precision and recall of the output groups.

Each system runs in a child process of its own, so its peak memory is its own:
- Glassbox: the dedup stage alone (`jobs/dedup.py`: exact, MinHash LSH, verification, components,
  writing dedup/ and rejected/) on a prepared `scored/` Parquet input, Spark local[width].
- DataTrove 0.10.1 (when `make bench-peers` has built build/bench-peers): its MinHash pipeline in the
  FineWeb configuration on the same documents as JSONL, `width` tasks (bench/datatrove_minhash.py).
The parent samples every process of the child's tree: the driver (the Python driver and the JVM, which
in local mode holds the executors as well) and the Python workers (peak of one, peak of the sum).

Prints a table and writes build/bench/dedup_scale.json.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.dedup.exact import exact_key_text  # noqa: E402
from pipeline.dedup.minhash import jaccard, shingles  # noqa: E402

TEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"
PEERS_PY = REPO / "build" / "bench-peers" / "bin" / "python"
THRESHOLD, NGRAM = 0.8, 5


# ---- corpus -------------------------------------------------------------------------------------

def unigram_vocabulary() -> tuple[np.ndarray, np.ndarray]:
    """Plain lower-case ASCII words of the bundled text and their frequencies."""
    counts = Counter(w for w in exact_key_text(TEXT.read_text(encoding="utf-8")).split()
                     if w.isascii() and w.isalpha() and w != "unk")  # WikiText's <unk> marker
    words = sorted(counts)
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return np.array(words, dtype=object), freq / freq.sum()


def _render(words: list[str], rng: random.Random) -> str:
    """Sentences of 6-20 words, capitalised, with full stops and the odd comma: a page's look, the
    same words underneath."""
    out, i = [], 0
    while i < len(words):
        k = rng.randint(6, 20)
        sent = list(words[i:i + k])
        sent[0] = sent[0].capitalize()
        if len(sent) > 6 and rng.random() < 0.4:
            sent[3] += ","
        out.append(" ".join(sent) + ".")
        i += k
    return " ".join(out)


def _edit(words: list[str], rate: float, draw, rng: random.Random) -> list[str]:
    """max(1, round(rate * len)) edits at random positions: substitution, deletion, insertion or a
    swap with the next word."""
    out = list(words)
    k = max(1, round(rate * len(words)))
    fresh = draw(k)
    for j in range(k):
        if len(out) < 2:
            break
        i = rng.randrange(len(out) - 1)
        op = rng.random()
        if op < 0.4:
            out[i] = fresh[j]
        elif op < 0.6:
            del out[i]
        elif op < 0.8:
            out.insert(i, fresh[j])
        else:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def planted_corpus(n_docs: int, seed: int = 0, source: str = "web") -> list[dict]:
    """About n_docs documents (exactly n_docs): dicts id, source, text, family, quality_ft."""
    vocab, probs = unigram_vocabulary()
    cdf = np.cumsum(probs)
    nrng = np.random.default_rng(seed)
    rng = random.Random(seed)

    def draw(k: int) -> list[str]:
        return vocab[np.minimum(np.searchsorted(cdf, nrng.random(k)), len(vocab) - 1)].tolist()

    docs: list[dict] = []
    seen: set[str] = set()

    def add(words: list[str], fam: int) -> None:
        text = _render(words, rng)
        doc_id = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
        if doc_id not in seen and len(docs) < n_docs:
            seen.add(doc_id)
            q = None if rng.random() < 0.1 else round(rng.random(), 4)
            docs.append({"id": doc_id, "source": source, "text": text, "family": fam, "quality_ft": q})

    fam = 0
    while len(docs) < n_docs:
        length = int(np.clip(nrng.lognormal(np.log(220), 0.6), 30, 2000))
        base = draw(length)
        add(base, fam)
        kind = rng.random()
        if kind < 0.45:
            pass                                            # alone
        elif kind < 0.75:                                   # one edited copy, around the threshold
            add(_edit(base, rng.uniform(0.002, 0.08), draw, rng), fam)
        elif kind < 0.86:                                   # 2-4 edited copies of the same original
            for _ in range(rng.randint(2, 4)):
                add(_edit(base, rng.uniform(0.002, 0.06), draw, rng), fam)
        elif kind < 0.91:                                   # a pasted tail or head (boilerplate)
            extra = draw(rng.randint(3, 60))
            add(base + extra if rng.random() < 0.5 else extra + base, fam)
        elif kind < 0.94:                                   # truncated copy
            add(base[: max(1, int(len(base) * rng.uniform(0.75, 0.99)))], fam)
        elif kind < 0.975:                                  # same words, other case and punctuation
            add(base, fam)
        else:                                               # template family: shared frame, own fill
            for _ in range(rng.randint(4, 12)):
                fill = iter(draw(len(base)))
                add([w if keep else next(fill) for w, keep in zip(base, nrng.random(len(base)) < 0.8)], fam)
        fam += 1
    return docs


# ---- truth and scoring --------------------------------------------------------------------------

def truth_pairs(docs: list[dict]) -> set[tuple[str, str]]:
    """Pairs (a, b), a < b, inside one family with exact Jaccard >= THRESHOLD (reference shingles)."""
    by_family: dict[int, list[dict]] = {}
    for d in docs:
        by_family.setdefault(d["family"], []).append(d)
    truth = set()
    for members in by_family.values():
        if len(members) < 2:
            continue
        sets = {d["id"]: shingles(d["text"], NGRAM) for d in members}
        for a, b in itertools.combinations(sorted(sets), 2):
            if jaccard(sets[a], sets[b]) >= THRESHOLD:
                truth.add((a, b))
    return truth


def groups_from_links(links: list[tuple[str, str]]) -> list[list[str]]:
    """Connected groups of the given (a, b) links (union-find)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    out: dict[str, list[str]] = {}
    for x in parent:
        out.setdefault(find(x), []).append(x)
    return [g for g in out.values() if len(g) > 1]


class Similarity:
    """Exact Jaccard of two documents on reference shingles; the sets are kept as Python hashes of
    the n-gram strings (64 bits, this process only) to hold tens of thousands of them."""

    def __init__(self, docs_by_id: dict):
        self.docs, self.sets = docs_by_id, {}

    def __call__(self, a: str, b: str) -> float:
        for x in (a, b):
            if x not in self.sets:
                self.sets[x] = frozenset(map(hash, shingles(self.docs[x]["text"], NGRAM)))
        return jaccard(self.sets[a], self.sets[b])


def score(kept: set, duplicate_of: dict, groups: list[list[str]], truth: set, sim: Similarity) -> dict:
    """The decisions against the truth.

    precision: the share of removed documents within the threshold of the document they were removed
      for (Glassbox: duplicate_of; DataTrove: the one document it kept from the cluster);
    recall: the share of true pairs that the output resolves, i.e. does not keep both of;
    cluster_pairs: pair precision and recall of the output groups (every pair inside a group counts
      as predicted), the usual clustering measure, which also counts two documents removed for the
      same kept one as a predicted pair even when they are further apart than the threshold."""
    right = sum(sim(d, s) >= THRESHOLD for d, s in duplicate_of.items())
    both_kept = sum(a in kept and b in kept for a, b in truth)
    predicted = {p for g in groups for p in itertools.combinations(sorted(g), 2)}
    extra = {p for p in predicted - truth if sim(*p) >= THRESHOLD}  # across families: checked exactly
    gold = truth | extra
    tp = len(predicted & gold)
    return {"removed": len(duplicate_of), "wrong_removals": len(duplicate_of) - right,
            "precision": round(right / len(duplicate_of), 4) if duplicate_of else 1.0,
            "true_pairs": len(truth), "true_pairs_both_kept": both_kept,
            "recall": round(1 - both_kept / len(truth), 4) if truth else 1.0,
            "cluster_pairs": {"predicted": len(predicted), "true_positives": tp,
                              "precision": round(tp / len(predicted), 4) if predicted else 1.0,
                              "recall": round(tp / len(gold), 4) if gold else 1.0}}


# ---- memory of a child process tree -------------------------------------------------------------

class TreeSampler:
    """Samples the RSS of a child and all its descendants every `every` s: the driver (the child, and
    a JVM among its descendants) and the Python workers (every other Python process)."""

    def __init__(self, pid: int, every: float = 0.1):
        import psutil

        self.root = psutil.Process(pid)
        self.every = every
        self.peak = {"driver_python_mb": 0.0, "driver_jvm_mb": 0.0, "worker_max_mb": 0.0, "workers_sum_mb": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                procs = [self.root] + self.root.children(recursive=True)
            except psutil.Error:
                break
            jvm = py = 0.0
            workers = []
            for p in procs:
                try:
                    rss = p.memory_info().rss / 2**20
                    name = p.name()
                except psutil.Error:
                    continue
                if p.pid == self.root.pid:
                    py = rss
                elif name.startswith("java"):
                    jvm += rss
                elif name.startswith("python"):
                    workers.append(rss)
            pk = self.peak
            pk["driver_python_mb"] = max(pk["driver_python_mb"], py)
            pk["driver_jvm_mb"] = max(pk["driver_jvm_mb"], jvm)
            pk["worker_max_mb"] = max([pk["worker_max_mb"], *workers])
            pk["workers_sum_mb"] = max(pk["workers_sum_mb"], sum(workers))
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = {k: round(v, 1) for k, v in self.peak.items()}


def run_child(cmd: list[str], env: dict, log: Path) -> tuple[float, dict]:
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        with TreeSampler(proc.pid) as sampler:
            rc = proc.wait()
    if rc != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({rc}); see {log}:\n{log.read_text()[-3000:]}")
    return time.perf_counter() - t0, sampler.peak


# ---- the two systems ----------------------------------------------------------------------------

def prepare(docs: list[dict], root: Path, files: int, event_log: bool = False, local_max_bytes: int = 0) -> None:
    """root/scored/ (Parquet, the dedup stage's input) and root/jsonl/ (DataTrove's input)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if root.exists():
        shutil.rmtree(root)
    (root / "scored").mkdir(parents=True)
    (root / "jsonl").mkdir()
    chunk = -(-len(docs) // files)
    for i in range(files):
        part = docs[i * chunk:(i + 1) * chunk]
        table = pa.table({"id": [d["id"] for d in part], "source": [d["source"] for d in part],
                          "text": [d["text"] for d in part],
                          "quality_ft": pa.array([d["quality_ft"] for d in part], pa.float64())})
        pq.write_table(table, root / "scored" / f"part-{i:05d}.parquet", compression="zstd")
        with open(root / "jsonl" / f"part-{i:05d}.jsonl", "w", encoding="utf-8") as f:
            for d in part:
                f.write(json.dumps({"id": d["id"], "text": d["text"]}) + "\n")
    spark = {"spark.ui.enabled": "false"}
    if event_log:  # for Spark's history server: where the stage's time went, job by job
        (root / "spark-events").mkdir()
        spark.update({"spark.eventLog.enabled": "true", "spark.eventLog.compress": "false",
                      "spark.eventLog.dir": f"file://{root / 'spark-events'}"})
    (root / "config.yaml").write_text(json.dumps({
        "sources": {"web": {"format": "jsonl", "paths": [str(root / "jsonl" / "*.jsonl")]}},
        # 0: the distributed path, which the DataTrove comparison and the sizing guide are about
        "dedup": {"exact": True, "shards": files, "local_max_bytes": local_max_bytes},
        "spark": spark,
    }))


def event_log_summary(folder: Path) -> dict:
    """Jobs, stages, tasks and the bytes that moved, from Spark's event log of one run."""
    jobs = stages = tasks = 0
    shuffle_write = spill = peak_exec = 0
    stage_s: list[tuple[float, str]] = []
    for path in folder.rglob("events_*"):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                e = json.loads(line)
                kind = e["Event"]
                if kind == "SparkListenerJobStart":
                    jobs += 1
                elif kind == "SparkListenerStageCompleted":
                    stages += 1
                    si = e["Stage Info"]
                    stage_s.append(((si.get("Completion Time", 0) - si.get("Submission Time", 0)) / 1000,
                                    si["Stage Name"][:60]))
                elif kind == "SparkListenerTaskEnd" and e.get("Task Metrics"):
                    tasks += 1
                    m = e["Task Metrics"]
                    shuffle_write += m["Shuffle Write Metrics"]["Shuffle Bytes Written"]
                    spill += m["Disk Bytes Spilled"]
                    peak_exec = max(peak_exec, m.get("Peak Execution Memory", 0))
    return {"jobs": jobs, "stages": stages, "tasks": tasks, "shuffle_write_mb": round(shuffle_write / 2**20, 2),
            "spill_mb": round(spill / 2**20, 2), "task_peak_execution_mb": round(peak_exec / 2**20, 2),
            "slowest_stages": sorted(stage_s, reverse=True)[:5]}


# The dedup stage through pipeline/run/local.py's executor (no JVM), as `make clean-dedup` runs it below
# LOCAL_MAX_BYTES: the stage's own functions in `width` local processes; a step needing Spark fails here.
LOCAL_EXECUTOR = """
import sys
from pyspark import cloudpickle
from jobs.dedup import SPEC
from pipeline.config import load_config
from pipeline.run.local import LocalSession
from pipeline.run.runner import Runner

def no_spark():
    raise SystemExit("the dedup stage asked for a Spark session on the local executor")

config, data, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
runner = Runner(lambda: LocalSession(width, no_spark, cloudpickle.dumps), load_config(config), data)
print(runner.run(SPEC, force=True).stats.summary())
runner.spark.stop()
"""


def run_glassbox(root: Path, width: int, executor: str = "spark") -> dict:
    import pyarrow.dataset as ds

    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_MASTER": f"local[{width}]",
           "SPARK_CONF_DIR": str(REPO / "conf"), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    if executor == "local":
        cmd = [sys.executable, "-c", LOCAL_EXECUTOR, str(root / "config.yaml"), str(root), str(width)]
    else:
        cmd = [sys.executable, "-m", "jobs.dedup", "--config", str(root / "config.yaml"), "--data", str(root)]
    wall, peak = run_child(cmd, env, root / "glassbox.log")
    stats = json.loads((root / "stats" / "dedup.json").read_text())
    kept = ds.dataset(root / "dedup", format="parquet").to_table(columns=["id"]).column("id").to_pylist()
    rej = ds.dataset(root / "rejected" / "stage=dedup", format="parquet").to_table(
        columns=["id", "duplicate_of"]).to_pylist()
    duplicate_of = {r["id"]: r["duplicate_of"] for r in rej}
    groups = groups_from_links(list(duplicate_of.items()))
    near = stats["extra"].get("near", {})
    events = event_log_summary(root / "spark-events") if (root / "spark-events").exists() else None
    return {"executor": executor, "path": stats["extra"].get("path"), "spark": events, "wall_s": stats["wall_s"], "process_wall_s": round(wall, 2), "peak_rss": peak,
            "decisions": (set(kept), duplicate_of, groups),
            "candidate_pairs": near.get("candidate_pairs"), "verified_pairs": near.get("verified_pairs"),
            "removed": sum(stats["rejected"].values()), "info": stats["extra"]}


def corpus_digest(docs: list[dict]) -> str:
    """sha256 of the documents' ids in order (an id is a hash of its text): the same corpus, or not."""
    return hashlib.sha256("\n".join(d["id"] for d in docs).encode()).hexdigest()[:16]


def run_datatrove(root: Path, width: int, stored: Path | None = None, digest: str | None = None) -> dict:
    """DataTrove on root/jsonl. With `stored` (a JSON file): when it exists and holds a run on the same
    corpus (`digest`) with the same width, that run is read instead of running DataTrove again (its wall
    does not depend on Glassbox's code; it was measured once, under the load it records); when it does
    not exist, this run is written there."""
    if stored is not None and stored.exists():
        res = json.loads(stored.read_text())
        if res.get("corpus") != digest or res.get("width") != width:
            raise SystemExit(f"{stored} holds a DataTrove run of another corpus or width "
                             f"({res.get('corpus')}, {res.get('width')}; want {digest}, {width})")
        wall, peak = res["process_wall_s"], res["peak_rss"]
    else:
        work = root / "datatrove"
        shutil.rmtree(work, ignore_errors=True)
        out = root / "datatrove.json"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        load = os.getloadavg()
        wall, peak = run_child([str(PEERS_PY), str(REPO / "bench" / "datatrove_minhash.py"), "--input",
                                str(root / "jsonl"), "--work", str(work), "--tasks", str(width), "--out", str(out)],
                               env, root / "datatrove.log")
        res = json.loads(out.read_text())
        res.update({"corpus": digest, "width": width, "process_wall_s": round(wall, 2), "peak_rss": peak,
                    "load_avg_start": load, "load_avg_end": os.getloadavg(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        if stored is not None:
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.write_text(json.dumps(res))
    removed = set(res["removed"])
    kept_of_cluster = {cid: doc_id for doc_id, cid in res["clusters"].items() if doc_id not in removed}
    duplicate_of = {d: kept_of_cluster[res["clusters"][d]] for d in removed}  # DataTrove keeps one per cluster
    kept = set(json.loads(line)["id"] for path in (root / "jsonl").glob("*.jsonl")
               for line in open(path, encoding="utf-8")) - removed
    return {"wall_s": res["wall_s"], "process_wall_s": round(wall, 2), "stage_s": res["stage_s"],
            "peak_rss": peak, "stored_run": str(stored) if stored is not None else None,
            "load_avg": [res.get("load_avg_start"), res.get("load_avg_end")], "decisions": (kept, duplicate_of, groups_from_links(list(duplicate_of.items())))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,30000,100000")
    ap.add_argument("--width", type=int, default=2, help="cores for each system (Spark local[N], DataTrove tasks)")
    ap.add_argument("--peers", choices=("auto", "off"), default="auto",
                    help="auto: run DataTrove when build/bench-peers exists (make bench-peers)")
    ap.add_argument("--work", type=Path, default=REPO / "build" / "bench" / "dedup_scale")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "dedup_scale.json")
    ap.add_argument("--keep", action="store_true", help="keep the corpora and outputs under --work")
    ap.add_argument("--event-log", action="store_true", help="write Spark's event log under each size's folder")
    ap.add_argument("--local-max-bytes", type=int, default=0,
                    help="dedup.local_max_bytes (default 0: always the distributed path)")
    ap.add_argument("--executor", choices=("spark", "local"), default="spark",
                    help="our stage under jobs/dedup.py on Spark local[width], or pipeline/run/local.py's executor "
                         "(no JVM; needs the local path: --local-max-bytes above the input's text)")
    ap.add_argument("--save-decisions", type=Path, default=None,
                    help="write our removed ids and their duplicate_of to PREFIX.n{size}.json")
    ap.add_argument("--systems", default="glassbox,datatrove", help="which systems to run (comma-separated)")
    ap.add_argument("--datatrove-store", type=Path, default=None,
                    help="folder of stored DataTrove runs (datatrove-n{size}-w{width}.json): a stored run of the same "
                         "corpus is read instead of running DataTrove again; a missing one is written")
    args = ap.parse_args()
    systems_wanted = set(args.systems.split(","))
    peers = args.peers == "auto" and "datatrove" in systems_wanted and (
        PEERS_PY.exists() or args.datatrove_store is not None)
    if args.peers == "auto" and "datatrove" in systems_wanted and not peers:
        print(f"DataTrove not installed ({PEERS_PY} missing): run `make bench-peers` to compare", file=sys.stderr)
    result: dict = {"width": args.width, "threshold": THRESHOLD, "ngram": NGRAM, "cpus": os.cpu_count(),
                    "load_avg_start": os.getloadavg(), "sizes": {}}
    for n in [int(s) for s in args.sizes.split(",")]:
        t0 = time.perf_counter()
        docs = planted_corpus(n, seed=n)
        sim = Similarity({d["id"]: d for d in docs})
        truth = truth_pairs(docs)
        root = args.work / f"n{n}"
        prepare(docs, root, files=max(2, args.width), event_log=args.event_log, local_max_bytes=args.local_max_bytes)
        digest = corpus_digest(docs)
        entry = {"docs": n, "words": sum(len(d["text"].split()) for d in docs), "truth_pairs": len(truth),
                 "corpus": digest, "corpus_s": round(time.perf_counter() - t0, 1)}
        stored = (args.datatrove_store / f"datatrove-n{n}-w{args.width}.json") if args.datatrove_store else None
        systems = ([("glassbox", lambda root, width: run_glassbox(root, width, args.executor))] if "glassbox" in systems_wanted else []) + (
            [("datatrove", lambda root, width: run_datatrove(root, width, stored, digest))] if peers else [])
        for name, run in systems:
            load = os.getloadavg()
            r = run(root, args.width)
            if args.save_decisions and name == "glassbox":  # to compare two versions' decisions
                args.save_decisions.parent.mkdir(parents=True, exist_ok=True)
                dup = r["decisions"][1]
                Path(f"{args.save_decisions}.n{n}.json").write_text(json.dumps(dict(sorted(dup.items()))))
            r.setdefault("load_avg", [load, os.getloadavg()])
            r.update(score(*r.pop("decisions"), truth, sim))
            r["docs_per_s"] = round(n / r["wall_s"], 1)
            entry[name] = r
            print(f"{n:>7} {name:<10} wall {r['wall_s']:>7.1f}s  {r['docs_per_s']:>7.1f} docs/s  "
                  f"P {r['precision']:.4f} R {r['recall']:.4f}  rss {r['peak_rss']}", flush=True)
        if "glassbox" in entry and "datatrove" in entry:
            entry["speed_vs_datatrove"] = round(entry["datatrove"]["wall_s"] / entry["glassbox"]["wall_s"], 2)
        result["sizes"][str(n)] = entry
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    sizes = sorted(result["sizes"], key=int)
    if len(sizes) > 1 and all("glassbox" in result["sizes"][k] for k in sizes):
        lo, hi = result["sizes"][sizes[0]]["glassbox"], result["sizes"][sizes[-1]]["glassbox"]
        result["time_ratio_largest_smallest"] = round(hi["wall_s"] / lo["wall_s"], 2)
        result["driver_rss_ratio_largest_smallest"] = {
            k: round(hi["peak_rss"][k] / max(lo["peak_rss"][k], 1e-9), 2) for k in ("driver_python_mb", "driver_jvm_mb")}
    result["load_avg_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "sizes"}, indent=2))


if __name__ == "__main__":
    main()
