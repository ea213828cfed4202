"""Stage 7: mix. A mixture config + a tokenized corpus -> <data>/manifests/<name>.json, the trainer's input.

    spark-submit jobs/mix.py --mix mixes/<name>.yaml --data DIR

Reads tokenized/counts.json, recomputes every shard's sha256, documents and tokens on the executors
(a shard that changed since tokenize is an error, not a silent mismatch), plans target tokens per
source under the repetition cap (pipeline/mixture.py) and writes the manifest atomically. Nothing
else is read: the job stays light.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from pipeline.mixture import MixConfig, MixError, build_manifest, check_sources, dumps_manifest, format_table, load_mix
from pipeline.spark import get_spark
from pipeline.tokenize import sha256_file, shard_facts


def load_counts(data_dir: str) -> dict:
    path = os.path.join(data_dir, "tokenized", "counts.json")
    if not os.path.isfile(path):
        raise MixError(f"--data: {path} not found; run `make tokenize DATA={data_dir}` first")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def verify_shards(spark, tokenized: str, counts: dict, sources: list[str]) -> None:
    """Recompute the facts of every shard of `sources` where the files are, and compare."""
    listed = {s["path"]: s for name in sources for s in counts["sources"][name]["shards"]}
    paths = sorted(listed)
    got = dict(spark.sparkContext.parallelize(paths, max(1, min(len(paths), 64)))
               .map(lambda p, root=tokenized: (p, shard_facts(os.path.join(root, p)))).collect())
    for p in paths:
        want = {k: listed[p][k] for k in ("sha256", "documents", "tokens")}
        if got[p] != want:
            raise MixError(f"{os.path.join(tokenized, p)} changed since tokenize (counts.json says {want}, "
                           f"the file has {got[p]}); rerun the tokenize job")
    tok = counts["tokenizer"]
    model = os.path.join(tokenized, tok["path"])
    if not os.path.isfile(model) or sha256_file(model) != tok["sha256"]:
        raise MixError(f"{model} is missing or changed since tokenize; rerun the tokenize job")


def write_manifest(manifest: dict, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(dumps_manifest(manifest))
    os.replace(tmp, path)


def run(spark, mix: MixConfig, data_dir: str, counts: dict | None = None) -> tuple[dict, str]:
    """-> (manifest, its path)."""
    tokenized = os.path.join(data_dir, "tokenized")
    counts = counts or load_counts(data_dir)
    check_sources(mix, list(counts["sources"]), tokenized)
    verify_shards(spark, tokenized, counts, sorted(mix.weights))
    out_dir = os.path.join(data_dir, "manifests")
    manifest = build_manifest(mix, counts, tokenized, out_dir)
    path = os.path.join(out_dir, f"{mix.name}.json")
    write_manifest(manifest, path)
    return manifest, path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mix", required=True, help="mixes/<name>.yaml or .json")
    ap.add_argument("--data", required=True, help="a corpus folder with tokenized/ (from the tokenize job)")
    args = ap.parse_args(argv)
    data = os.path.abspath(args.data)
    try:  # every mistake the files can show is found before Spark starts
        mix = load_mix(args.mix)
        counts = load_counts(data)
        check_sources(mix, list(counts["sources"]), os.path.join(data, "tokenized"))
    except MixError as e:
        print(f"mix error: {e}", file=sys.stderr)
        return 2
    spark = get_spark(f"glassbox-mix-{mix.name}")
    try:
        manifest, path = run(spark, mix, data, counts)
    except MixError as e:
        print(f"mix error: {e}", file=sys.stderr)
        return 2
    print(format_table(manifest))
    print(f"manifest: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
