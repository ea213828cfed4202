"""dedup/ -> tokenize job (decontaminate, tokenizer, shards) -> mix job -> manifest, on a real local
Spark session, with benchmark items planted in the corpus."""
import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm

from jobs import mix as mix_job
from jobs import tokens as tokens_job
from pipeline.config import parse_config
from glassbox.contracts import manifest_content_hash
from pipeline.mix.mixture import MixError, load_mix

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "examples" / "benchmarks"
SHARDS = 3


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _corpus() -> tuple[list[dict], dict[str, str]]:
    """Wikipedia paragraphs as two sources plus a one-document source; three documents carry
    benchmark items. Returns (rows, {id: expected detail})."""
    paras = [l.strip() for l in (REPO / "quality_models" / "data" / "wikitext-2-valid.txt")
             .read_text(encoding="utf-8").splitlines() if len(l.split()) > 80][:38]
    gsm, he = _jsonl(BUNDLED / "gsm8k-test-head40.jsonl"), _jsonl(BUNDLED / "humaneval-head20.jsonl")
    rows = [{"id": f"w{i:03d}", "source": "wiki", "text": p} for i, p in enumerate(paras[:25])]
    rows += [{"id": f"b{i:03d}", "source": "books", "text": p} for i, p in enumerate(paras[25:])]
    rows.append({"id": "t000", "source": "tiny", "text": "A single short document.\n\twith a tab and  two spaces"})
    rows[3]["text"] += "\n\nA reader asks: " + gsm[16]["question"]
    rows[7]["text"] = gsm[2]["question"].lower() + "\n" + rows[7]["text"]
    rows[27]["text"] += "\n\n```python\n" + he[5]["prompt"] + he[5]["canonical_solution"] + "```\n"
    return rows, {"w003": "gsm8k:17", "w007": "gsm8k:3", "b002": "humaneval:HumanEval/5"}


def _config():
    return parse_config({
        "sources": {"cc": {"format": "jsonl", "paths": [str(REPO / "examples/sample/jsonl/*.json.gz")]}},
        "dedup": {"shards": 2},
        "decontaminate": {"benchmarks": [
            {"name": "gsm8k", "paths": [str(BUNDLED / "gsm8k-test-head40.jsonl")], "fields": ["question"]},
            {"name": "humaneval", "paths": [str(BUNDLED / "humaneval-head20.jsonl")],
             "fields": ["prompt", "canonical_solution"], "id_field": "task_id"}]},
        "tokenize": {"vocab_size": 700, "shards_per_source": SHARDS, "sample_docs": 1000},
    })


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    data = tmp_path_factory.mktemp("corpus")
    rows, planted = _corpus()
    (data / "dedup").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), data / "dedup" / "part-00000.parquet")
    dstats, tstats, counts = tokens_job.run(spark, _config(), str(data))
    mix_file = tmp_path_factory.mktemp("mixes") / "demo.yaml"
    mix_file.write_text("dataset_mix: {wiki: 0.6, books: 0.3, tiny: 0.1}\nmax_seq_len: 256\nseed: 7\n"
                        "total_tokens: 20000\nmax_epochs: 100\n")
    manifest, path = mix_job.run(spark, load_mix(mix_file), str(data))
    return {"data": data, "rows": rows, "planted": planted, "dstats": dstats, "tstats": tstats, "counts": counts,
            "mix_file": mix_file, "manifest": manifest, "path": Path(path)}


def test_planted_benchmark_items_are_removed_with_their_items(run):
    data, planted = run["data"], run["planted"]
    rejected = ds.dataset(str(data / "rejected" / "stage=decontaminate")).to_table().to_pylist()
    assert {r["id"]: r["detail"] for r in rejected} == planted
    assert all(r["reason"] == "contamination" and r["contamination"][0] == r["detail"] for r in rejected)
    stats = json.loads((data / "stats" / "decontaminate.json").read_text())
    assert stats["rejected"] == {"contamination": 3} and stats["records_out"] == len(run["rows"]) - 3
    assert stats["extra"]["contaminated_by_benchmark"] == {"gsm8k": 2, "humaneval": 1}
    assert {m["id"]: m["items"][0] for m in stats["extra"]["matches"]} == planted
    kept = {r["id"] for r in ds.dataset(str(data / "decontaminated")).to_table(columns=["id"]).to_pylist()}
    assert not kept & set(planted) and len(kept) == len(run["rows"]) - 3


