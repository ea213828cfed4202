"""Data telemetry in metrics.jsonl, decoded samples, the leakage check, the end-of-run diagnosis, TensorBoard.

One real run (torchrun, 2 data-parallel processes, 12 steps, ``tests/watch_fixtures.py``) is checked
against numbers recomputed here by other means: document lengths and contents from the Parquet token shards
(not the trainer's token cache), epochs from stream positions, sequence duplicates from the tokens, shares by
counting the data order's source of every sample. Data parallelism must not change them: rank 0 computes them
for the whole global batch, so any slip to one rank's slice shows (each rank holds 4 of the 8 sequences).
"""
import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm

from train.config import ConfigError, parse_config
from train.data.manifest import read_manifest
from train.data.sample_index import DataOrder
from train.data.shards import ShardCache
from train.loop.metrics import MetricsLog
from train.monitor.telemetry import TensorBoardSink
from watch_fixtures import REPO, launch, shared_run

G, LOG_EVERY, STEPS = 8, 4, 12
FIELDS = ["doc_tokens_mean", "doc_tokens_p50", "doc_tokens_p90", "doc_tokens_max", "docs_per_batch",
          "dup_seq_rate", "dup_doc_rate"]


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    manifest, run, stdout = shared_run(tmp_path_factory.getbasetemp())
    m = read_manifest(manifest)
    order = DataOrder.load(m, ShardCache(manifest.parent.parent / "token_cache", m.vocab_size, m.eos_id),
                           run / "data_order")
    return manifest, run, stdout, m, order


def _rows(run):
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


class Shards:
    """Documents read straight from the Parquet token shards."""

    def __init__(self, manifest):
        self.tokens = {}
        for name, src in manifest.sources.items():
            for k, sh in enumerate(src.shards):
                self.tokens[(name, k)] = pq.read_table(sh.path, columns=["tokens"]).column("tokens").to_pylist()

    def doc(self, source, shard, row):
        return self.tokens[(source, shard)][row]


def expected_batch(order, shards, data_step):
    passes, seqs = {}, set()
    for g in range(data_step * G, (data_step + 1) * G):
        stream, segs = order.segments(g)
        seqs.add(tuple(order.sample(g).tolist()))
        pos = stream.stream_sequence(int(order.index_draw[g])) * order.L
        for seg, (doc, a, b) in zip(stream.segment_info(segs), segs):
            epoch = pos // stream.epoch_tokens                      # the stream is epochs back to back
            passes[(seg.source, epoch, doc)] = tuple(shards.doc(seg.source, seg.shard, seg.row))
            pos += b - a
    lens = np.array([len(t) for t in passes.values()], float)
    return {"doc_tokens_mean": lens.mean(), "doc_tokens_p50": np.percentile(lens, 50),
            "doc_tokens_p90": np.percentile(lens, 90), "doc_tokens_max": lens.max(), "docs_per_batch": len(passes),
            "dup_seq_rate": 1 - len(seqs) / G, "dup_doc_rate": 1 - len(set(passes.values())) / len(passes)}


@pytest.mark.trainer
def test_batch_telemetry_matches_the_shards(shared):
    manifest, run, _, m, order = shared
    rows = [r for r in _rows(run) if r["kind"] == "train"]
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    logged = [r for r in rows if "dup_seq_rate" in r]
    assert [r["step"] for r in logged] == [4, 8, 12]                # every log.every-th row, not the others
    shards = Shards(m)
    for r in logged:
        want = expected_batch(order, shards, r["step"] - 1)
        for k in FIELDS:
            assert r[k] == pytest.approx(want[k], rel=1e-12), (r["step"], k)
    # The fixture's boiler source repeats one sequence: duplicates are seen, and only where they exist.
    assert all(r["dup_seq_rate"] > 0 and r["dup_doc_rate"] > 0 for r in logged)


@pytest.mark.trainer
def test_realized_and_target_shares(shared):
    manifest, run, _, m, order = shared
    total = sum(s.target_tokens for s in m.sources.values())
    src = np.asarray(order.index_source)
    for r in (x for x in _rows(run) if "dup_seq_rate" in x):
        s = r["step"]
        for i, name in enumerate(order.names):
            assert r[f"share_{name}"] == pytest.approx((src[:s * G] == i).mean(), abs=1e-12)
            assert r[f"interval_share_{name}"] == pytest.approx((src[(s - LOG_EVERY) * G:s * G] == i).mean(),
                                                                abs=1e-12)
            assert r[f"share_target_{name}"] == pytest.approx(m.sources[name].target_tokens / total)
        assert sum(r[f"share_{n}"] for n in order.names) == pytest.approx(1.0)


@pytest.mark.trainer
def test_decoded_samples_are_what_the_rows_hold(shared):
    manifest, run, _, m, order = shared
    assert sorted(p.name for p in (run / "samples").iterdir()) == [f"step_{s:08d}.txt" for s in (4, 8, 12)]
    text = (run / "samples" / "step_00000008.txt").read_text()
    sp = spm.SentencePieceProcessor(model_file=m.tokenizer["abs_path"])
    shards = Shards(m)
    for row in (0, 1):
        g = 7 * G + row
        stream, segs = order.segments(g)
        assert f"=== row {row} | sample {g} | source {stream.name} ===" in text
        for seg, (doc, a, b) in zip(stream.segment_info(segs), segs):
            assert order.document_id(seg) in text
            assert sp.decode(shards.doc(seg.source, seg.shard, seg.row)[a:b]) in text
    assert "=== row 2" not in text


