"""Each variant's corpus: the ordinary pipeline stages, the fixed tokenizer, one manifest per proxy seed.

A corpus folder is named by a hash of the variant's resolved pipeline config (so two variants with the same
config, like the base and its null control, share one). A new corpus folder is first seeded with the base
corpus's finished stages (files hard-linked, records copied); the stage runner (pipeline/run/runner.py) then
skips every stage whose fingerprint is unchanged and reruns the first changed one and all after it, exactly
as a rerun of `make clean-dedup` would. `corpus.json` records a finished corpus; a rerun of the ablation
with the same key starts no Spark at all.

Spark glue: imported only when a corpus has work to do.
"""
from __future__ import annotations

import json
import os
import shutil

from pipeline.mix.mixture import MixConfig
from pipeline.run.runner import fingerprint
from pipeline.run.units import write_json_atomic

CORPUS_RECORD = "corpus.json"
# what the corpus stages leave in DATA/ (jobs/clean_dedup.py); decontaminate and tokenize always run again
STAGES = ("extract", "clean", "score", "dedup")
OUTPUTS = ("extracted", "cleaned", "scored", "dedup")


def corpus_key(raw_config: dict, tokenizer: dict) -> str:
    return fingerprint(raw_config, tokenizer)


def read_record(corpus_dir: str) -> dict | None:
    try:
        with open(os.path.join(corpus_dir, CORPUS_RECORD), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _link_tree(src: str, dst: str) -> None:
    """Hard links of a finished folder (Parquet is never rewritten in place: stages write new files and swap
    folders), with a copy where linking is refused (another file system)."""
    def link(s, d):
        try:
            os.link(s, d)
        except OSError:
            shutil.copy2(s, d)
    shutil.copytree(src, dst, copy_function=link, dirs_exist_ok=True)


def seed_from(donor: str, target: str) -> list[str]:
    """Give a new corpus folder the donor corpus's finished stages; returns the stages offered. JSON records are
    copied, not linked: the runner rewrites them. A folder that already has stage records (an ablation killed
    while building it) is left to the runner, which resumes it."""
    if os.path.isdir(os.path.join(target, "_state")) and os.listdir(os.path.join(target, "_state")):
        return []
    offered = []
    for stage, out in zip(STAGES, OUTPUTS):
        state = os.path.join(donor, "_state", f"{stage}.json")
        if not (os.path.isfile(state) and os.path.isdir(os.path.join(donor, out))):
            break
        _link_tree(os.path.join(donor, out), os.path.join(target, out))
        if stage == "dedup" and os.path.isdir(os.path.join(donor, "dedup_index")):  # part of dedup's output
            _link_tree(os.path.join(donor, "dedup_index"), os.path.join(target, "dedup_index"))
        rejected = os.path.join(donor, "rejected", f"stage={stage}")
        if os.path.isdir(rejected):
            _link_tree(rejected, os.path.join(target, "rejected", f"stage={stage}"))
        for rec in (state, os.path.join(donor, "stats", f"{stage}.json")):
            if os.path.isfile(rec):
                rel = os.path.relpath(rec, donor)
                os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
                shutil.copy2(rec, os.path.join(target, rel))
        offered.append(stage)
    return offered


def build_corpus(spark_factory, variant, corpus_dir: str, log) -> dict:
    """extract → clean → score → dedup (reusing unchanged stages), decontaminate, tokenize. -> stage table."""
    from jobs import clean_dedup, tokens
    from pipeline.tokenize.decontam import load_benchmarks
    from pipeline.run.runner import Runner

    runner = Runner(spark_factory, variant.config, corpus_dir, log=lambda m: log(f"  [{variant.name}] {m}"))
    for spec in clean_dedup.STAGES:
        runner.run(spec)
    log(runner.table())
    from pipeline.run.local import LocalSession

    benchmarks = load_benchmarks(variant.config.decontaminate)
    if isinstance(runner.spark, LocalSession):   # a small corpus: tokenized without the JVM, as make tokenize does
        dstats, tstats, counts = tokens.run_local(runner.spark.sparkContext, variant.config, corpus_dir, benchmarks)
    else:
        dstats, tstats, counts = tokens.run(runner.spark, variant.config, corpus_dir, benchmarks)
    stages = [{"stage": o.stats.stage, "status": o.status, "wall_s": o.wall_s, "records_in": o.stats.records_in,
               "records_out": o.stats.records_out} for o in runner.outcomes]
    stages += [{"stage": s.stage, "status": "ran", "wall_s": s.wall_s, "records_in": s.records_in,
                "records_out": s.records_out} for s in (dstats, tstats)]
    return {"stages": stages, "counts": counts}


def natural_weights(counts: dict) -> dict[str, int]:
    """Every source with tokens, weighted by its tokens: a proxy trains on the corpus as the variant kept it."""
    return {s: int(v["tokens"]) for s, v in sorted(counts["sources"].items()) if int(v["tokens"]) > 0}


def write_manifests(corpus_dir: str, counts: dict, seeds: list[int], plan: dict, max_epochs: float) -> dict:
    """One manifest per seed (the manifest's seed orders the data), the same mixture: {seed: path}. The shards
    were written by this corpus's tokenize run just now (or checked then), so no Spark pass re-hashes them."""
    from jobs.mix import write_manifest
    from pipeline.mix.mixture import build_manifest

    tokenized, out_dir = os.path.join(corpus_dir, "tokenized"), os.path.join(corpus_dir, "manifests")
    out = {}
    for seed in seeds:
        mix = MixConfig(name=f"ablate-s{seed}", weights=natural_weights(counts), max_seq_len=plan["seq_len"],
                        seed=seed, total_tokens=plan["tokens"], max_epochs=max_epochs)
        path = os.path.join(out_dir, f"{mix.name}.json")
        write_manifest(build_manifest(mix, counts, tokenized, out_dir), path)
        out[str(seed)] = path
    return out


def finish_record(corpus_dir: str, key: str, built: dict, manifests: dict, variants: list[str]) -> dict:
    counts = built["counts"]
    record = {"key": key, "variants": variants, "stages": built["stages"], "manifests": manifests,
              "tokenizer_sha256": counts["tokenizer_sha256"], "documents": counts["documents"],
              "tokens": counts["tokens"],
              "sources": {s: {"documents": v["documents"], "tokens": v["tokens"]}
                          for s, v in sorted(counts["sources"].items())}}
    write_json_atomic(os.path.join(corpus_dir, CORPUS_RECORD), record)
    return record