def test_token_shards_follow_the_contract(run):
    data, counts = run["data"], run["counts"]
    tok_dir = data / "tokenized"
    sp = spm.SentencePieceProcessor(model_file=str(tok_dir / "tokenizer.model"))
    eos = counts["eos_id"]
    assert sp.id_to_piece(eos) == "<eod>" and counts["tokenizer"]["sha256"] == _sha(tok_dir / "tokenizer.model")
    texts = {r["id"]: r["text"] for r in run["rows"] if r["id"] not in run["planted"]}
    seen = set()
    for source in ("books", "tiny", "wiki"):
        files = sorted(p.name for p in (tok_dir / source).iterdir())
        assert files == [f"part-{i:05d}.parquet" for i in range(SHARDS)]
        listed = counts["sources"][source]["shards"]
        assert [s["path"] for s in listed] == [f"{source}/{f}" for f in files]
        for shard in listed:
            path = tok_dir / shard["path"]
            table = pq.read_table(path)
            assert table.schema == pa.schema([("id", pa.string()), ("source", pa.string()),
                                              ("tokens", pa.list_(pa.int32())), ("n_tokens", pa.int32())])
            assert shard["sha256"] == _sha(path) and shard["documents"] == table.num_rows
            ids = table.column("id").to_pylist()
            assert ids == sorted(ids)
            for r in table.to_pylist():
                assert r["source"] == source and r["n_tokens"] == len(r["tokens"])
                assert r["tokens"][-1] == eos and r["tokens"].count(eos) == 1
                assert sp.decode(r["tokens"][:-1]) == texts[r["id"]]
                seen.add(r["id"])
            assert shard["tokens"] == sum(table.column("n_tokens").to_pylist())
    assert seen == set(texts)  # every kept document, once
    assert sum(s["documents"] == 0 for s in counts["sources"]["tiny"]["shards"]) == SHARDS - 1
    stats = json.loads((data / "stats" / "tokenize.json").read_text())
    assert stats["records_in"] == stats["records_out"] == len(texts) and stats["extra"]["tokens"] == counts["tokens"]
    assert stats["extra"]["tokenizer"]["trained"] and stats["extra"]["tokenizer"]["sample"]["documents"] == len(texts)
    assert not list(data.glob("*.__writing")) and not list(tok_dir.rglob("*.tmp"))


def test_manifest_matches_the_shards(run):
    m, path = run["manifest"], run["path"]
    assert path == run["data"] / "manifests" / "demo.json"
    assert path.read_text() == json.dumps(m, sort_keys=True, indent=2) + "\n"
    assert m["content_hash"] == manifest_content_hash(m)
    assert (m["name"], m["seed"], m["max_seq_len"], m["total_tokens"]) == ("demo", 7, 256, 20_000)
    assert m["tokenizer"]["path"] == "../tokenized/tokenizer.model"
    assert m["tokenizer_sha256"] == m["tokenizer"]["sha256"] == _sha(path.parent / m["tokenizer"]["path"])
    for name, src in m["sources"].items():
        total = 0
        for shard in src["shards"]:
            assert shard["path"].startswith(f"../tokenized/{name}/")
            file = path.parent / shard["path"]
            assert _sha(file) == shard["sha256"]
            table = pq.read_table(file, columns=["n_tokens"])
            assert table.num_rows == shard["documents"] and sum(table.column("n_tokens").to_pylist()) == shard["tokens"]
            total += shard["tokens"]
        assert total == src["available_tokens"] == run["counts"]["sources"][name]["tokens"]
        assert not src["capped"] and abs(src["target_tokens"] / m["total_tokens"] - src["requested_weight"]) <= \
            0.01 * src["requested_weight"]


def test_rerun_is_byte_identical(spark, run):
    data = run["data"]
    before = _snapshot(data / "tokenized")
    manifest_bytes = run["path"].read_bytes()
    mix_job.run(spark, load_mix(run["mix_file"]), str(data))
    assert run["path"].read_bytes() == manifest_bytes
    tokens_job.run(spark, _config(), str(data))
    assert _snapshot(data / "tokenized") == before
    mix_job.run(spark, load_mix(run["mix_file"]), str(data))
    assert run["path"].read_bytes() == manifest_bytes


