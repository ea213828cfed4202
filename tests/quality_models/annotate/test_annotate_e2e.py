"""`glassbox annotate` against a real `glassbox serve` on 127.0.0.1: a DATA folder's kept documents sampled,
graded, the annotator SIGKILLed mid-run and rerun with the same command (each id once; the server saw exactly N
requests in both runs together: no document paid for twice), the labels trained on by `glassbox
train-classifier --labels`, and the model scored through the score stage's own function.

The model is the serving tests' tiny Llama (tests/hf_fixtures.py) with a context of 512 and its output layer cut
down to the digit pieces 0-5 (every other row zero): its grades are noise, but noise a parser can read, so what is
tested is that grades are parsed, stored, resumed and trained on, not that they are good."""
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO
from serving_fixtures import ServerProcess

pytestmark = pytest.mark.slow
N = 16
KEY = "annotate-test-key"
PROSE = REPO / "quality_models" / "data" / "prose"
WEB = REPO / "quality_models" / "data" / "web" / "cc2019-dolma.jsonl.gz"
RUBRIC = "Rate the educational value of this text from 0 to 5.\n\n{document}\n\nScore:"


def head(path, n):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(n), fh)]


def data_folder(root: Path) -> Path:
    """A pipeline DATA folder's kept documents (DATA/dedup/*.parquet), as tests/quality_models builds them:
    English books and web pages, Chinese books: three strata."""
    data = root / "DATA"
    (data / "dedup").mkdir(parents=True)
    books, web, zh = head(PROSE / "en" / "textbook.jsonl.gz", 20), head(WEB, 20), head(PROSE / "zh" / "textbook.jsonl.gz", 6)
    rows = ([(d, "books", "en") for d in books] + [(d, "web", "en") for d in web] + [(d, "books", "zh") for d in zh])
    pq.write_table(pa.table({"id": [d["id"] for d, _, _ in rows], "text": [d["text"] for d, _, _ in rows],
                             "source": [s for _, s, _ in rows], "lang": [lang for _, _, lang in rows]}),
                   data / "dedup" / "part-0.parquet")
    return data


def grading_llama(root: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    from hf_fixtures import build_tiny_llama

    out = build_tiny_llama(root / "model", max_position=512)
    digits = [AutoTokenizer.from_pretrained(out).convert_tokens_to_ids(d) for d in "012345"]
    model = LlamaForCausalLM.from_pretrained(out)
    with torch.no_grad():
        w = model.lm_head.weight
        keep = w[digits].clone() * 50
        w.zero_()
        w[digits] = keep
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = ServerProcess(grading_llama(tmp_path_factory.mktemp("llama")), log_level="info",
                        env={"GLASSBOX_API_KEY": KEY}).start()
    yield srv
    srv.stop()


def posts(server) -> int:
    return sum('"POST /v1/chat/completions' in line for line in list(server.lines))


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_annotate_killed_and_rerun_then_trained_on_and_scored(server, tmp_path):
    data, out, rubric = data_folder(tmp_path), tmp_path / "edu", tmp_path / "short.md"
    rubric.write_text(RUBRIC)
    # one request in flight at a time, 0.4 s apart (--rpm 150): the kill usually lands between two requests; one
    # in flight at the kill (a loaded machine) has no result and is asked again, the only request paid twice
    cmd = [sys.executable, "-m", "glassbox.cli", "annotate", str(data), "--url", server.url, "--out", str(out),
           "--n", str(N), "--seed", "3", "--rubric", str(rubric), "--max-chars", "400", "--max-tokens", "1",
           "--concurrency", "1", "--rpm", "150", "--api-key-env", "ANNOTATE_KEY"]
    env = {**os.environ, "ANNOTATE_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    before = posts(server)
    first = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while lines_in(results) < 5:
        assert first.poll() is None and time.monotonic() < deadline, first.stdout.read()
        time.sleep(0.005)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    at_kill = lines_in(results)
    time.sleep(0.5)                                            # anything in flight would be logged by now
    in_flight = posts(server) - before - at_kill
    assert 5 <= at_kill < N and in_flight in (0, 1), (at_kill, in_flight)

    second = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert second.returncode == 0, second.stderr
    assert f"annotate: {N} documents, {N} with a result, 0 pending" in second.stderr
    time.sleep(0.3)
    # N documents, N requests (N + 1 when one was in flight at the kill): no document with a result asked again
    assert N <= posts(server) - before <= N + 1, (posts(server) - before, in_flight)
    res = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(Counter(r["id"] for r in res).values()) == [1] * N and sum(r["attempts"] for r in res) == N
    summary = json.loads((out / "summary.json").read_text())
    assert summary["batch"]["already_done"] == at_kill and summary["batch"]["done"] == N - at_kill

    labels = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert len(labels) == N and {r["id"] for r in labels} == {r["id"] for r in res}
    for r in labels:
        assert set(r) >= {"id", "source", "lang", "text", "grade", "status", "reply", "model", "rubric"}
        assert r["model"] == "tiny" and r["rubric"]["name"] == "short" and len(r["text"]) <= 400
        assert (r["status"] == "graded") == (r["grade"] is not None)
        assert r["status"] != "graded" or str(r["grade"]) == r["reply"].strip()
    # the tiny model's 512 tokens hold no 400 Chinese characters (byte pieces): a final 400, recorded, counted
    zh = [r for r in labels if r["lang"] == "zh"]
    assert zh and all(r["status"] == "error" and r["error"]["code"] == "context_length_exceeded" for r in zh)
    assert summary["status"]["error"] == len(zh) and summary["batch"]["errors"] == len(zh)
    strata = Counter((r["source"], r["lang"]) for r in labels)
    assert set(strata) == {("books", "en"), ("web", "en"), ("books", "zh")} and strata[("books", "zh")] >= 1
    assert summary["status"] == dict(Counter(r["status"] for r in labels))
    assert sum(summary["grades"].values()) == summary["status"].get("graded", 0)

    # the labels train a classifier at the median English grade, and the score stage scores with it
    en = sorted(r["grade"] for r in labels if r["lang"] == "en" and r["grade"] is not None)
    threshold = next(g for g in en if g > en[0])               # the lowest grade above the lowest: two classes
    model = tmp_path / "edu_en.ftz"
    train = subprocess.run([sys.executable, "-m", "glassbox.cli", "train-classifier", "--lang", "en", "--labels",
                            str(out / "labels.jsonl"), "--threshold", str(threshold), "--out", str(model),
                            "--min-words", "20", "--max-words", "60", "--holdout", "0.4", "--epoch", "5"],
                           cwd=REPO, capture_output=True, text=True, timeout=300)
    assert train.returncode == 0, train.stderr
    facts = json.loads(model.with_suffix(".json").read_text())
    assert facts["labels"]["rows_with_grade"] == summary["status"]["graded"]

    from pipeline.score.batches import score_partition
    from pipeline.score.settings import ClassifierSpec, ScoreConfig

    texts = [labels[0]["text"], "BUY NOW cheap pills", "一本关于数学的教科书。"]
    batch = pa.RecordBatch.from_pydict({"id": ["a", "b", "c"], "source": ["web"] * 3, "text": texts,
                                        "lang": ["en", "en", "zh"]})
    cfg = ScoreConfig(classifiers=[ClassifierSpec(str(model), ["en"], "quality_edu")], kenlm_dir=str(tmp_path))
    scored = pa.Table.from_batches(list(score_partition(cfg, batch.schema)(iter([batch]))))
    q = scored.column("quality_edu").to_pylist()
    assert all(0 <= p <= 1 for p in q[:2]) and q[2] is None    # English scored by the new model; Chinese: none
