"""`make tokenize` of a small corpus without the JVM: decontaminate dedup/, then sample, train and encode, in
plain Python processes, writing what the Spark path (jobs/tokens.py) writes.

    dedup/*.parquet ──one task per file: decontam_partition──▶ every row + contamination, status, reason
        ──kept, laid out as Spark's repartition(shards, "id") (pipeline/run/spark_layout.py)──▶ decontaminated/
        ──rejected, sorted by id──▶ rejected/stage=decontaminate/;  stats/decontaminate.json as Spark's
    kept rows ──xxhash64(seed, id) order, as Spark draws it──▶ the tokenizer's sample
              ──one task per (source, shard): tokenize_partition, write_shards_partition──▶ token shards

The token shards are the same bytes on both paths (the same rows in the same order through the same pyarrow
writer), and so are counts.json and the tokenizer; decontaminated/ holds the same rows in the same files and
order, written by pyarrow rather than by Spark's writer; rejected/stage=decontaminate the same rows, sorted by id
(Spark's follow the order in which it packed its input files). Tasks run through the local executor's scheduler
(pipeline/run/local.py: `sc.parallelize(...).mapPartitions(...).collect()`), one process per core.

No pyspark import here (the record-level rule).
"""
from __future__ import annotations

import os
import time
from collections import Counter
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.rows import KEPT
from pipeline.run.repeats import check_unique, repeated_values
from pipeline.run.spark_layout import hash_layout, spark_partition_of, spark_xxhash64, write_folder
from pipeline.run.stats import StageStats
from pipeline.run.units import parquet_files, text_bytes
from pipeline.tokenize.decontam import MAX_LISTED, decontam_partition, fingerprint, index_stats
from pipeline.tokenize.tokenizer import tokenize_partition, write_shards_partition

# What Spark's writer gives a list<string> column (read back by pyarrow): the decontaminated/ files match.
CONTAMINATION = pa.list_(pa.field("element", pa.string()))
BATCH_ROWS = 10_000      # rows per Arrow batch, as Spark's spark.sql.execution.arrow.maxRecordsPerBatch


def _decontaminate_file(path: str, items: list, fp: str, dc) -> pa.Table:
    table = pq.read_table(path)
    if "contamination" in table.column_names:
        table = table.drop_columns(["contamination"])
    run = decontam_partition(lambda: items, fp, dc, table.schema)
    batches = list(run(iter(table.to_batches(BATCH_ROWS))))
    out = pa.Table.from_batches(batches) if batches else pa.table(
        {**{f.name: pa.array([], f.type) for f in table.schema},
         "contamination": pa.array([], pa.list_(pa.string())), "status": pa.array([], pa.string()),
         "reason": pa.array([], pa.string()), "detail": pa.array([], pa.string())})
    return out.set_column(out.schema.get_field_index("contamination"), "contamination",
                          out.column("contamination").cast(CONTAMINATION))


def decontaminate(sc, cfg, data_dir: str, benchmarks) -> tuple[StageStats, pa.Table]:
    """dedup/ -> decontaminated/ and rejected/stage=decontaminate/, stats/decontaminate.json: the Spark path's
    figures (jobs/decontaminate.py). Returns the stats and the kept rows (for the tokenizer)."""
    t0 = time.time()
    dc = cfg.decontaminate
    items, bench_info = benchmarks
    src = os.path.join(data_dir, "dedup")
    out_path = os.path.join(data_dir, "decontaminated")
    rej_path = os.path.join(data_dir, "rejected", "stage=decontaminate")
    fp = fingerprint(items, dc.ngram, dc.min_words) if items else ""
    files = parquet_files(src)
    if not files:   # the stages always write at least one file, empty or not
        raise FileNotFoundError(f"{src} holds no Parquet files; run `make clean-dedup` first")
    parts = sc.parallelize(files, len(files)).mapPartitions(
        lambda paths: [_decontaminate_file(p, items, fp, dc) for p in paths]).collect()
    rows = pa.concat_tables(parts, promote_options="default")
    kept_mask = pc.equal(rows.column("status"), KEPT)
    kept = rows.filter(kept_mask).drop_columns(["status", "reason", "detail"])
    dropped = rows.filter(pc.invert(kept_mask))
    if pc.count_distinct(kept.column("id")).as_py() != kept.num_rows:   # one id, one row
        check_unique("decontaminate", repeated_values(kept.column("id")), f"its output {out_path}")
    order, spans = hash_layout(kept.column("id").to_pylist(), cfg.dedup.shards)
    kept = kept.take(pa.array(order, pa.int64()))
    write_folder(out_path, [(name, kept.slice(lo, hi - lo)) for name, lo, hi in spans])
    dropped_ids = dropped.column("id").to_pylist()
    dropped = dropped.take(pa.array(sorted(range(len(dropped_ids)), key=dropped_ids.__getitem__), pa.int64()))
    write_folder(rej_path, [("part-00000.zstd.parquet", dropped)])

    reasons = Counter(r or "unknown" for r in dropped.column("reason").to_pylist()) if dropped.num_rows else {}
    extra = {"ngram": dc.ngram, "min_words": dc.min_words, "remove": dc.remove,
             "benchmarks": bench_info, "index": index_stats(items, dc) if items else {}}
    extra.update(match_report(rows))
    stats = StageStats(stage="decontaminate", records_in=rows.num_rows, records_out=kept.num_rows,
                       rejected=dict(sorted(reasons.items())), bytes_in=text_bytes(rows), bytes_out=text_bytes(kept),
                       wall_s=round(time.time() - t0, 2), input=src, output=out_path, extra=extra)
    stats.check()
    stats.write(data_dir)
    return stats, kept


