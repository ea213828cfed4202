"""Decontamination without Spark: planted benchmark items are found with the right item ids, clean
text is not flagged, short items follow the documented rule, and config mistakes name the key."""
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pytest

from conftest import SHARED_DATA, SHARED_SKIP
from pipeline.config import ConfigError, parse_config
from pipeline.tokenize.decontam import (Benchmark, BenchmarkError, DecontamConfig, NgramIndex, decontam_partition,
                               fingerprint, load_benchmarks, read_benchmark, words)

REPO = Path(__file__).resolve().parents[3]
BUNDLED = REPO / "examples" / "benchmarks"
SHARED_BENCH = SHARED_DATA / "benchmarks"
WIKITEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"


def _gsm8k(path) -> Benchmark:
    return Benchmark("gsm8k", [str(path)], [str(path)], ["question"])


def _humaneval(path) -> Benchmark:
    return Benchmark("humaneval", [str(path)], [str(path)], ["prompt", "canonical_solution"], "task_id")


def _lines(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _wiki_paragraphs(n: int) -> list[str]:
    lines = WIKITEXT.read_text(encoding="utf-8").splitlines()
    return [l.strip() for l in lines if len(l.split()) > 60][:n]


def _index(*benches, **kw) -> NgramIndex:
    items, _ = load_benchmarks(DecontamConfig(list(benches)))
    return NgramIndex(items, **kw)


def _disguise(text: str) -> str:
    """What a web page does to a copied problem: case, punctuation, line breaks and spacing change."""
    return text.upper().replace(",", " ,").replace(". ", ".\n\n").replace("?", " ??")


def test_bundled_subsets_planted_items_are_found_with_their_ids():
    gsm = _lines(BUNDLED / "gsm8k-test-head40.jsonl")
    he = _lines(BUNDLED / "humaneval-head20.jsonl")
    index = _index(_gsm8k(BUNDLED / "gsm8k-test-head40.jsonl"), _humaneval(BUNDLED / "humaneval-head20.jsonl"))
    wiki = _wiki_paragraphs(3)
    doc = f"{wiki[0]}\n\nToday's puzzle: {_disguise(gsm[16]['question'])}\n\n{wiki[1]}"
    assert index.match(doc)[0][0] == "gsm8k:17"          # line 17 of the test set
    code = f"# helper from my notes\n{he[5]['prompt']}{he[5]['canonical_solution']}\nprint('ok')\n"
    assert index.match(code)[0][0] == "humaneval:HumanEval/5"
    both = doc + "\n" + code
    assert {k for k, _ in index.match(both)} >= {"gsm8k:17", "humaneval:HumanEval/5"}


def test_bundled_subsets_do_not_flag_clean_text():
    index = _index(_gsm8k(BUNDLED / "gsm8k-test-head40.jsonl"), _humaneval(BUNDLED / "humaneval-head20.jsonl"))
    for para in _wiki_paragraphs(200):
        assert index.match(para) == [], para[:80]
    with gzip.open(REPO / "examples" / "sample" / "jsonl" / "dolma-cc-documents-000.json.gz", "rt") as fh:
        for line in fh:
            assert index.match(json.loads(line)["text"]) == []


def test_full_benchmarks_from_shared_data():
    gsm_path = SHARED_BENCH / "gsm8k" / "gsm8k-test.jsonl"
    he_path = SHARED_BENCH / "humaneval" / "HumanEval.jsonl.gz"
    if not gsm_path.exists() or not he_path.exists():
        pytest.skip(f"{SHARED_SKIP}: {SHARED_BENCH}")
    gsm, he = _lines(gsm_path), _lines(he_path)
    index = _index(_gsm8k(gsm_path), _humaneval(he_path))
    wiki = _wiki_paragraphs(400)
    for n, line in enumerate(range(5, len(gsm), 131)):     # ten problems spread over the file
        doc = f"{wiki[n]}\n{_disguise(gsm[line - 1]['question'])}\n{wiki[n + 1]}"
        assert index.match(doc)[0][0] == f"gsm8k:{line}"
    for task in (0, 42, 163):
        item = he[task]
        # a solution pasted into a blog post, with the prompt's docstring but not its signature line
        body = item["prompt"].split('"""', 1)[-1] + item["canonical_solution"]
        assert index.match("Here is how I solved it:\n" + body)[0][0] == f"humaneval:HumanEval/{task}"
    for para in wiki[20:400]:
        assert index.match(para) == [], para[:80]
    shakespeare = SHARED_DATA / "text" / "reference" / "tinyshakespeare.txt"
    if shakespeare.exists():
        assert index.match(shakespeare.read_text(encoding="utf-8")) == []


def test_short_texts_match_whole_or_are_skipped(tmp_path):
    f = tmp_path / "b.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in [
        {"q": "one two three four five six seven eight nine"},   # 9 words < 13: matched whole
        {"q": "return a plus b"},                                  # 4 words < min_words: skipped
    ]) + "\n")
    index = _index(Benchmark("tiny", [str(f)], [str(f)], ["q"]), ngram=13, min_words=8)
    assert index.stats["tiny.whole_texts"] == 1 and index.stats["tiny.skipped_short_texts"] == 1
    assert index.match("zero One, two; three four five six seven eight nine ten") == [("tiny:1", 1)]
    assert index.match("one two three four five six seven eight") == []   # not the whole item
    assert index.match("x = return a plus b") == []


