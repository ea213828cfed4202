"""Stages 5 and 6: decontaminate dedup/, then tokenize what is left, per source.

    dedup/ ──decontaminate──▶ decontaminated/ (+ rejected/stage=decontaminate, stats/decontaminate.json)
           ──sample across sources──▶ sentencepiece training (unless tokenize.tokenizer names a model)
           ──encode──▶ tokenized/<source>/part-NNNNN.parquet   id, source, tokens (ids + one <eod>), n_tokens
                       tokenized/tokenizer.model, tokenized/counts.json (shards with sha256, documents, tokens)
           stats/tokenize.json: + `fertility`, per language (the documents' `lang`): documents, characters,
                       words, tokens, tokens per character and per word, summed where the shards are written

tokenized/ is built in a side folder and swapped in whole, so readers never see a half-written
corpus and a rerun leaves no stale shard. Each source gets exactly `shards_per_source` files, rows
hash-partitioned and sorted by id: the same input gives byte-identical shards.

The work is the same on two engines: `SparkCorpus` below, and `LocalCorpus` (pipeline/tokenize/local.py), which
`make tokenize` uses for a corpus under LOCAL_MAX_BYTES on a local master: it runs this file with Python and the
spark-submit command after `--or-submit`, and hands over to that command for a bigger one (jobs/common.py), as
`make clean-dedup` does. Submitted with `spark-submit jobs/tokens.py --config C --data D` it always runs on Spark.
The file is not called tokenize.py: run from jobs/, that name would shadow the standard library's `tokenize` module.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time

from pyspark.sql import Window
from pyspark.sql import functions as F

from jobs import decontaminate
from pipeline.run.stats import AccountingError, StageStats
from pipeline.run.spark import get_spark, text_bytes
from pipeline.tokenize.tokenizer import (SHARD_DDL, TOKEN_STATS_DDL, TokenizerError, describe_model, fertility_report,
                               format_fertility, merge_fertility, shard_name,
                               tokenize_partition, train_tokenizer, training_sentences, write_empty_shard,
                               write_shards_partition)

OUT = "tokenized"
_SOURCE = re.compile(r"^[A-Za-z0-9_-]+$")


def say(msg: str) -> None:
    print(f"tokenize: {msg}", flush=True)


class SparkCorpus:
    """decontaminated/ read by Spark, and what `run` asks of a corpus (pipeline/tokenize/local.py's LocalCorpus
    answers the same without the JVM)."""

    def __init__(self, spark, data_dir: str):
        self.spark = spark
        docs = spark.read.parquet(os.path.join(data_dir, "decontaminated"))
        lang = F.col("lang") if "lang" in docs.columns else F.lit(None).cast("string").alias("lang")
        self.docs = docs.select("id", "source", "text", lang)
        self._shared = None

    def per_source(self) -> dict[str, tuple[int, int]]:
        return {r["source"]: (int(r["n"]), int(r["b"] or 0)) for r in self.docs.groupBy("source").agg(
            F.count(F.lit(1)).alias("n"), F.sum(text_bytes()).alias("b")).collect()}

    def offered(self, per_source: dict[str, int], tc):
        """(source, text) in an order fixed by a hash of (seed, id), taken in turns from every source: the same
        corpus gives the same sample on any cluster. Only what the sample takes reaches the driver."""
        key = F.xxhash64(F.lit(tc.seed), F.col("id"))
        uniform = F.pmod(key, F.lit(1 << 40)).cast("double") / float(1 << 40)
        # Pre-filter so each source offers about 1.2 x sample_docs documents at most.
        frac = F.create_map(*[x for s, n in sorted(per_source.items())
                              for x in (F.lit(s), F.lit(min(1.0, 1.2 * tc.sample_docs / max(n, 1))))])
        offered = (self.docs.withColumn("_k", key).where(uniform < F.element_at(frac, F.col("source")))
                   .withColumn("_turn", F.row_number().over(Window.partitionBy("source").orderBy("_k", "id")))
                   .orderBy("_turn", "source").select("source", "text"))
        for row in offered.toLocalIterator():
            yield row["source"], row["text"]

    def write_source(self, source: str, load_model, sha: str, eos_id: int, k: int, dest: str) -> dict[int, dict]:
        """`k` token shards of one source: shard = Spark's own hash partitioning of id, so partition p holds
        shard p (the writer relies only on the column, though): spread evenly, the same on every run."""
        if self._shared is None:
            model = load_model()
            self._shared = self.spark.sparkContext.broadcast(model)
        shared = self._shared
        rows = (self.docs.where(F.col("source") == source)
                .mapInArrow(tokenize_partition(lambda: shared.value, sha, eos_id, fertility=True), TOKEN_STATS_DDL)
                .withColumn("shard", F.pmod(F.hash("id"), F.lit(k)).cast("int"))
                .repartition(k, "id").sortWithinPartitions("shard", "id"))
        return {r["shard"]: r.asDict() for r in rows.mapInArrow(write_shards_partition(dest), SHARD_DDL).collect()}

    def close(self) -> None:
        if self._shared is not None:
            self._shared.unpersist()


def _sample_texts(offered, tc, drawn: dict):
    """Up to sample_docs documents and sample_chars characters of the corpus's `offered` (source, text) order.
    Fills `drawn` with what was taken."""
    n_docs, n_chars = 0, 0
    taken: dict[str, int] = {}
    for source, text in offered:
        if n_docs >= tc.sample_docs or n_chars >= tc.sample_chars:
            break
        text = (text or "")[: tc.sample_chars - n_chars]
        n_docs += 1
        n_chars += len(text)
        taken[source] = taken.get(source, 0) + 1
        drawn.update(documents=n_docs, chars=n_chars, by_source=dict(sorted(taken.items())))
        yield text


def _tokenizer(corpus, per_source: dict[str, int], tc, staging: str) -> tuple[bytes, dict]:
    if tc.tokenizer:
        with open(tc.tokenizer, "rb") as fh:
            model = fh.read()
        info = describe_model(model, tc.eod_token)
        say(f"using the given tokenizer {tc.tokenizer} (sha256 {info['sha256'][:12]}, vocab {info['vocab_size']})")
        return model, {**info, "trained": False}
    sample = os.path.join(staging, "_tokenizer_sample.txt")
    t0 = time.time()
    say(f"sampling up to {tc.sample_docs:,} documents / {tc.sample_chars:,} characters across "
        f"{len(per_source)} source(s) for tokenizer training")
    drawn: dict = {}
    with open(sample, "w", encoding="utf-8") as fh:
        for text in _sample_texts(corpus.offered(per_source, tc), tc, drawn):
            for line in training_sentences(text):
                fh.write(line + "\n")
    if not drawn:
        raise TokenizerError("no documents to train a tokenizer on: decontaminated/ is empty")
    say(f"sample: {drawn['documents']:,} documents, {drawn['chars']:,} characters "
        f"({', '.join(f'{s} {n}' for s, n in drawn['by_source'].items())}) in {time.time() - t0:.1f}s")
    try:
        with open(sample, encoding="utf-8") as fh:
            model = train_tokenizer((line.rstrip("\n") for line in fh), tc, progress=say)
    finally:
        os.remove(sample)
    info = describe_model(model, tc.eod_token)
    return model, {**info, "trained": True, "model_type": tc.model_type, "sample": drawn}


def _write_source(corpus, source: str, load_model, info: dict, tc, staging: str,
                  fertility: dict | None = None) -> list[dict]:
    """Exactly `shards_per_source` token shards of one source, <staging>/<source>/part-NNNNN.parquet;
    returns their facts (path relative to staging, sha256, documents, tokens). The per-language sums of
    the fertility report, computed as the shards are written, go to fertility[source]."""
    k = tc.shards_per_source
    dest = os.path.join(staging, source)
    os.makedirs(dest)
    facts = corpus.write_source(source, load_model, info["sha256"], info["eos_id"], k, dest)
    if fertility is not None:
        fertility[source] = merge_fertility(json.loads(f["fertility"]) for f in facts.values())
    for i in range(k):
        if i not in facts:  # no document hashed here: an empty shard keeps the count fixed
            facts[i] = write_empty_shard(os.path.join(dest, shard_name(i)))
    return [{"path": f"{source}/{shard_name(i)}", "sha256": facts[i]["sha256"],
             "documents": int(facts[i]["documents"]), "tokens": int(facts[i]["tokens"])} for i in range(k)]


def _write_empty_source(source: str, tc, staging: str) -> list[dict]:
    """`shards_per_source` empty shards for a source with no documents (no Spark job)."""
    dest = os.path.join(staging, source)
    os.makedirs(dest)
    facts = [write_empty_shard(os.path.join(dest, shard_name(i))) for i in range(tc.shards_per_source)]
    return [{"path": f"{source}/{shard_name(i)}", "sha256": f["sha256"], "documents": 0, "tokens": 0}
            for i, f in enumerate(facts)]


def _swap(staging: str, final: str) -> None:
    old = final + ".__old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(final):
        os.rename(final, old)
    os.rename(staging, final)
    shutil.rmtree(old, ignore_errors=True)


def run(spark, cfg, data_dir: str, benchmarks=None):
    """-> (decontaminate stats, tokenize stats, counts), on Spark."""
    dstats = decontaminate.run(spark, cfg, data_dir, benchmarks)
    print(dstats.summary(), flush=True)
    return (dstats, *tokenize(SparkCorpus(spark, data_dir), cfg, data_dir))


def run_local(sc, cfg, data_dir: str, benchmarks=None):
    """The same without the JVM: `sc` schedules the tasks in local processes (pipeline/run/local.py)."""
    from pipeline.tokenize import local
    from pipeline.tokenize.decontam import load_benchmarks

    loaded = benchmarks if benchmarks is not None else load_benchmarks(cfg.decontaminate)
    dstats, kept = local.decontaminate(sc, cfg, data_dir, loaded)
    print(dstats.summary(), flush=True)
    return (dstats, *tokenize(local.LocalCorpus(sc, kept), cfg, data_dir))


def tokenize(corpus, cfg, data_dir: str):
    """decontaminated/ (as `corpus` reads it) -> tokenized/ and stats/tokenize.json: (stats, counts)."""
    t0 = time.time()
    tc = cfg.tokenize
    src = os.path.join(data_dir, "decontaminated")
    per_source = corpus.per_source()
    for s in per_source:
        if s is None or not _SOURCE.match(s):
            raise ValueError(f"source {s!r} cannot name a folder of tokenized/: use letters, digits, '-' or '_'")
    final = os.path.join(data_dir, OUT)
    staging = final + ".__writing"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    # Nothing kept upstream: every configured source still gets its empty shards and counts.json; with
    # no tokenizer given there is nothing to train one on, so counts.json names none (make mix says so).
    names = sorted(per_source) or sorted(cfg.sources)
    empty = not per_source
    try:
        if empty and not tc.tokenizer:
            model, info = None, None
            say("nothing to tokenize: decontaminated/ holds no documents; no tokenizer trained, empty shards written")
        else:
            model, info = _tokenizer(corpus, {s: n for s, (n, _) in per_source.items()}, tc, staging)
            with open(os.path.join(staging, "tokenizer.model"), "wb") as fh:
                fh.write(model)
        sources, fertility = {}, {}
        for s in names:
            t1 = time.time()
            if s in per_source:
                listed = _write_source(corpus, s, lambda: model, info, tc, staging, fertility)
            else:
                listed = _write_empty_source(s, tc, staging)
            per_source.setdefault(s, (0, 0))
            say(f"{s}: {per_source[s][0]:,} documents -> {len(listed)} shards, "
                f"{sum(x['tokens'] for x in listed):,} tokens in {time.time() - t1:.1f}s")
            sources[s] = {"documents": sum(x["documents"] for x in listed),
                          "tokens": sum(x["tokens"] for x in listed), "shards": listed}
            if sources[s]["documents"] != per_source[s][0]:
                raise AccountingError(f"tokenize: {s} has {per_source[s][0]} documents but its shards hold "
                                      f"{sources[s]['documents']}")
        tokenizer = {"path": "tokenizer.model", **{k: v for k, v in info.items() if k != "sample"}} if info else None
        counts = {"tokenizer": tokenizer, "tokenizer_sha256": info and info["sha256"],
                  "vocab_size": info and info["vocab_size"], "eos_id": info and info["eos_id"],
                  "shards_per_source": tc.shards_per_source,
                  "documents": sum(v["documents"] for v in sources.values()),
                  "tokens": sum(v["tokens"] for v in sources.values()), "sources": sources}
        with open(os.path.join(staging, "counts.json"), "w", encoding="utf-8") as fh:
            json.dump(counts, fh, indent=2, sort_keys=True)
            fh.write("\n")
        _swap(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        corpus.close()
    n_docs = sum(n for n, _ in per_source.values())
    n_bytes = sum(b for _, b in per_source.values())
    extra = {"tokenizer": info, "tokens": counts["tokens"],
             "bytes_per_token": round(n_bytes / counts["tokens"], 3) if counts["tokens"] else None,
             "sources": {s: {"documents": v["documents"], "tokens": v["tokens"], "shards": len(v["shards"])}
                         for s, v in counts["sources"].items()},
             "fertility": fertility_report(merge_fertility(fertility.values()))}
    stats = StageStats(stage="tokenize", records_in=n_docs, records_out=counts["documents"], bytes_in=n_bytes,
                       bytes_out=n_bytes, wall_s=round(time.time() - t0, 2), input=src, output=final, extra=extra)
    stats.check()
    stats.write(data_dir)
    return stats, counts


def main(argv=None) -> int:
    from jobs.common import executor_for, local_session, parse_args, split_submit
    from pipeline.run.local import choose_by_size
    from pipeline.run.units import parquet_files
    from pipeline.tokenize.decontam import BenchmarkError, load_benchmarks

    # make tokenize: a small corpus in local processes, a bigger one through the spark-submit after --or-submit
    argv, submit = split_submit(list(sys.argv[1:] if argv is None else argv))
    cfg, data = parse_args(__doc__, argv)
    if submit is not None:   # make's one config check
        print(cfg.summary(), flush=True)
    src = os.path.join(data, "dedup")
    if not os.path.isdir(src) or not parquet_files(src):
        print(f"tokenize error: {src} {'holds no Parquet files' if os.path.isdir(src) else 'not found'}; "
              f"run `make clean-dedup DATA={data}` first", file=sys.stderr)
        return 2
    try:
        loaded = load_benchmarks(cfg.decontaminate)
    except BenchmarkError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    if submit is not None:
        os.makedirs(os.path.join(data, "spark-events"), exist_ok=True)   # make's EVENT_LOG
    size = sum(os.path.getsize(f) for f in parquet_files(src))
    executor, reason = executor_for(lambda: choose_by_size(size, "dedup/ files"), submit, __file__, argv)
    make_spark = lambda: get_spark("glassbox-tokenize", cfg.spark)  # noqa: E731
    session = None
    try:
        if executor == "local":
            factory, cores = local_session(submit, make_spark)
            print(f"executor: local Python processes x{cores}, no JVM ({reason})", flush=True)
            session = factory()
            _, stats, counts = run_local(session.sparkContext, cfg, data, loaded)
        else:
            print(f"executor: Spark ({reason})", flush=True)
            _, stats, counts = run(make_spark(), cfg, data, loaded)
    except TokenizerError as e:
        print(f"tokenize error: {e}", file=sys.stderr)
        return 2
    finally:
        if session is not None:
            session.stop()
    stats.extra.update(executor=executor, executor_reason=reason)
    stats.write(data)
    print(stats.summary())
    tok = counts["tokenizer"]
    if not counts["documents"]:  # an empty corpus is a result, not an error (docs/pipeline.md, "When nothing is kept")
        from pipeline.run.stats import load_chain, nothing_kept_line

        upstream = nothing_kept_line(load_chain(data, "decontaminate")) or "nothing was kept: decontaminated/ is empty"
        print(f"nothing was tokenized: {upstream.removeprefix('nothing was kept: ')}; "
              + (f"tokenizer {tok['sha256'][:12]} given, " if tok else "no tokenizer trained (nothing to train on), ")
              + f"{counts['shards_per_source']} empty shards per source ({', '.join(counts['sources'])}) "
              f"and counts.json in {os.path.join(data, OUT)}")
        return 0
    print(f"tokenized {counts['documents']:,} documents into {counts['tokens']:,} tokens "
          f"(tokenizer {tok['sha256'][:12]}, vocab {tok['vocab_size']}, eos {tok['eos_id']}): "
          + ", ".join(f"{s} {v['tokens']:,}" for s, v in counts["sources"].items())
          + f"; shards and counts.json in {os.path.join(data, OUT)}")
    if stats.extra.get("fertility"):
        print("fertility per language (tokens without <eod>; words as pipeline/clean/words.py counts them):")
        print(format_fertility(stats.extra["fertility"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