@pytest.mark.trainer
def test_leakage_report_counts_exact_copies(shared):
    manifest, run, stdout, m, order = shared
    leak = json.loads((run / "leakage.json").read_text())
    shards = Shards(m)
    content = {}                                          # (source, doc) -> tokens
    for s, stream in enumerate(order.streams):
        for doc in range(len(stream.doc_lens)):
            seg = stream.segment_info([(doc, 0, 0)])[0]
            content[(s, doc)] = tuple(shards.doc(seg.source, seg.shard, seg.row))
    train_tokens = {}
    for s, stream in enumerate(order.streams):
        for doc in stream.train_docs:
            train_tokens.setdefault(content[(s, int(doc))], []).append((s, int(doc)))
    val = [(s, int(d)) for s in order.val_sources for d in order.streams[s].val_docs]
    leaked = [v for v in val if content[v] in train_tokens]
    assert leak["val_documents"] == len(val)
    assert leak["val_documents_in_train"] == len(leaked) >= 1   # prose copies every document: one leaks
    assert leak["train_documents_matching"] == sum(len(train_tokens[content[v]]) for v in leaked)
    assert leak["by_source"]["prose"]["val_documents_in_train"] >= 1
    ex = leak["examples"][0]
    assert ex["val"]["source"] == "prose" and ex["train"]["source"] == "prose" and ex["val"]["id"] != ex["train"]["id"]
    assert "warning: leakage check: " in stdout


@pytest.mark.trainer
def test_end_of_run_diagnosis_is_written(shared):
    """The trainer's closing diagnosis is the reader's diagnosis of the finished record, written and printed."""
    from train.record.diagnose import assess_run
    from train.record.formats import read_run

    _, run, stdout, _, _ = shared
    diag = json.loads((run / "diagnosis.json").read_text())
    again = assess_run(read_run(run)).to_dict()
    assert diag == json.loads(json.dumps(again))
    assert set(diag) == {"findings", "not_judged", "reading"} and diag["reading"]
    assert "diagnosis (diagnosis.json" in stdout
    assert all(f"reading: {line}" in stdout for line in diag["reading"])
    assert all(f["kind"] in stdout for f in diag["findings"])
    assert all(n["check"] in stdout for n in diag["not_judged"])


@pytest.mark.trainer
def test_leakage_error_mode_stops_before_training(shared, tmp_path):
    manifest, _, _, _, _ = shared
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model: {n_layers: 1, d_model: 32, n_heads: 2, ffn_hidden: 64}\n"
                   "train: {steps: 2, micro_batch_size: 4, global_batch_size: 8}\n"
                   "eval: {every: 2, samples_per_source: 4, leakage: error}\n")
    r = launch(manifest, cfg, tmp_path / "run", check=False)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert "eval.leakage is error" in r.stderr and "held-out validation documents also occur" in r.stderr
    assert (tmp_path / "run" / "leakage.failed.json").is_file()
    assert not (tmp_path / "run" / "leakage.json").exists() and not (tmp_path / "run" / "metrics.jsonl").exists()


def test_tensorboard_requested_without_the_package_is_a_config_error(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    with pytest.raises(ConfigError, match=r"log\.tensorboard.*pip install tensorboard==2\.21\.0"):
        parse_config({"log": {"tensorboard": True}})
    parse_config({"log": {"tensorboard": False}})
    r = subprocess.run([sys.executable, "-m", "glassbox.cli", "config", "check", str(REPO / "train/configs/tiny.yaml"),
                        "--set", "log.sample_every=-1"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 2 and "log.sample_every: must be >= 0" in r.stderr


def test_tensorboard_sink_gets_every_numeric_field(tmp_path):
    class Fake:
        def __init__(self):
            self.scalars, self.flushes = [], 0

        def add_scalar(self, tag, value, step):
            self.scalars.append((tag, value, step))

        def flush(self):
            self.flushes += 1

    fake = Fake()
    log = MetricsLog(tmp_path, stop_step=2, log_every=1, flops_per_token=1.0, peak_flops_per_device=None, devices=1,
                     sinks=[TensorBoardSink(tmp_path / "tb", writer=fake)])
    log.train(step=1, tokens=8, loss=2.5, lr=1e-3, grad_norm=None, step_tokens=8, seconds=0.5, share_web=0.7,
              update_skipped=0, note="text")
    log.val(step=1, tokens=8, val_loss=2.75, per_source={"web": 2.5})
    tags = {t: (v, s) for t, v, s in fake.scalars}
    assert tags["train/loss"] == (2.5, 1) and tags["train/share_web"] == (0.7, 1) and tags["train/lr"] == (1e-3, 1)
    assert tags["val/val_loss_web"] == (2.5, 1) and tags["val/val_loss"] == (2.75, 1)
    assert "train/grad_norm" not in tags and "train/note" not in tags and "train/step" not in tags
    assert fake.flushes == 2
