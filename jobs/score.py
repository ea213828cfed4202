"""Stage 3: quality scores as columns (a classifier per language: Glassbox's fastText models, a fastText or
Hugging Face model brought by the user; quality_<lang> and quality, the document's own language's score; KenLM
perplexity, ppl_bucket per language; a classifier's score cut into named buckets where the config asks).

The cut-offs of the buckets are percentiles of each language's perplexities over this corpus
(30th/60th by default, as CCNet), and a classifier's quantile buckets are quantiles of its scores over
this corpus, so the stage has two unit phases: the models score every document (one unit per Parquet
file of cleaned/), then, with the cut-offs computed over all the scores, each unit's documents get their
buckets and the score rules decide.
"""
from __future__ import annotations

import functools
import os
import time

import pyarrow as pa
from pyspark.sql import functions as F

from pipeline.score.batches import decide_columns, decide_score_partition, score_columns, score_partition
from pipeline.score.decisions import bucket_edges
from pipeline.run.runner import Runner, StageSpec, fingerprint, path_identity
from pipeline.score.distributions import (ACCURACY, LOCAL_MAX_ROWS, REPORT_PERCENTILES, SCORES, distributions_of_files,
                                          quantile_requests, quantiles_of_files)
from pipeline.run.units import parquet_files, parquet_unit


def identity(cfg) -> dict:
    return {"score": cfg.score,
            "models": [path_identity(c.model) for c in cfg.score.classifiers] + [path_identity(cfg.score.kenlm_dir)]}


def _distributions(scored, low: float, high: float) -> tuple[list[dict], dict]:
    """(score percentiles per language and per (language, source), bucket cut-offs per language):
    one groupBy over the scores (a few Spark jobs)."""
    aggs = [F.count(F.lit(1)).alias("documents"),
            F.percentile_approx("perplexity", [low, high], ACCURACY).alias("cutoffs")]
    for col in SCORES:
        aggs += [F.count(col).alias(f"{col}_scored"),
                 F.percentile_approx(col, REPORT_PERCENTILES, ACCURACY).alias(f"{col}_percentiles")]
    by_source = scored.groupBy("lang", "source").agg(*aggs)
    by_lang = scored.groupBy("lang").agg(*aggs).withColumn("source", F.lit("*"))
    out, cutoffs = [], {}
    for r in by_lang.unionByName(by_source).orderBy("lang", "source").collect():
        d = {"lang": r["lang"], "source": r["source"], "documents": r["documents"]}
        for col in SCORES:
            d[f"{col}_scored"] = r[f"{col}_scored"]
            values = r[f"{col}_percentiles"]
            d[col] = dict(zip((f"p{round(p * 100)}" for p in REPORT_PERCENTILES), values)) if values else None
        out.append(d)
        if r["source"] == "*" and r["perplexity_scored"]:
            cutoffs[r["lang"]] = tuple(r["cutoffs"])
    return out, cutoffs


def _quantiles(scored, requests: dict) -> dict:
    """Each bucketed classifier's quantiles over its scored documents: one aggregation (nulls left out)."""
    if not requests:
        return {}
    row = scored.agg(*[F.percentile_approx(c, qs, ACCURACY).alias(c) for c, qs in requests.items()]).collect()[0]
    return {c: (list(row[c]) if row[c] else None) for c in requests}


def _local_distributions(spark, folder: str, low: float, high: float, requests: dict) -> tuple[list[dict], dict, dict]:
    """The same numbers for a small corpus, in one Spark task (pipeline/score/distributions.py); on a
    cluster an executor reads the scores, as it reads the units."""
    files = parquet_files(folder)
    spark.sparkContext.setJobDescription(f"score distributions: {len(files)} files in one task")
    out = spark.sparkContext.parallelize([0], 1).map(
        lambda _: (*distributions_of_files(files, low, high), quantiles_of_files(files, requests))).collect()[0]
    spark.sparkContext.setJobDescription(None)
    return out


def signal_unit(unit: dict, dirs, fp: str, score_cfg) -> dict:
    def transform(schema: pa.Schema):
        out = pa.schema(list(schema) + [pa.field(n, t) for n, t in score_columns(score_cfg)])
        return score_partition(score_cfg, schema), out
    return parquet_unit(unit["path"], transform, unit, dirs, fp)


def decide_unit(unit: dict, dirs, fp: str, score_cfg, cutoffs: dict, edges: dict) -> dict:
    def transform(schema: pa.Schema):
        out = pa.schema(list(schema) + [pa.field(n, t) for n, t in decide_columns(score_cfg)])
        return decide_score_partition(score_cfg, cutoffs, schema, edges), out
    return parquet_unit(unit["path"], transform, unit, dirs, fp)


def run(spark, cfg, data_dir: str, ctx=None):
    if ctx is None:  # called alone (tests, benches): through the runner, which always runs it
        return Runner(spark, cfg, data_dir).run(SPEC, force=True).stats
    t0 = time.time()
    src = os.path.join(data_dir, "cleaned")
    signals = ctx.sub("signals", ctx.fingerprint)  # the models' scores, kept until the stage commits
    scored = signals.run_units(signals.parquet_units(src), functools.partial(signal_unit, score_cfg=cfg.score))
    ctx.units_total, ctx.units_reused = signals.units_total, signals.units_reused

    low, high = cfg.score.bucket_percentiles
    requests = quantile_requests(cfg.score)
    if sum(m["records_out"] for m in scored) < LOCAL_MAX_ROWS:
        distributions, cutoffs, quantiles = _local_distributions(spark, signals.dirs.out, low, high, requests)
    else:
        scores = spark.read.parquet(signals.dirs.out).select("lang", "source", *SCORES)
        distributions, cutoffs = _distributions(scores, low, high)
        quantiles = _quantiles(spark.read.parquet(signals.dirs.out).select(*requests), requests)
    edges = bucket_edges(cfg.score, quantiles)
    extra = {"ppl_bucket_cutoffs": {lang: {"head_max": c[0], "middle_max": c[1]}
                                    for lang, c in sorted(cutoffs.items())},
             "bucket_percentiles": [low, high], "distributions": distributions,
             "classifiers": [{"column": c.column, "languages": c.languages, "kind": c.kind, "axis": c.axis,
                              "model": os.path.basename(c.model),
                              **({"max_score": c.max_score} if c.max_score is not None else {})}
                             for c in cfg.score.classifiers]}
    if edges:   # where each classifier's buckets were cut: the edges a mixture's buckets refer to
        extra["buckets"] = {b: {"score": col, "edges": edges[b], "names": spec.labels(), "quantiles": spec.quantiles}
                            for col, b, spec in cfg.score.bucketed()}

    bucket_parts = [sorted(edges.items())] if edges else []   # a config without buckets keeps its fingerprint
    decide = ctx.sub("decide", fingerprint(ctx.fingerprint, sorted(cutoffs.items()), *bucket_parts))
    markers = decide.run_units(decide.parquet_units(signals.dirs.out),
                               functools.partial(decide_unit, score_cfg=cfg.score, cutoffs=cutoffs, edges=edges))
    stats = decide.commit("scored", markers, t0, input_desc=src, extra=extra,
                          units=(signals.units_total, signals.units_reused))
    signals.discard()
    decide.discard()
    return stats


SPEC = StageSpec("score", "scored", identity, run, previous=("clean", "cleaned"))

if __name__ == "__main__":
    from jobs.common import run_alone

    run_alone(SPEC, __doc__)
