"""What `glassbox train-classifier` reads (quality_models/inputs.py) and how it cuts, splits and balances it
(quality_models/examples.py): plain Python, no fastText."""
import gzip
import json
import random
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO
from quality_models import examples as ex
from quality_models.inputs import Doc, InputError, parse_spec, read_input, read_labels

PROSE = REPO / "quality_models" / "data" / "prose"


def test_input_options_are_split_off_only_when_they_read_as_options():
    s = parse_spec("data/x.jsonl.gz:lang=en,name=web/x,license=CC BY 4.0")
    assert s.path == "data/x.jsonl.gz" and s.options == {"lang": "en", "name": "web/x", "license": "CC BY 4.0"}
    assert parse_spec("s3://bucket/key.jsonl").path == "s3://bucket/key.jsonl"
    assert parse_spec("prose/en/textbook.jsonl.gz").name == "en/textbook"
    with pytest.raises(InputError, match="unknown option 'colour'"):
        parse_spec("x.jsonl:colour=red")
    with pytest.raises(InputError, match="part=all"):
        parse_spec("data/run:part=all")


def test_jsonl_rows_keep_their_licence_language_and_group(tmp_path):
    f = tmp_path / "docs.jsonl.gz"
    rows = [{"id": "book#p00", "text": "one", "license": "CC0", "lang": "en", "source": "a"},
            {"id": "book#p01", "text": "two", "lang": "en", "source": "b"},
            {"id": "other", "text": "   ", "lang": "en"}, {"id": "fr", "text": "trois", "lang": "fr"}]
    with gzip.open(f, "wt") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows) + "not json\n")
    skipped = Counter()
    docs = read_input(parse_spec(f"{f}:lang=en,license=MIT"), skipped)
    assert [(d.text, d.group, d.license, d.lang) for d in docs] == [("one", "book", "CC0", "en"), ("two", "book", "MIT", "en")]
    assert sum(skipped.values()) == 3 and any("not JSON" in k for k in skipped)
    assert [d.text for d in read_input(parse_spec(f"{f}:source=b"), Counter())] == ["two"]


def test_a_data_folder_gives_its_kept_or_rejected_documents(tmp_path):
    data = tmp_path / "DATA"
    (data / "dedup").mkdir(parents=True)
    (data / "rejected" / "stage=clean").mkdir(parents=True)
    (data / "rejected" / "stage=dedup").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["k1", "k2"], "text": ["kept one", "kept two"], "source": ["web", "books"],
                             "lang": ["en", "en"]}), data / "dedup" / "part-0.parquet")
    pq.write_table(pa.table({"id": ["r1", "r2"], "text": ["spam spam", "menu"], "source": ["web", "web"],
                             "lang": ["en", "en"], "reason": ["gopher_dup_lines", "fineweb_short_lines"]}),
                   data / "rejected" / "stage=clean" / "part-0.parquet")
    pq.write_table(pa.table({"id": ["r3"], "text": ["copy"], "source": ["web"], "lang": ["en"],
                             "reason": ["exact_duplicate"]}), data / "rejected" / "stage=dedup" / "part-0.parquet")
    texts = lambda arg: sorted(d.text for d in read_input(parse_spec(arg), Counter()))  # noqa: E731
    assert texts(str(data)) == ["kept one", "kept two"]
    assert texts(f"{data}:source=books") == ["kept two"]
    assert texts(f"{data}:part=rejected") == ["copy", "menu", "spam spam"]
    assert texts(f"{data}:part=rejected,stage=clean,reason=gopher_dup_lines") == ["spam spam"]
    (data / "dedup" / "part-0.parquet").unlink()
    (data / "dedup").rmdir()
    with pytest.raises(InputError, match="make clean-dedup"):
        read_input(parse_spec(str(data)), Counter())
    with pytest.raises(InputError, match="no such file"):
        read_input(parse_spec(str(tmp_path / "nope.jsonl")), Counter())


