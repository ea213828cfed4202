"""Empty outputs are normal (issue 23, item 8): a stage that keeps no document writes empty outputs
and its stats, the stages after it do the same on their empty input, and the command ends with exit 0
and a line saying that nothing was kept and why. The record-level pieces are tested in plain Python;
Spark runs are few: the unit stages and both dedup paths in the shared session, and one `make
clean-dedup` -> `make tokenize` -> `make mix` chain on an all-rejected config."""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.run.stats import StageStats, load_chain, nothing_kept_line, top_reasons
from tests.conftest import make

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "examples" / "sample"
DOC_SCHEMA = pa.schema([("id", pa.string()), ("source", pa.string()), ("text", pa.string()),
                        ("quality", pa.float64())])
TOKEN_SCHEMA = pa.schema([("id", pa.string()), ("source", pa.string()), ("tokens", pa.list_(pa.int32())),
                          ("n_tokens", pa.int32())])


def _rows(folder: Path) -> pa.Table:
    files = sorted(folder.glob("*.parquet"))
    assert files, f"{folder} holds no Parquet file"
    return pa.concat_tables([pq.read_table(f) for f in files])


# ---- plain Python -------------------------------------------------------------------------------

@pytest.mark.parametrize("near", [True, False])
def test_local_dedup_of_an_empty_table_writes_empty_files(tmp_path, near):
    from pipeline.dedup.local import dedup_files
    from pipeline.dedup.settings import NearDedupConfig

    pq.write_table(DOC_SCHEMA.empty_table(), tmp_path / "part-0.parquet")
    counts = dedup_files([str(tmp_path / "part-0.parquet")], str(tmp_path / "out"), str(tmp_path / "rej"),
                         exact=True, near_cfg=NearDedupConfig() if near else None, shards=2)
    assert (counts["records_in"], counts["records_out"], counts["rejected"]) == (0, 0, {})
    kept, dropped = _rows(tmp_path / "out"), _rows(tmp_path / "rej")
    assert kept.num_rows == dropped.num_rows == 0
    assert kept.schema.names == DOC_SCHEMA.names + ["exact_hash", "minhash_cluster"]
    assert {"status", "reason", "detail", "duplicate_of"} <= set(dropped.schema.names)
    assert (tmp_path / "out" / "_SUCCESS").exists()


def test_a_unit_that_keeps_nothing_writes_an_empty_file_with_its_schema(tmp_path):
    from pipeline.run.units import UnitDirs, run_unit

    schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("status", pa.string()),
                        ("reason", pa.string()), ("detail", pa.string()), ("duplicate_of", pa.string())])
    dirs = UnitDirs(str(tmp_path)).make()
    all_dropped = pa.RecordBatch.from_pylist([{"id": "a", "text": "x", "status": "rejected", "reason": "r1"},
                                              {"id": "b", "text": "y", "status": "unreadable", "reason": "r2"}],
                                             schema=schema)
    for name, batches in (("none", []), ("dropped", [all_dropped])):
        m = run_unit({"name": name}, iter(batches), schema, dirs, "fp")
        kept = pq.read_table(Path(dirs.out) / f"{name}.parquet")
        assert kept.num_rows == 0 and kept.schema.names == ["id", "text"] and m["records_out"] == 0
    assert (m["records_in"], m["rejected"], m["unreadable"]) == (2, {"r1": 1}, {"r2": 1})


def _stats(stage, n_in, n_out, rejected=None, unreadable=None):
    return StageStats(stage=stage, records_in=n_in, records_out=n_out, rejected=rejected or {},
                      unreadable=unreadable or {})


def test_the_nothing_kept_line_names_the_input_and_the_top_reasons(tmp_path):
    chain = [_stats("extract", 364, 344, {"extraction_empty": 20}),
             _stats("clean", 344, 0, {"lang_not_allowed": 281, "gopher_too_few_words": 40, "a": 1, "b": 1, "c": 1,
                                      "d": 1}),
             _stats("score", 0, 0), _stats("dedup", 0, 0)]
    assert nothing_kept_line(chain) == ("nothing was kept: 0 of 364 documents; top reasons: lang_not_allowed 281, "
                                        "gopher_too_few_words 40, extraction_empty 20, a 1, b 1")
    assert top_reasons([_stats("x", 3, 0, {"r": 1}, {"r": 2})]) == [("r", 3)]  # unreadable counts too
    assert nothing_kept_line([_stats("extract", 3, 3), _stats("clean", 3, 1, {"r": 2})]) is None
    assert nothing_kept_line([_stats("extract", 0, 0), _stats("clean", 0, 0)]) == \
        "nothing was kept: 0 of 0 documents; the input holds no records"
    for s in chain[1:]:  # the extract stats are missing: the chain starts at the first stage on disk
        s.write(str(tmp_path))
    assert [s.stage for s in load_chain(str(tmp_path), "score")] == ["clean", "score"]
    assert nothing_kept_line(load_chain(str(tmp_path), "dedup")).startswith("nothing was kept: 0 of 344 documents")


