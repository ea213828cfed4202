"""DataTrove's MinHash dedup (the FineWeb configuration: word 5-grams, 14 buckets x 8 hashes, 64-bit
hashes) on a folder of JSONL documents, as its own documentation runs it: four local pipelines
(signatures, buckets, clusters, filter). Runs in the peers' venv (`make bench-peers`), never in
Glassbox's; bench/dedup_scale.py calls it and scores its clusters.

    build/bench-peers/bin/python bench/datatrove_minhash.py --input DIR --work DIR --tasks 2 --out result.json

Writes {"wall_s", "stage_s", "clusters": {doc id: cluster number}} for every document DataTrove put in a
cluster (kept or removed), and "removed": the ids it dropped.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True, help="folder of *.jsonl files (id, text)")
    ap.add_argument("--work", required=True, help="scratch folder for signatures, buckets and output")
    ap.add_argument("--tasks", type=int, default=2, help="tasks and workers per stage (the cores to use)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter
    from datatrove.utils.hashing import HashConfig

    cfg = MinhashConfig(hash_config=HashConfig(precision=64), num_buckets=14, hashes_per_bucket=8, n_grams=5)
    w = args.work
    files = len(glob.glob(os.path.join(args.input, "*.jsonl")))
    stages = {
        "signatures": LocalPipelineExecutor(
            pipeline=[JsonlReader(args.input), MinhashDedupSignature(output_folder=f"{w}/sigs", config=cfg)],
            tasks=files, workers=args.tasks, logging_dir=f"{w}/logs/sigs"),
        "buckets": LocalPipelineExecutor(
            pipeline=[MinhashDedupBuckets(input_folder=f"{w}/sigs", output_folder=f"{w}/buckets", config=cfg)],
            tasks=cfg.num_buckets, workers=args.tasks, logging_dir=f"{w}/logs/buckets"),
        "clusters": LocalPipelineExecutor(
            pipeline=[MinhashDedupCluster(input_folder=f"{w}/buckets", output_folder=f"{w}/remove_ids",
                                          config=cfg, save_cluster_id=True)],
            tasks=1, logging_dir=f"{w}/logs/clusters"),
        "filter": LocalPipelineExecutor(
            pipeline=[JsonlReader(args.input),
                      MinhashDedupFilter(input_folder=f"{w}/remove_ids", load_cluster_ids=True,
                                         exclusion_writer=JsonlWriter(f"{w}/removed", compression=None)),
                      JsonlWriter(f"{w}/kept", compression=None)],
            tasks=files, workers=args.tasks, logging_dir=f"{w}/logs/filter"),
    }
    stage_s = {}
    t0 = time.perf_counter()
    for name, executor in stages.items():
        t = time.perf_counter()
        executor.run()
        stage_s[name] = round(time.perf_counter() - t, 2)
    wall = time.perf_counter() - t0

    clusters, removed = {}, []
    for kind in ("kept", "removed"):
        for path in glob.glob(os.path.join(w, kind, "*.jsonl")):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    doc = json.loads(line)
                    cid = doc.get("metadata", {}).get("minhash_cluster_id", -1)
                    if cid != -1:
                        clusters[doc["id"]] = cid
                    if kind == "removed":
                        removed.append(doc["id"])
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"wall_s": round(wall, 2), "stage_s": stage_s, "clusters": clusters, "removed": removed}, f)


if __name__ == "__main__":
    main()
