"""Stage 7: mix. A mixture config + a tokenized corpus -> <data>/manifests/<name>.json, the trainer's input.

    spark-submit jobs/mix.py --mix mixes/<name>.yaml --data DIR
    spark-submit jobs/mix.py --mix mixes/<name>.yaml --data DIR --reweight-from runs/<r> [--reference runs/<ref>]
                             [--step N]

With --reweight-from, the weights come from the run's validation instead (pipeline/mix/reweight.py: the rule and
its formula) and the result is the next manifest version, <data>/manifests/<name>.v<k>.json, whose parent is
the manifest the run trained on; the job prints old -> new weights and why. The mix file is only read.

Reads tokenized/counts.json, recomputes every shard's sha256, documents and tokens on the executors
(a shard that changed since tokenize is an error, not a silent mismatch), plans target tokens per
source under the repetition cap (pipeline/mix/mixture.py) and writes the manifest atomically. Nothing
else is read: the job stays light. `make mix` checks a small corpus's shards in local processes, without a JVM
(jobs/common.py: the choice, as `make clean-dedup` makes it); a bigger one through spark-submit.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from glassbox.schema import ConfigError
from pipeline.config import load_spark_settings
from pipeline.mix.mixture import (MixConfig, MixError, build_manifest, check_sources, check_tokens,
                              format_table, load_mix, write_manifest)
from pipeline.mix.reweight import RunEvidence, check_evidence, format_change, next_version, read_evidence
from pipeline.run.spark import get_spark
from glassbox.contracts import sha256_file
from pipeline.tokenize.tokenizer import shard_facts


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


def run(spark, mix: MixConfig, data_dir: str, counts: dict | None = None) -> tuple[dict, str]:
    """-> (manifest, its path)."""
    tokenized = os.path.join(data_dir, "tokenized")
    counts = counts or load_counts(data_dir)
    check_tokens(mix, counts, tokenized)
    check_sources(mix, list(counts["sources"]), tokenized)
    verify_shards(spark, tokenized, counts, sorted(mix.weights))
    out_dir = os.path.join(data_dir, "manifests")
    manifest = build_manifest(mix, counts, tokenized, out_dir)
    path = os.path.join(out_dir, f"{mix.name}.json")
    write_manifest(manifest, path)
    return manifest, path


def run_reweight(spark, mix: MixConfig, data_dir: str, evidence: RunEvidence, reference: RunEvidence | None = None,
                 counts: dict | None = None) -> tuple[dict, str, str]:
    """The next manifest version from a run's validation -> (manifest, its path, what changed and why)."""
    tokenized = os.path.join(data_dir, "tokenized")
    counts = counts or load_counts(data_dir)
    check_tokens(mix, counts, tokenized)
    check_sources(mix, list(counts["sources"]), tokenized)
    verify_shards(spark, tokenized, counts, sorted(mix.weights))
    manifest, path, again = next_version(mix, counts, tokenized, os.path.join(data_dir, "manifests"), evidence,
                                         reference)
    if not again:
        write_manifest(manifest, str(path))
    why = format_change(manifest["reweight"], str(path), manifest["version"], manifest["parent"], again)
    return manifest, str(path), why


def main(argv=None) -> int:
    from jobs.common import executor_for, local_session, split_submit
    from pipeline.run.local import choose_by_size

    # make mix: a small corpus's shards are checked in local processes, a bigger one's through the spark-submit
    # after --or-submit
    argv, submit = split_submit(list(sys.argv[1:] if argv is None else argv))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mix", required=True, help="mixes/<name>.yaml or .json")
    ap.add_argument("--data", required=True, help="a corpus folder with tokenized/ (from the tokenize job)")
    ap.add_argument("--config", default=None,
                    help="the corpus's pipeline config: its spark: settings apply to this job too")
    ap.add_argument("--reweight-from", default=None, metavar="RUN",
                    help="a run trained on this mix: the next manifest version from its per-source validation")
    ap.add_argument("--reference", default=None, metavar="RUN",
                    help="with --reweight-from: a reference run; excess loss = the run's minus the reference's")
    ap.add_argument("--step", type=int, default=None,
                    help="with --reweight-from: the validation step to read (default: the last)")
    args = ap.parse_args(argv)
    data = os.path.abspath(args.data)
    evidence = reference = None
    try:  # every mistake the files can show is found before Spark starts
        if (args.reference or args.step is not None) and not args.reweight_from:
            raise MixError("--reference and --step go with --reweight-from (REWEIGHT_FROM=runs/<run>)")
        spark_conf = load_spark_settings(args.config) if args.config else {}
        mix = load_mix(args.mix)
        counts = load_counts(data)
        check_tokens(mix, counts, os.path.join(data, "tokenized"))  # first: an empty corpus is the root cause
        check_sources(mix, list(counts["sources"]), os.path.join(data, "tokenized"))
        if args.reweight_from:
            evidence = read_evidence(args.reweight_from, args.step)
            reference = read_evidence(args.reference, None, "REFERENCE") if args.reference else None
            check_evidence(mix.name, list(mix.weights), counts["tokenizer"]["sha256"], evidence, reference)
    except ConfigError as e:                   # MixError is one
        print(f"mix error: {e}", file=sys.stderr)
        return 2
    tokenized = os.path.join(data, "tokenized")
    size = sum(os.path.getsize(os.path.join(tokenized, s["path"])) for v in counts["sources"].values()
               for s in v["shards"] if os.path.isfile(os.path.join(tokenized, s["path"])))
    executor, reason = executor_for(lambda: choose_by_size(size, "token shards"), submit, __file__, argv)
    make_spark = lambda: get_spark(f"glassbox-mix-{mix.name}", spark_conf)  # noqa: E731
    if executor == "local":
        factory, cores = local_session(submit, make_spark)
        print(f"executor: local Python processes x{cores}, no JVM ({reason})", flush=True)
        spark = factory()
    else:
        print(f"executor: Spark ({reason})", flush=True)
        spark = make_spark()
    try:
        if evidence is None:
            manifest, path = run(spark, mix, data, counts)
        else:
            manifest, path, why = run_reweight(spark, mix, data, evidence, reference, counts)
            print(why)
    except MixError as e:
        print(f"mix error: {e}", file=sys.stderr)
        return 2
    finally:
        if executor == "local":
            spark.stop()
    print(format_table(manifest))
    print(f"manifest: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