def test_the_runner_says_which_stage_emptied_the_corpus():
    from pipeline.run.runner import emptied_line

    line = emptied_line(_stats("clean", 344, 0, {"lang_not_allowed": 300, "gopher_too_few_words": 44}))
    assert line.startswith("clean: kept none of its 344 documents (lang_not_allowed 300, gopher_too_few_words 44)")


def test_mix_of_a_corpus_without_tokens_is_a_config_error():
    from pipeline.mix.mixture import MixError, check_tokens, parse_mix

    mix = parse_mix({"dataset_mix": {"web": 0.5, "cc": 0.5}, "max_seq_len": 64}, "m")
    empty = {"tokenizer": None, "documents": 0, "tokens": 0,
             "sources": {s: {"documents": 0, "tokens": 0, "shards": []} for s in ("web", "cc")}}
    with pytest.raises(MixError, match=r"^no tokens to mix: /d/tokenized/counts.json holds 0 tokens .*/d/stats"):
        check_tokens(mix, empty, "/d/tokenized")
    some = {"tokenizer": {"sha256": "ab"}, "sources": {"web": {"tokens": 5}, "cc": {"tokens": 0}}}
    with pytest.raises(MixError, match=r"^dataset_mix.cc: source 'cc' has no tokens"):
        check_tokens(mix, some, "/d/tokenized")


# ---- Spark, in the shared session ---------------------------------------------------------------

def _jsonl(path: Path, rows: list) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _paragraphs(n: int) -> list[str]:
    lines = (REPO / "quality_models" / "data" / "wikitext-2-valid.txt").read_text(encoding="utf-8").splitlines()
    return [l.strip() for l in lines if len(l.split()) > 80][:n]


def _assert_empty_chain(data: Path, stages: tuple[str, ...]) -> None:
    out = {"extract": "extracted", "clean": "cleaned", "score": "scored", "dedup": "dedup"}
    for stage in stages:
        s = json.loads((data / "stats" / f"{stage}.json").read_text())
        assert s["records_out"] == 0, (stage, s)
        assert _rows(data / out[stage]).num_rows == 0
    assert {"lang", "quality", "ppl_bucket", "exact_hash", "minhash_cluster"} <= set(_rows(data / "dedup").schema.names)


@pytest.mark.spark
def test_every_stage_on_empty_and_all_rejected_input(spark, tmp_path):
    """(a) extract keeps nothing (a file without records, a file of bad lines); (c) score rejects every
    document; (d) dedup on an empty input by both paths; (e) tokenize with a given tokenizer; (f) mix."""
    from jobs import clean, dedup, extract, mix as mix_job, score, tokens
    from pipeline.config import parse_config
    from pipeline.mix.mixture import MixError, load_mix
    from pipeline.tokenize.tokenizer import train_tokenizer, training_sentences

    src = tmp_path / "in"
    src.mkdir()
    (src / "empty.jsonl").write_text("")
    _jsonl(src / "bad.jsonl", ["not json", "[1, 2]"])
    _jsonl(src / "good.jsonl", [{"id": f"p{i}", "text": p} for i, p in enumerate(_paragraphs(4))])

    # (a): nothing survives extraction
    cfg_a = parse_config({"sources": {"a": {"format": "jsonl", "paths": [str(src / "empty.jsonl"),
                                                                         str(src / "bad.jsonl")]}},
                          "dedup": {"shards": 2}})
    data_a = tmp_path / "a"
    stats = [stage.run(spark, cfg_a, str(data_a)) for stage in (extract, clean, score, dedup)]
    assert (stats[0].records_in, stats[0].unreadable) == (2, {"bad_json": 2})
    _assert_empty_chain(data_a, ("extract", "clean", "score", "dedup"))
    assert json.loads((data_a / "stats" / "dedup.json").read_text())["extra"]["path"] == "local"
    assert nothing_kept_line(load_chain(str(data_a), "dedup")) == \
        "nothing was kept: 0 of 2 documents; top reasons: bad_json 2"

    # (d): the distributed path on the same empty input writes the same empty folders
    cfg_d = parse_config({"sources": {"a": {"format": "jsonl", "paths": [str(src / "bad.jsonl")]}},
                          "dedup": {"shards": 2, "local_max_bytes": 0}})
    d = dedup.run(spark, cfg_d, str(data_a))
    assert (d.records_in, d.records_out, d.extra["path"]) == (0, 0, "distributed")
    _assert_empty_chain(data_a, ("dedup",))
    assert _rows(data_a / "rejected" / "stage=dedup").num_rows == 0

    # (e): a given tokenizer still writes its shards, empty, and itself
    tok_cfg = parse_config({"sources": {"a": {"format": "jsonl", "paths": [str(src / "bad.jsonl")]}},
                            "tokenize": {"vocab_size": 500}}).tokenize
    model = train_tokenizer((line for p in _paragraphs(40) for line in training_sentences(p)), tok_cfg,
                            progress=lambda _: None)
    (tmp_path / "tok.model").write_bytes(model)
    cfg_e = parse_config({"sources": {"a": {"format": "jsonl", "paths": [str(src / "bad.jsonl")]},
                                      "b": {"format": "jsonl", "paths": [str(src / "bad.jsonl")]}},
                          "dedup": {"shards": 2},
                          "tokenize": {"tokenizer": str(tmp_path / "tok.model"), "shards_per_source": 2}})
    _, tstats, counts = tokens.run(spark, cfg_e, str(data_a), ([], {}))
    assert (tstats.records_in, tstats.records_out, counts["documents"], counts["tokens"]) == (0, 0, 0, 0)
    assert counts["tokenizer"]["sha256"] and (data_a / "tokenized" / "tokenizer.model").read_bytes() == model
    assert sorted(counts["sources"]) == ["a", "b"]
    for s in ("a", "b"):
        assert [x["path"] for x in counts["sources"][s]["shards"]] == [f"{s}/part-00000.parquet",
                                                                       f"{s}/part-00001.parquet"]
        for x in counts["sources"][s]["shards"]:
            t = pq.read_table(data_a / "tokenized" / x["path"])
            assert t.num_rows == 0 and t.schema == TOKEN_SCHEMA

    # (f): mixing it is a mix error naming the problem, before any shard is read
    mix_file = tmp_path / "m.yaml"
    mix_file.write_text("dataset_mix: {a: 1.0}\nmax_seq_len: 64\n")
    with pytest.raises(MixError, match="no tokens to mix"):
        mix_job.run(spark, load_mix(mix_file), str(data_a))

    # (c): score rejects every document that clean kept
    cfg_c = parse_config({"sources": {"c": {"format": "jsonl", "paths": [str(src / "good.jsonl")]}},
                          "score": {"min_quality": 1.0}, "dedup": {"shards": 2}})
    data_c = tmp_path / "c"
    stats = [stage.run(spark, cfg_c, str(data_c)) for stage in (extract, clean, score, dedup)]
    kept_by_clean = stats[1].records_out
    assert kept_by_clean and stats[2].rejected == {"low_quality": kept_by_clean}, stats[2]
    _assert_empty_chain(data_c, ("score", "dedup"))
    line = nothing_kept_line(load_chain(str(data_c), "dedup"))
    assert line.startswith("nothing was kept: 0 of 4 documents; top reasons: ") and "low_quality" in line