def test_a_label_file_counts_every_row_it_cannot_use(tmp_path):
    good = {"id": "a", "source": "web", "lang": "en", "text": "Some text.", "grade": 4, "status": "graded",
            "reply": "4", "model": "m", "rubric": {"name": "edu", "sha256": "0" * 64}}
    bad = [{**good, "grade": None, "status": "no_grade"}, {**good, "grade": None, "status": "error"},
           {**good, "grade": "3"}, {**good, "grade": True}, {**good, "grade": 7}, {**good, "text": ""}]
    f = tmp_path / "labels.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [good, {**good, "id": "b", "grade": 2.5}] + bad) + "{oops\n")
    skipped = Counter()
    rows = read_labels(str(f), skipped)
    assert [(r.doc.group, r.grade) for r in rows] == [("a", 4.0), ("b", 2.5)]
    assert skipped == Counter({"labels: no grade (status no_grade)": 1, "labels: no grade (status error)": 1,
                               "labels: grade is not a number": 2, "labels: grade outside [0, 5]": 1,
                               "labels: no text": 1, "labels: not JSON": 1})


def test_chunks_are_paragraph_sized_in_word_layer_tokens():
    cfg = ex.ChunkConfig(min_words=20, max_words=40, min_tail=5)
    text = "\n".join(["A short line of six words."] * 9 + ["Home"])
    got = ex.chunks(text, "en", cfg)
    assert [len(ex.segments(c, "en")) for c in got] == [21, 21, 21]     # 7 tokens a line; "Home" is too short
    zh = "我们在北京大学学习。" * 30          # one long line: cut at sentence ends
    assert all(len(ex.segments(c, "zh")) <= 40 for c in ex.chunks(zh, "zh", cfg))


def test_split_keeps_works_whole_and_balances_inputs_evenly():
    docs = [Doc("text " * 100 + str(i), f"work{i // 3}", "prose/a" if i < 60 else "prose/b", "en")
            for i in range(90)]
    web = [Doc("page " * 100 + str(i), f"url{i}", "web/x", "en") for i in range(40)]
    data = ex.build(docs, web, seed=3, holdout=0.25, cfg=ex.ChunkConfig(min_words=50, max_words=120))
    train_groups = {e.group for e in data.train}
    assert train_groups.isdisjoint({e.group for e in data.held_out})
    per_class = Counter(e.label for e in data.train)
    assert per_class[0] == per_class[1]
    by_input = Counter(e.input for e in data.train if e.label == 1)
    assert abs(by_input["prose/a"] - by_input["prose/b"]) <= 1          # 60 vs 30 documents, equal shares
    again = ex.build(docs, web, seed=3, holdout=0.25, cfg=ex.ChunkConfig(min_words=50, max_words=120))
    assert [e.text for e in again.train] == [e.text for e in data.train]
    over = ex.balance(data.train[:10], data.train[10:13], random.Random(0), oversample=True)
    assert len(over[0]) == len(over[1]) == 10


def test_an_input_weight_is_its_share_of_the_balanced_class():
    """weight=3.5 on each of two inputs against seven of weight 1: the two give half the class (issue 37's English
    default: seven prose kinds and two instruction sets)."""
    items = [ex.Example(f"{name} {i}", 1, name, f"{name}{i}", "en") for name in "abcdefgxy" for i in range(400)]
    got = Counter(e.input for e in ex._even(items, 1400, random.Random(0), {"x": 3.5, "y": 3.5}))
    assert got["x"] + got["y"] == 700 and all(got[k] == 100 for k in "abcdefg")
    plain = [e.text for e in ex._even(items, 900, random.Random(0))]
    assert plain == [e.text for e in ex._even(items, 900, random.Random(0), {k: 1.0 for k in "abcdefgxy"})]
    few = Counter(e.input for e in ex._even(items[:400] + items[-30:], 200, random.Random(0), {"y": 5}))
    assert few == {"a": 170, "y": 30}             # an input that runs out leaves the rest to the others


def test_the_instruction_copy_never_holds_the_evaluation_quarter():
    """quality_models/data/instruct (copied) and the evaluation part (quality_models/instruct.py: side) are disjoint,
    and every copied record passed the length filter."""
    from quality_models import instruct

    for name in ("dolly", "oasst1"):
        rows = [json.loads(line) for line in gzip.open(REPO / "quality_models" / "data" / "instruct" /
                                                         f"{name}.jsonl.gz", "rt", encoding="utf-8")]
        assert len(rows) == instruct.COPY and all(instruct.side(r["id"]) == "train" for r in rows)
        body = [r["text"].split("\n\n", 1)[-1] if name == "dolly" else r["text"] for r in rows]
        assert min(map(len, body)) >= instruct.MIN_CHARS
    assert sum(instruct.side(f"oasst-train-{i}") == "eval" for i in range(4000)) in range(900, 1100)


def test_no_c4_page_is_on_both_sides():
    """C4 negatives (quality_models/data/web) and the ablation's base (examples/ablate/web): split by URL."""
    urls = [{json.loads(line)["url"] for line in gzip.open(REPO / side / "c4-en.jsonl.gz", "rt", encoding="utf-8")}
            for side in ("quality_models/data/web", "examples/ablate/web")]
    assert len(urls[0]) == 510 and len(urls[1]) == 490 and urls[0].isdisjoint(urls[1])


def test_the_shipped_prose_copy_is_split_by_parent_work():
    """pieces <work>#pNN of one Gutenberg book are one group: held out together or trained together."""
    docs = read_input(parse_spec(f"{PROSE / 'en' / 'literature.jsonl.gz'}:lang=en"), Counter())
    sides = {}
    for d in docs:
        sides.setdefault(d.group, set()).add(ex.held_out(d.group, 0, 0.2))
    assert len(sides) < len(docs) and all(len(v) == 1 for v in sides.values())