def test_normalisation_is_the_same_on_both_sides():
    assert words("Janet's ducks lay 16 eggs!") == words("JANET S  ducks\nlay 16 eggs")
    assert words("snake_case_name") == ["snake", "case", "name"]


def test_unreadable_lines_are_counted_and_missing_fields_are_an_error(tmp_path):
    f = tmp_path / "b.jsonl.gz"
    with gzip.open(f, "wt") as fh:
        fh.write('{"question": "a b c"}\nnot json\n[1, 2]\n{"other": 1}\n')
    items, info = read_benchmark(Benchmark("b", [str(f)], [str(f)], ["question"]))
    assert [it.key for it in items] == ["b:1"]
    assert info["bad_lines"] == 2 and info["missing_fields"] == 1
    with pytest.raises(BenchmarkError, match=r"decontaminate\.benchmarks\.b\.fields"):
        read_benchmark(Benchmark("b", [str(f)], [str(f)], ["prompt"]))


def test_batch_function_marks_status_reason_detail():
    cfg = DecontamConfig([_gsm8k(BUNDLED / "gsm8k-test-head40.jsonl")])
    items, _ = load_benchmarks(cfg)
    gsm = _lines(BUNDLED / "gsm8k-test-head40.jsonl")
    texts = [_wiki_paragraphs(1)[0], "Homework: " + gsm[2]["question"]]
    batch = pa.RecordBatch.from_pydict({"id": ["a", "b"], "text": texts})
    run = decontam_partition(lambda: items, fingerprint(items, cfg.ngram, cfg.min_words), cfg, batch.schema)
    out = next(run(iter([batch]))).to_pydict()
    assert out["status"] == ["kept", "rejected"] and out["reason"] == [None, "contamination"]
    assert out["detail"] == [None, "gsm8k:3"] and out["contamination"] == [None, ["gsm8k:3"]]
    cfg.remove = False  # report only: the document stays, its column says why it is suspect
    out = next(decontam_partition(lambda: items, "other", cfg, batch.schema)(iter([batch]))).to_pydict()
    assert out["status"] == ["kept", "kept"] and out["contamination"] == [None, ["gsm8k:3"]]


def _cfg(tmp_path, decontaminate):
    (tmp_path / "a.warc.gz").write_bytes(b"")
    return {"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "decontaminate": decontaminate}


def test_config_builds_benchmarks(tmp_path):
    (tmp_path / "g.jsonl").write_text('{"question": "x"}\n')
    cfg = parse_config(_cfg(tmp_path, {"ngram": 8, "remove": False, "benchmarks": [
        {"name": "gsm8k", "paths": "g.jsonl", "fields": ["question"]}]}), base=tmp_path)
    dc = cfg.decontaminate
    assert dc.ngram == 8 and dc.remove is False
    assert dc.benchmarks[0].files == [str((tmp_path / "g.jsonl").resolve())] and dc.benchmarks[0].id_field is None
    assert parse_config(_cfg(tmp_path, None), base=tmp_path).decontaminate.benchmarks == []


@pytest.mark.parametrize("section, key", [
    ({"benchmarks": [{"name": "gsm8k", "paths": ["missing.jsonl"]}]}, "decontaminate.benchmarks.gsm8k.paths"),
    ({"benchmarks": [{"paths": ["g.jsonl"]}]}, "decontaminate.benchmarks[0].name"),
    ({"benchmarks": [{"name": "g", "paths": ["g.jsonl"], "feilds": ["q"]}]}, "decontaminate.benchmarks.g.feilds"),
    ({"benchmarks": [{"name": "g", "paths": ["g.jsonl"], "fields": []}]}, "decontaminate.benchmarks.g.fields"),
    ({"benchmarks": [{"name": "g", "paths": ["g.jsonl"]}, {"name": "g", "paths": ["g.jsonl"]}]},
     "decontaminate.benchmarks.g"),
    ({"benchmarks": {"name": "g"}}, "decontaminate.benchmarks"),
    ({"ngram": 0}, "decontaminate.ngram"),
    ({"ngrams": 13}, "decontaminate.ngrams"),
    ({"remove": "yes"}, "decontaminate.remove"),
])
def test_config_errors_name_the_key(tmp_path, section, key):
    (tmp_path / "g.jsonl").write_text('{"question": "x"}\n')
    with pytest.raises(ConfigError) as err:
        parse_config(_cfg(tmp_path, section), base=tmp_path)
    assert str(err.value).startswith(key + ":") or f" {key}:" in str(err.value), str(err.value)