def match_report(rows: pa.Table) -> dict:
    """The matched documents (by id, MAX_LISTED at most) and the documents per benchmark, as the Spark path
    lists them."""
    hits = rows.filter(pc.is_valid(rows.column("contamination"))).select(["id", "source", "contamination"]).to_pylist()
    hits.sort(key=lambda r: r["id"])
    per_bench = Counter(b for r in hits for b in {k.split(":", 1)[0] for k in r["contamination"]})
    listed = [{"id": r["id"], "source": r["source"], "items": list(r["contamination"])} for r in hits[:MAX_LISTED]]
    return {"contaminated_documents": len(hits), "contaminated_by_benchmark": dict(sorted(per_bench.items())),
            "matches": listed, "matches_truncated": len(hits) > len(listed)}


class LocalCorpus:
    """The decontaminated documents in this process, and what jobs/tokens.py asks of a corpus."""

    def __init__(self, sc, kept: pa.Table):
        self.sc = sc
        lang = kept.column("lang") if "lang" in kept.column_names else pa.nulls(kept.num_rows, pa.string())
        self.docs = pa.table({"id": kept.column("id"), "source": kept.column("source"), "text": kept.column("text"),
                              "lang": lang}) if kept.num_rows else pa.table(
            {"id": pa.array([], pa.string()), "source": pa.array([], pa.string()), "text": pa.array([], pa.string()),
             "lang": pa.array([], pa.string())})

    def per_source(self) -> dict[str, tuple[int, int]]:
        """source -> (documents, UTF-8 bytes of text)."""
        out: dict = {}
        sizes = pc.fill_null(pc.binary_length(self.docs.column("text")), 0).to_pylist()
        for s, b in zip(self.docs.column("source").to_pylist(), sizes):
            n, total = out.get(s, (0, 0))
            out[s] = (n + 1, total + b)
        return out

    def offered(self, per_source: dict[str, int], tc) -> Iterator[tuple[str, str]]:
        """(source, text) in the order jobs/tokens.py's Spark query offers them for the sample: a source's
        documents by xxhash64(seed, id) (then id), those under its pre-filter share only, taken in turns."""
        ids = self.docs.column("id").to_pylist()
        sources = self.docs.column("source").to_pylist()
        keys = spark_xxhash64(tc.seed, ids).tolist()
        share = {s: min(1.0, 1.2 * tc.sample_docs / max(n, 1)) for s, n in per_source.items()}
        chosen: dict[str, list[tuple[int, str, int]]] = {}
        for row, (k, i, s) in enumerate(zip(keys, ids, sources)):
            if (k % (1 << 40)) / float(1 << 40) < share[s]:
                chosen.setdefault(s, []).append((k, i, row))
        turns = [(turn, s, row) for s, rows in chosen.items() for turn, (_, _, row) in enumerate(sorted(rows), 1)]
        texts = self.docs.column("text")
        for _, s, row in sorted(turns):
            yield s, texts[row].as_py()

    def write_source(self, source: str, load_model, sha: str, eos_id: int, k: int, dest: str) -> dict[int, dict]:
        """`k` token shards of one source in `dest`, one task per shard that has documents: shard -> facts
        (path, sha256, documents, tokens, fertility as JSON), as the Spark path's shard writer returns them."""
        docs = self.docs.filter(pc.equal(self.docs.column("source"), source))
        ids = docs.column("id").to_pylist()
        shard = spark_partition_of(ids, k)
        order = sorted(range(len(ids)), key=lambda i: (shard[i], ids[i]))
        docs = docs.take(pa.array(order, pa.int64())).append_column(
            "shard", pa.array(shard[order].astype("int32"), pa.int32()))
        tasks = [docs.filter(pc.equal(docs.column("shard"), p)) for p in sorted({int(x) for x in shard})]

        def write(parts):
            encode = tokenize_partition(load_model, sha, eos_id, fertility=True)
            facts = []
            for part in parts:
                encoded = _with_shard(encode(iter(part.drop_columns(["shard"]).to_batches(BATCH_ROWS))),
                                      part.column("shard")[0].as_py())
                facts += [r for batch in write_shards_partition(dest)(encoded) for r in batch.to_pylist()]
            return facts
        facts = self.sc.parallelize(tasks, len(tasks) or 1).mapPartitions(write).collect() if tasks else []
        return {int(f["shard"]): f for f in facts}

    def close(self) -> None:
        pass


def _with_shard(batches, shard: int):
    """The token rows of one shard with its `shard` column, as the shard writer reads them."""
    for b in batches:
        yield b.append_column("shard", pa.array([shard] * b.num_rows, pa.int32()))