# ---- the commands, once --------------------------------------------------------------------------

@pytest.mark.slow
def test_make_chain_on_a_config_that_keeps_nothing(tmp_path):
    """(b): clean rejects every document (no source is in Chinese); tokenize and mix after it."""
    config = tmp_path / "nothing.yaml"
    config.write_text(
        "sources:\n"
        f"  web: {{format: warc, paths: ['{SAMPLE}/whirlwind.warc.gz', '{SAMPLE}/IAH-urls-wget.warc.gz']}}\n"
        f"  cc: {{format: jsonl, paths: ['{SAMPLE}/jsonl/*.json.gz'], text_field: text, id_field: id}}\n"
        "clean: {languages: [zh]}\n"
        "dedup: {shards: 2}\n"
        "tokenize: {vocab_size: 3000, shards_per_source: 2}\n"
        "spark: {spark.sql.shuffle.partitions: 4}\n")
    data = tmp_path / "data"
    common = (f"CONFIG={config}", f"DATA={data}", "SPARK_MASTER=local[2]")

    proc = make("clean-dedup", *common)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-4000:]
    extract_in = json.loads((data / "stats" / "extract.json").read_text())["records_in"]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(f"nothing was kept: 0 of {extract_in} documents; top reasons: lang_not_allowed "), last
    assert "clean: kept none of its" in proc.stdout
    _assert_empty_chain(data, ("clean", "score", "dedup"))
    assert json.loads((data / "stats" / "run.json").read_text())["nothing_kept"] == last

    proc = make("tokenize", *common)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-4000:]
    assert "nothing was tokenized: 0 of" in proc.stdout and "no tokenizer trained" in proc.stdout
    counts = json.loads((data / "tokenized" / "counts.json").read_text())
    assert (counts["documents"], counts["tokens"], counts["tokenizer"]) == (0, 0, None)
    assert sorted(counts["sources"]) == ["cc", "web"]
    for s in counts["sources"].values():
        assert len(s["shards"]) == 2
        for x in s["shards"]:
            t = pq.read_table(data / "tokenized" / x["path"])
            assert t.num_rows == 0 and t.schema == TOKEN_SCHEMA
    assert json.loads((data / "stats" / "tokenize.json").read_text())["records_out"] == 0
    assert not (data / "tokenized" / "tokenizer.model").exists()

    proc = make("mix", "MIX=mixes/sample.yaml", *common)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-4000:]
    assert "mix error: no tokens to mix" in out  # spark-submit passes the job's stderr to stdout
    assert not (data / "manifests").exists()