def test_a_changed_shard_is_refused(spark, run, tmp_path):
    data = tmp_path / "copy"
    shutil.copytree(run["data"] / "tokenized", data / "tokenized")
    shard = data / "tokenized" / "wiki" / "part-00001.parquet"
    table = pq.read_table(shard)
    pq.write_table(table.slice(1), shard)  # one document fewer
    with pytest.raises(MixError, match="changed since tokenize"):
        mix_job.run(spark, load_mix(run["mix_file"]), str(data))


def test_mix_cli_names_missing_sources_before_spark(run, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset_mix: {wiki: 0.5, code: 0.5}\nmax_seq_len: 128\n")
    assert mix_job.main(["--mix", str(bad), "--data", str(run["data"])]) == 2
    err = capsys.readouterr().err
    assert "dataset_mix.code" in err and "sources present: books, tiny, wiki" in err


def test_a_given_tokenizer_is_used_as_is(run, tmp_path):
    from jobs.tokens import _tokenizer

    tc = _config().tokenize
    tc.tokenizer = str(run["data"] / "tokenized" / "tokenizer.model")
    model, info = _tokenizer(None, {}, tc, str(tmp_path))  # no sampling, so no documents needed
    assert not info["trained"] and info["sha256"] == run["counts"]["tokenizer_sha256"] and info["eos_id"] == 2


def test_without_the_jvm_the_same_files(run, spark, tmp_path):
    """The local path (pipeline/tokenize/local.py, what `make tokenize` runs for a small corpus) on the same dedup/:
    the token shards, tokenizer and counts.json the same bytes; decontaminated/ the same rows in the same files and
    order, rejected/ the same rows (ours sorted by id); the same stats; then the same manifest from the mix job's
    local processes; no Spark session asked for."""
    from pyspark import cloudpickle

    from pipeline.run.local import LocalSession
    from pipeline.tokenize.local import LocalCorpus

    data, local = run["data"], tmp_path / "local"
    shutil.copytree(data / "dedup", local / "dedup")
    session = LocalSession(2, lambda: pytest.fail("a Spark session was started"), cloudpickle.dumps)
    try:
        dstats, tstats, counts = tokens_job.run_local(session.sparkContext, _config(), str(local))
        assert counts == run["counts"]
        assert _snapshot(local / "tokenized") == _snapshot(data / "tokenized")
        for folder in ("decontaminated", "rejected/stage=decontaminate"):
            spark_files = sorted((data / folder).glob("*.parquet"))
            local_files = sorted((local / folder).glob("*.parquet"))
            assert [p.name for p in local_files] == [f"part-{i:05d}.zstd.parquet" for i in range(len(local_files))]
            assert [p.name[:10] for p in spark_files] == [p.name[:10] for p in local_files]
            for a, b in zip(spark_files, local_files):
                ta, tb = pq.read_table(a), pq.read_table(b)
                if folder.startswith("rejected"):   # Spark's in the order it packed its input files; ours by id
                    ta = ta.sort_by("id")
                assert ta.schema.equals(tb.schema) and ta.equals(tb), folder
        varying = ("wall_s", "written_at", "input", "output")
        for stage, ours in (("decontaminate", dstats), ("tokenize", tstats)):
            theirs = json.loads((data / "stats" / f"{stage}.json").read_text())
            mine = json.loads((local / "stats" / f"{stage}.json").read_text())
            assert {k: v for k, v in mine.items() if k not in varying} == \
                {k: v for k, v in theirs.items() if k not in varying}, stage
        # make mix on a small corpus checks the shards in the same local processes: the same manifest
        manifest, _ = mix_job.run(session, load_mix(run["mix_file"]), str(local))
        assert manifest == run["manifest"]
        # the sample's order when the pre-filter bites (a few documents per source): Spark's xxhash64 order
        cfg = _config()
        cfg.tokenize.sample_docs = 4
        kept = pq.read_table(local / "decontaminated")
        corpus, spark_corpus = LocalCorpus(session.sparkContext, kept), tokens_job.SparkCorpus(spark, str(data))
        per_source = {s: n for s, (n, _) in corpus.per_source().items()}
        assert per_source == {s: n for s, (n, _) in spark_corpus.per_source().items()}
        offered = list(corpus.offered(per_source, cfg.tokenize))
        assert len(offered) < sum(per_source.values()) and offered == list(spark_corpus.offered(per_source, cfg.tokenize))
    finally:
        session.stop()
