"""`glassbox annotate` when the endpoint misbehaves (a scripted fake: refusals, 5xx, 429, a hang, replies with no
grade) and when the input is wrong: every document counted, raw replies kept, one line and exit 2 for a mistake."""
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO
from quality_models.annotate.run import main
from serving_fixtures import FakeOpenAI

FAST = ["--backoff", "0.01", "--max-backoff", "0.05", "--concurrency", "2"]


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "DATA"
    (d / "dedup").mkdir(parents=True)
    texts = [f"Lesson {i}: how photosynthesis turns light into sugar, step by step." for i in range(6)]
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(6)], "text": texts, "source": ["books"] * 3 + ["web"] * 3,
                             "lang": ["en"] * 6}), d / "dedup" / "part-0.parquet")
    return d


@pytest.fixture
def fake():
    made = []

    def make(answer, **kw):
        made.append(FakeOpenAI(answer, **kw))
        return made[-1]
    yield make
    for f in made:
        f.close()


def labels(out):
    return {r["id"]: r for r in map(json.loads, (out / "labels.jsonl").read_text().splitlines())}


def test_refusals_are_recorded_error_rows_and_retry_errors_asks_again(data, fake, tmp_path, capsys):
    refuse = {"on": True}
    f = fake(lambda body, n: (400, "content policy", {}) if refuse["on"] and "Lesson 1" in str(body)
             else (200, "Reasoning first. Score: 4", {}))
    out = tmp_path / "out"
    assert main([str(data), "--url", f.url, "--out", str(out), "--n", "6", *FAST]) == 0     # batch: 4xx is final
    rows = labels(out)
    assert rows["d1"]["status"] == "error" and rows["d1"]["grade"] is None
    assert rows["d1"]["error"]["status"] == 400 and rows["d1"]["error"]["message"] == "content policy"
    assert sum(r["status"] == "graded" for r in rows.values()) == 5 and rows["d0"]["model"] == "fake-grader"
    assert "graded 5, error 1" in capsys.readouterr().err.replace("error 1, graded 5", "graded 5, error 1")
    refuse["on"] = False
    asked = len(f.requests)
    assert main([str(data), "--url", f.url, "--out", str(out), "--n", "6", "--retry-errors", *FAST]) == 0
    assert len(f.requests) == asked + 1 and labels(out)["d1"]["grade"] == 4   # only the refused one again


def test_5xx_429_and_a_hang_are_retried(data, fake, tmp_path):
    def flaky(body, n):
        if n == 1:
            return None                                    # hangs past --timeout
        if n in (2, 3):
            return (503, "overloaded", {})
        if n == 4:
            return (429, "rate limited", {"Retry-After": "0"})
        return (200, "**Educational score: 2**", {})
    f = fake(flaky, hang_s=2.0)
    out = tmp_path / "out"
    assert main([str(data), "--url", f.url, "--out", str(out), "--n", "6", "--timeout", "0.5", *FAST]) == 0
    rows = labels(out)
    assert len(rows) == 6 and all(r["grade"] == 2 for r in rows.values())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["batch"]["retries"] == 4 and summary["batch"]["failed"] == 0
    assert sum(r["attempts"] for r in rows.values()) == 10 == len(f.requests)


def test_replies_without_a_grade_are_counted_and_kept(data, fake, tmp_path):
    replies = ["I cannot grade this.", "Score: 9", "评分：3", "", "4/5", "Score: 4/10"]
    f = fake(lambda body, n: (200, replies[int(body["messages"][0]["content"].split("Lesson ")[1][0])], {}))
    out = tmp_path / "out"
    assert main([str(data), "--url", f.url, "--out", str(out), "--n", "6", *FAST]) == 0
    rows = labels(out)
    assert [(rows[f"d{i}"]["grade"], rows[f"d{i}"]["status"]) for i in range(6)] == [
        (None, "no_grade"), (None, "out_of_range"), (3, "graded"), (None, "no_grade"), (4, "graded"),
        (None, "out_of_range")]
    assert [rows[f"d{i}"]["reply"] for i in range(6)] == replies          # the raw reply is kept
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == {"graded": 2, "no_grade": 2, "out_of_range": 2} and s["grades"] == {"3": 1, "4": 1}
    assert s["strata"]["books/en"]["documents"] == 3 and s["strata"]["web/en"]["documents"] == 3


def test_an_unreachable_endpoint_is_exit_1_and_leaves_no_label(data, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(data), "--url", "http://127.0.0.1:9", "--out", str(out), "--retries", "1", *FAST]) == 1
    assert "did not answer" in capsys.readouterr().err and (out / "labels.jsonl").read_text() == ""


@pytest.mark.parametrize("args, words", [
    (["{empty}"], "{empty}: no document to annotate (no documents with text)"),
    (["{data}", "--lang", "fr"], "{data}: no document to annotate with --lang fr (lang is not fr: 6)"),
    (["{data}", "--source", "news"], "no document to annotate with --source news"),
    (["{tmp}/nope.jsonl"], "nope.jsonl: no such file"),
    (["{tmp}"], "not a pipeline DATA folder"),
    (["{data}", "--rubric", "{tmp}/plain.md"], "plain.md: no {document} placeholder"),
    (["{data}", "--api-key-env", "ANNOTATE_UNSET_KEY"], "ANNOTATE_UNSET_KEY is not set"),
])
def test_bad_input_is_one_line_and_exit_2(data, tmp_path, args, words, capsys):
    empty = tmp_path / "EMPTY"
    (empty / "dedup").mkdir(parents=True)
    (tmp_path / "plain.md").write_text("Grade this: {text}")

    def fill(text: str) -> str:
        for k, v in {"{data}": data, "{empty}": empty, "{tmp}": tmp_path}.items():
            text = text.replace(k, str(v))
        return text
    assert main([*map(fill, args), "--url", "http://127.0.0.1:9", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fill(words) in err, err


def test_a_rerun_with_another_sample_is_refused(data, fake, tmp_path, capsys):
    f = fake(lambda body, n: (200, "Score: 1", {}))
    out = tmp_path / "out"
    assert main([str(data), "--url", f.url, "--out", str(out), "--n", "3", *FAST]) == 0
    assert main([str(data), "--url", f.url, "--out", str(out), "--n", "4", *FAST]) == 2
    assert "another sample or prompt" in capsys.readouterr().err and len(f.requests) == 3


def test_the_cli_names_the_verb_and_exits_2_on_a_missing_input(tmp_path):
    r = subprocess.run([sys.executable, "-m", "glassbox.cli", "annotate", str(tmp_path / "none"), "--url", "http://x",
                        "--out", str(tmp_path / "o")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == f"annotate: {tmp_path / 'none'}: no such file (paths are " \
                                                     "relative to where the command runs)", r.stderr
