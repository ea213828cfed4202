"""`glassbox train-classifier` end to end, as a user runs it: from a label file in the annotation contract (what
`glassbox annotate` writes) and from a pipeline DATA folder; the model it writes is scored by the score stage's own
classifier; the same inputs give the same bytes; bad input is one line and exit 2, never a traceback."""
import gzip
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO
from glassbox.contracts import sha256_file
from pipeline.score.quality import QualityClassifier

PROSE = REPO / "quality_models" / "data" / "prose" / "en"
WEB = REPO / "quality_models" / "data" / "web" / "cc2019-dolma.jsonl.gz"
GLASSBOX = [sys.executable, "-m", "glassbox.cli", "train-classifier"]


def run(*args, timeout=300):
    return subprocess.run(GLASSBOX + [str(a) for a in args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def docs(path, n):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(n), fh)]


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    """Graded rows in the annotation contract: textbook sections graded 4 and 5, English-looking web pages 0-2,
    plus the rows an annotator leaves behind (no grade, an error, a reply that held no number)."""
    rows = []
    for i, d in enumerate(docs(PROSE / "textbook.jsonl.gz", 60)):
        rows.append({"id": d["id"], "source": "books", "lang": "en", "text": d["text"], "grade": 4 + i % 2,
                     "status": "graded", "reply": f"Educational value: {4 + i % 2}"})
    web = [d for d in docs(WEB, 331) if sum(c.isascii() for c in d["text"]) > 0.95 * len(d["text"])]
    for i, d in enumerate(web[:60]):
        rows.append({"id": d["id"], "source": "web", "lang": "en", "text": d["text"], "grade": i % 3,
                     "status": "graded", "reply": f"Grade {i % 3}"})
    rows += [{"id": "x1", "source": "web", "lang": "en", "text": "t", "grade": None, "status": "no_grade",
              "reply": "I cannot grade this."},
             {"id": "x2", "source": "web", "lang": "en", "text": "t", "grade": None, "status": "error", "reply": None},
             {"id": "x3", "source": "web", "lang": "en", "text": "t", "grade": "four", "status": "graded",
              "reply": "four"}]
    for r in rows:
        r.update(model="tiny", rubric={"name": "educational-value-en", "sha256": "0" * 64})
    f = tmp_path_factory.mktemp("labels") / "labels.jsonl"
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return f


def test_labels_train_a_model_the_scorer_reads_byte_for_byte_again(labels, tmp_path):
    out = tmp_path / "m" / "quality_en.ftz"
    r = run("--lang", "en", "--labels", labels, "--threshold", 3, "--out", out, "--epoch", 10)
    assert r.returncode == 0, r.stderr
    assert "held-out precision" in r.stderr and "ROC AUC" in r.stderr
    facts = json.loads(out.with_suffix(".json").read_text())
    assert facts["labels"]["rows_with_grade"] == 120 and facts["labels"]["threshold"] == 3
    assert facts["skipped"] == {"labels: grade is not a number": 1, "labels: no grade (status error)": 1,
                                "labels: no grade (status no_grade)": 1}
    assert facts["held_out"]["roc_auc"] > 0.8
    card = out.with_suffix(".md").read_text()
    assert "grade is not a number | 1" in card and "--labels" in card and str(tmp_path) not in card
    clf = QualityClassifier(out)
    p_book, p_spam = clf.predict_proba([docs(PROSE / "textbook.jsonl.gz", 200)[150]["text"],
                                        "BUY NOW!!! cheap pills casino bonus click here"], ["en", "en"])
    assert p_book > p_spam
    again = tmp_path / "again.ftz"
    assert run("--lang", "en", "--labels", labels, "--threshold", 3, "--out", again, "--epoch", 10).returncode == 0
    assert sha256_file(again) == sha256_file(out)                      # one thread and a seed: the same bytes


def test_a_data_folder_trains_kept_against_rejected(tmp_path):
    data = tmp_path / "DATA"
    (data / "dedup").mkdir(parents=True)
    (data / "rejected" / "stage=clean").mkdir(parents=True)
    prose = docs(PROSE / "government.jsonl.gz", 40) + docs(PROSE / "science.jsonl.gz", 30)
    pq.write_table(pa.table({"id": [d["id"] for d in prose], "text": [d["text"] for d in prose],
                             "source": ["books"] * len(prose), "lang": ["en"] * len(prose)}),
                   data / "dedup" / "part-0.parquet")
    web = docs(WEB, 200)
    pq.write_table(pa.table({"id": [d["id"] for d in web], "text": [d["text"] for d in web],
                             "source": ["web"] * len(web), "lang": [None] * len(web),
                             "reason": ["gopher_dup_lines"] * len(web)}),
                   data / "rejected" / "stage=clean" / "part-0.parquet")
    # a rejected part of another stage, not asked for: none of it may train
    (data / "rejected" / "stage=dedup").mkdir(parents=True)
    other = docs(PROSE / "news.jsonl.gz", 20)
    pq.write_table(pa.table({"id": [d["id"] for d in other], "text": [d["text"] for d in other],
                             "source": ["web"] * len(other), "lang": ["en"] * len(other),
                             "reason": ["near_duplicate"] * len(other)}),
                   data / "rejected" / "stage=dedup" / "part-0.parquet")
    out = tmp_path / "q.ftz"
    r = run("--lang", "en", "--positives", f"{data}:source=books", "--negatives", f"{data}:part=rejected,stage=clean",
            "--out", out, "--epoch", 5)
    assert r.returncode == 0, r.stderr
    facts = json.loads(out.with_suffix(".json").read_text())
    assert facts["counts"]["train_per_class"] > 30
    # rows without a language got lid.176's: the web excerpt is many languages, only English trains
    assert any("DATA: language " in k for k in facts["skipped"]), facts["skipped"]
    # the positives are the kept rows and the negatives exactly the rows clean rejected: one file each, by its bytes;
    # every rejected row either trained or is counted as skipped (no text, another language)
    rows = {(f["role"], f["sha256"]): f["documents"] for f in facts["files"]}
    kept, rejected = (sha256_file(data / part / "part-0.parquet") for part in ("dedup", "rejected/stage=clean"))
    assert set(rows) == {("positive", kept), ("negative", rejected)}, facts["files"]
    assert rows[("positive", kept)] == len(prose)
    assert rows[("negative", rejected)] + sum(facts["skipped"].values()) == len(web), (rows, facts["skipped"])
    assert 50 < rows[("negative", rejected)] < len(web)


def test_positive_kinds_as_classes_score_one_minus_web(tmp_path):
    """`class=` gives a positive input a label of its own; the score is 1 - P(web), read by the score stage's
    classifier and accepted by the config check; the card records the classes."""
    from pipeline.score.quality import LQ_LABEL, check_labels
    out = tmp_path / "q.ftz"
    r = run("--lang", "en", "--positives", f"{PROSE / 'government.jsonl.gz'}:lang=en,class=prose",
            f"{PROSE / 'howto.jsonl.gz'}:lang=en,class=guide", "--negatives", WEB, "--out", out, "--epoch", 5)
    assert r.returncode == 0, r.stderr
    facts = json.loads(out.with_suffix(".json").read_text())
    assert facts["positive_classes"] == {"en/government": "__label__hq_prose", "en/howto": "__label__hq_guide"}
    clf = QualityClassifier(out)
    model = clf.load()
    assert sorted(model.get_labels()) == ["__label__hq_guide", "__label__hq_prose", LQ_LABEL]
    check_labels(out)                                                     # the config check takes it
    texts = [docs(PROSE / "government.jsonl.gz", 200)[-1]["text"], docs(WEB, 40)[30]["text"]]
    scores = clf.predict_proba(texts, ["en", "en"])
    # the score is the complement of the web label, i.e. the two positive classes' probabilities summed
    from pipeline.score.quality import preprocess
    labels, probs = model.predict([preprocess(t, "en") for t in texts], k=-1)
    for s, labs, ps in zip(scores, labels, probs):
        assert s == pytest.approx(sum(p for lab, p in zip(labs, ps) if lab != LQ_LABEL), abs=1e-4)


@pytest.mark.parametrize("args, words", [
    (["--positives", f"{PROSE / 'news.jsonl.gz'}:lang=en,class=Prose!", "--negatives", str(WEB)],
     "class='Prose!' must be lower-case letters and digits"),
    (["--positives", f"{PROSE / 'news.jsonl.gz'}:lang=en", "--negatives", f"{WEB}:class=web"],
     "class= names a kind of positive; the negatives are one class"),
    (["--positives", "nope.jsonl", "--negatives", str(WEB)], "nope.jsonl: no such file"),
    (["--positives", f"{PROSE / 'news.jsonl.gz'}:lang=en"], "give --positives and --negatives, or --labels"),
    (["--positives", f"{PROSE / 'news.jsonl.gz'}:lang=fr", "--negatives", str(WEB)], "got 0 positive and"),
    (["--positives", f"{PROSE / 'news.jsonl.gz'}:source=books", "--negatives", str(WEB)],
     "no document with text passed its filters (source=books)"),
    (["--positives", f"{PROSE / 'news.jsonl.gz'}:lang=en,weight=0", "--negatives", str(WEB)],
     "weight=0 is not a positive number"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, words):
    r = run("--lang", "en", *args, "--out", tmp_path / "m.ftz")
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_label_file_with_one_class_is_refused(labels, tmp_path):
    r = run("--lang", "en", "--labels", labels, "--threshold", 5.5, "--out", tmp_path / "m.ftz")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "all 120 graded rows in en are below --threshold 5.5, one class only" in r.stderr, r.stderr
    empty = tmp_path / "none.jsonl"
    empty.write_text(json.dumps({"id": "a", "text": "x", "grade": None, "status": "error"}) + "\n")
    r = run("--lang", "en", "--labels", empty, "--out", tmp_path / "m.ftz")
    assert r.returncode == 2 and "no row with a grade in [0, 5]" in r.stderr and "status error" in r.stderr
