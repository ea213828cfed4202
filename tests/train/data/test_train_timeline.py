"""Manifest versions inside a run (train/data/timeline.py): switch, data rollback, resume, refusal, report.

Real tiny runs on train_fixtures' corpus (one process unless said, 8 sequences of 32 tokens a step). Version 1 of
the manifest plans wiki 0.7 / prose 0.3; version 2, its child, wiki 0.2 / prose 0.8. The run ``switched`` trains
v1 to step 4, switches to v2 for steps 5-8, and goes back to v1 (the data rollback) for steps 9-12.

What is checked against numbers recomputed here from the record (the segments' index arrays, the Parquet
shards, the samples each rank logged it read with a CRC of their tokens):

- run.json's timeline, the invocations' ``manifest_switch``, the manifest copies;
- the realized shares after each switch follow the version in force (within what the blend guarantees: every
  prefix of a segment holds each source within one sequence of its plan), the telemetry equals the counts in
  the segments' orders, and every metrics row of a later segment names its version;
- the streams go on where they stopped (no sequence of a source is trained twice across the 12 steps) and the
  held-out validation documents stay the same, so ``val_loss_<source>`` spans the switches;
- ``trace`` answers for steps of every segment with the right version, and its documents rebuild exactly what
  the rank was fed;
- a run interrupted in the middle of segment 1 and resumed (without MANIFEST: the run's own) is bit-identical;
- a spike rollback inside segment 1 restores, skips and names the documents of that segment's order;
- a switch together with a layout change (dp 2 -> 1, resharded) trains what the one-process switch trains;
- a manifest with another tokenizer is refused with both sha256, the run left as it was;
- the report marks the switches (Data versions table, dashed lines in the charts; rendered in Chromium).
"""
import json
import re
import shutil
import zlib

import numpy as np
import pyarrow.parquet as pq
import pytest

from browser import chromium, decode_png, embedded_images
from train.data import timeline
from train.data.manifest import read_manifest
from train.data.sample_index import DataOrder
from train.data.shards import ShardCache
from train.loop.metrics import read_metrics
from train.record.report import SWITCH_COLOR, build_report
from train.record.trace import trace
from glassbox.contracts import manifest_content_hash
from train_fixtures import EQUIVALENCE_EPS, launch, make_dataset

CONFIG = """
model: {n_layers: 2, d_model: 64, n_heads: 4, n_kv_heads: 2, ffn_hidden: 128, vocab_multiple: 64}
data: {log_consumed: true}
train: {steps: 12, micro_batch_size: 4, global_batch_size: 8, seed: 7}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4, eps: EPS}
schedule: {kind: cosine, warmup_steps: 2}
checkpoint: {every: 2, keep: 0}
log: {every: 2, sample_every: 0}
eval: {every: 4, samples_per_source: 8}
""".replace("EPS", repr(EQUIVALENCE_EPS))       # one test compares against another layout
G = 8
V1 = {"wiki": 0.7, "prose": 0.3}
V2 = {"wiki": 0.2, "prose": 0.8}


def version_of(parent: dict, weights: dict, version: int) -> dict:
    """A child of manifest ``parent`` with other weights, as ``make mix ... REWEIGHT_FROM`` writes one."""
    m = json.loads(json.dumps(parent))
    for name, w in weights.items():
        s = m["sources"][name]
        s["weight"] = s["requested_weight"] = w
        s["target_tokens"] = int(m["total_tokens"] * w)
        s["epochs"] = s["target_tokens"] / s["available_tokens"]
    m.update(version=version, parent=parent["content_hash"])
    m["content_hash"] = manifest_content_hash(m)
    return m


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("timeline")
    v1 = make_dataset(root / "data", total_tokens=60_000, max_seq_len=32, weights=V1)
    raw = json.loads(v1.read_text())
    raw.update(version=1, parent=None)
    raw["content_hash"] = manifest_content_hash(raw)
    v1.write_text(json.dumps(raw, indent=1))
    v2 = v1.with_name("mix.v2.json")
    v2.write_text(json.dumps(version_of(raw, V2, 2), indent=1))
    cfg = root / "tiny.yaml"
    cfg.write_text(CONFIG)
    return root, cfg, v1, v2


def train(setup, run, manifest, steps, **kw):
    root, cfg, _, _ = setup
    return launch(manifest, cfg, root / run, steps=steps, **kw)


@pytest.fixture(scope="module")
def switched(setup):
    """v1 to 4, v2 to 8, v1 to 12; the run directory at step 4 is kept for the interrupted copy."""
    root, _, v1, v2 = setup
    out = [train(setup, "switched", v1, 4)]
    shutil.copytree(root / "switched", root / "at4")
    out += [train(setup, "switched", v2, 8), train(setup, "switched", v1, 12)]
    return root / "switched", out


def _jsonl(path):
    return [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []


def _orders(run):
    """segment number -> (timeline entry, its DataOrder)."""
    out = {}
    for seg in timeline.read(run):
        m = read_manifest(seg["path"])
        cache = ShardCache(m.path.parent.parent / "token_cache", m.vocab_size, m.eos_id)
        out[seg["segment"]] = (seg, DataOrder.load(m, cache, run / seg["data_order"]))
    return out


def _committed_reads(run):
    """data batch -> the consumed-log entries (one per micro-batch: samples, CRC of their tokens) of the
    invocation that read it last."""
    by_batch: dict[int, dict[int, list]] = {}
    for r in _jsonl(run / "consumed" / "dp0.jsonl"):
        by_batch.setdefault(r["step"], {}).setdefault(r["run_start"], []).append(r)
    return {d: reads[max(reads)] for d, reads in by_batch.items()}


@pytest.mark.trainer
def test_run_json_holds_the_timeline(setup, switched):
    root, _, v1, v2 = setup
    run, outs = switched
    assert "the data switches from mix v1 (" in outs[1].stdout and "to mix v2 (" in outs[1].stdout
    assert "after step 4 (data batch 4 on; segment 1, data_order/seg-1/)" in outs[1].stdout
    assert "the data switches from mix v2" in outs[2].stdout and "segment 2" in outs[2].stdout
    rec = json.loads((run / "run.json").read_text())
    h1, h2 = read_manifest(v1).content_hash, read_manifest(v2).content_hash
    tl = rec["timeline"]
    assert [(s["segment"], s["first_step"], s["last_step"], s["data_step"], s["first_sample"], s["version"],
             s["content_hash"], s["data_order"]) for s in tl] == [
        (0, 1, 4, 0, 0, 1, h1, "data_order"), (1, 5, 8, 4, 32, 2, h2, "data_order/seg-1"),
        (2, 9, None, 8, 64, 1, h1, "data_order/seg-2")]
    assert tl[1]["parent"] == h1 and tl[1]["path"] == str(v2) and tl[2]["path"] == str(v1)
    assert tl[1]["planned_shares"] == pytest.approx({"wiki": 0.2, "prose": 0.8})
    assert len({s["tokenizer_sha256"] for s in tl}) == 1
    assert rec["manifest"]["content_hash"] == h1 and "timeline_discarded" not in rec
    switches = [i.get("manifest_switch") for i in rec["invocations"]]
    assert switches[0] is None
    assert switches[1] == {"step": 4, "data_step": 4, "segment": 1,
                           "from": {"path": str(v1), "version": 1, "content_hash": h1},
                           "to": {"path": str(v2), "version": 2, "content_hash": h2}}
    assert switches[2]["step"] == 8 and switches[2]["to"]["content_hash"] == h1
    # The copies: manifest.json is the current one, each segment's folder keeps its own.
    assert (run / "manifest.json").read_bytes() == v1.read_bytes()
    assert (run / "data_order" / "manifest.json").read_bytes() == v1.read_bytes()
    assert (run / "data_order" / "seg-1" / "manifest.json").read_bytes() == v2.read_bytes()
    assert (run / "data_order" / "seg-2" / "manifest.json").read_bytes() == v1.read_bytes()


@pytest.mark.trainer
def test_realized_shares_follow_the_version_in_force(switched):
    run, _ = switched
    rows = read_metrics(run)
    assert [r["step"] for r in rows] == list(range(1, 13))
    assert [r.get("manifest_version") for r in rows] == [None] * 4 + [2] * 4 + [1] * 4
    orders = _orders(run)
    seg_of = lambda step: timeline.segment_at_step([s for s, _ in orders.values()], step)["segment"]
    names = ["prose", "wiki"]
    counts = np.zeros(2)
    for r in rows:
        seg, order = orders[seg_of(r["step"])]
        d = r["samples_consumed"] // G - 1
        batch = order.source_slice(d * G, (d + 1) * G)
        counts += np.bincount([names.index(order.names[s]) for s in batch], minlength=2)
        if r["step"] % 2:
            continue
        plan = seg["planned_shares"]
        # The telemetry is the count in the segment's own index (cumulative over the whole run).
        assert [r[f"share_{n}"] for n in names] == pytest.approx(counts / counts.sum(), abs=1e-12)
        interval = order.source_slice((d - 1) * G, (d + 1) * G)
        for i, n in enumerate(names):
            assert r[f"share_target_{n}"] == pytest.approx(plan[n])
            assert r[f"interval_share_{n}"] == pytest.approx(np.mean([order.names[s] == n for s in interval]))
            # Two prefixes of a segment each within one sequence of the plan: the 16 sequences since the last
            # row within two.
            assert abs(r[f"interval_share_{n}"] - plan[n]) <= 2 / 16 + 1e-9, (r["step"], n)
    # Over segment 1 as a whole (a prefix of its order): within one sequence in 32 of v2's 0.8 prose.
    seg1 = orders[1][1]
    prose = np.mean([seg1.names[s] == "prose" for s in seg1.source_slice(32, 64)])
    assert abs(prose - 0.8) <= 1 / 32 and abs(rows[7]["interval_share_prose"] - 0.8) < abs(
        rows[7]["interval_share_prose"] - 0.3)


@pytest.mark.trainer
def test_streams_go_on_and_validation_stays(switched):
    run, _ = switched
    orders = _orders(run)
    # Every training sample of the 12 steps is a different stream sequence: each source went on where it
    # stopped (v1 again at step 9 does not replay the documents of steps 1-4).
    seen = []
    for seg, order in orders.values():
        end = (seg["last_step"] or 12) * G
        for g in range(seg["first_sample"], end):
            s, k = order.draw(g)
            seen.append((order.names[s], order.streams[s].stream_sequence(k)))
    assert len(seen) == 12 * G and len(set(seen)) == len(seen)
    # The offsets are the draws the earlier segments used.
    o0, o1 = orders[0][1], orders[1][1]
    for s, name in enumerate(o1.names):
        assert o1.draw_offset[s] == int((o0.source_slice(0, 32) == o0.names.index(name)).sum())
    # The held-out documents are the same in every segment; validation spans the switches.
    for _, order in orders.values():
        assert [st.val_docs.tolist() for st in order.streams] == [st.val_docs.tolist() for st in o0.streams]
        assert [order.names[s] for s in order.val_sources] == ["prose", "wiki"]
    vals = [r for r in read_metrics(run, None) if r["kind"] == "val"]
    assert [v["step"] for v in vals] == [4, 8, 12] and all("val_loss_prose" in v and "val_loss_wiki" in v for v in vals)
    # What the rank was fed is the segment's order, sample by sample.
    reads = _committed_reads(run)
    assert sorted(reads) == list(range(12))
    for d, micro in reads.items():
        seg, order = orders[timeline.segment_at_step([s for s, _ in orders.values()], d + 1)["segment"]]
        assert sorted(g for r in micro for g in r["samples"]) == list(range(d * G, (d + 1) * G))
        for r in micro:
            assert r["crc32"] == zlib.crc32(np.stack([order.sample(g) for g in r["samples"]]).tobytes())


def _fed_as_traced(t, data_root, micro_batches):
    """True when the trace's pieces, read from the Parquet shards (not the token cache), rebuild every
    micro-batch the rank logged for that batch (its CRC)."""
    seqs = {g: {} for g in range(*t["samples"])}
    for d in t["documents"]:
        tokens = pq.read_table((data_root / "manifests" / d["shard"]).resolve(),
                               columns=["tokens"]).column("tokens")[d["row"]].as_py()
        for g, a, b, at in d["pieces"]:
            seqs[g][at] = tokens[a:b]
    rebuilt = {g: np.asarray([x for at in sorted(p) for x in p[at]], np.int64) for g, p in seqs.items()}
    return len(micro_batches) == 2 and all(
        r["crc32"] == zlib.crc32(np.stack([rebuilt[g] for g in r["samples"]]).tobytes()) for r in micro_batches)


@pytest.mark.trainer
def test_trace_answers_with_the_version_of_each_step(setup, switched):
    root, _, v1, v2 = setup
    run, _ = switched
    reads = _committed_reads(run)
    for step, segment, version, path in ((3, 0, 1, v1), (6, 1, 2, v2), (10, 2, 1, v1)):
        t = trace(run, step)
        assert (t["manifest"]["segment"], t["manifest"]["version"], t["manifest"]["path"]) == \
            (segment, version, str(path)), step
        assert t["data_step"] == step - 1 and t["segments"] == 3
        assert _fed_as_traced(t, root / "data", reads[step - 1]), step
    from train.record.trace import format_trace
    assert "data: manifest mix v2 (" in format_trace(trace(run, 6)) and "segment 1 of the run's 3 (steps 5-8)" \
        in format_trace(trace(run, 6))


@pytest.mark.trainer
def test_resume_in_the_middle_of_a_segment_is_bit_identical(setup, switched):
    """The copy taken at step 4: v2 to step 6, stopped there; resumed without MANIFEST (the run's own, v2) to 8;
    then v1 to 12. Every row equals the uninterrupted run's, bit for bit."""
    root, _, v1, v2 = setup
    run, _ = switched
    train(setup, "at4", v2, 6)
    r = train(setup, "at4", None, 8)
    assert "resuming from step 6" in r.stdout and "switches" not in r.stdout
    train(setup, "at4", v1, 12)
    ref = read_metrics(run, None)
    # (The interrupted invocation also validated at its last step, 6: that row has no counterpart.)
    ours = [x for x in read_metrics(root / "at4", None) if (x["kind"], x["step"]) != ("val", 6)]
    keys = ("kind", "step", "loss", "grad_norm", "val_loss", "val_loss_wiki", "val_loss_prose", "samples_consumed",
            "share_wiki", "interval_share_prose", "manifest_version")
    assert [{k: x.get(k) for k in keys} for x in ours] == [{k: x.get(k) for k in keys} for x in ref]
    tl = lambda p: [{k: s[k] for k in ("segment", "first_step", "last_step", "data_step", "content_hash")}
                    for s in timeline.read(p)]
    assert tl(root / "at4") == tl(run)


@pytest.mark.trainer
def test_a_spike_rollback_inside_a_segment(setup):
    """on_spike=rollback; v1 to 6, then v2 with data batch 9 all zeros: step 10 spikes, checkpoint 8 (of segment
    1) is restored and data batches 8-9 of segment 1's order are skipped and named."""
    root, _, v1, v2 = setup
    sets = ["train.on_spike=rollback", "train.spike_min_history=5"]
    train(setup, "spiky", v1, 6, sets=sets)
    r = train(setup, "spiky", v2, 14, sets=sets, env={"GLASSBOX_FAULT_BAD_BATCH": "9"})
    assert "rolled back to step 8; data batches 8-9 skipped" in r.stdout
    run = root / "spiky"
    rows = read_metrics(run)
    assert [x["step"] for x in rows] == list(range(1, 15))
    assert [x["samples_consumed"] // G for x in rows] == list(range(1, 9)) + list(range(11, 17))
    assert [s["segment"] for s in timeline.read(run)] == [0, 1]
    seg, order = _orders(run)[1]
    (rb,) = _jsonl(run / "rollbacks.jsonl")
    assert rb["restored_step"] == 8 and rb["data_shift"] == 2 and rb["skipped_samples"] == [64, 80]
    docs = order.documents(range(64, 80))
    assert rb["skipped_documents"] == [[d["source"], d["id"]] for d in docs]
    # After the rollback step 9 trains data batch 10 of segment 1; the trace says so and rebuilds it.
    t = trace(run, 9)
    assert t["data_step"] == 10 and t["manifest"]["segment"] == 1 and t["manifest"]["version"] == 2
    assert _fed_as_traced(t, root / "data", _committed_reads(run)[10])


@pytest.mark.trainer
def test_a_switch_with_a_layout_change(setup, switched):
    """v1 to 4 on two data-parallel processes, then v2 on one (the checkpoint resharded): the losses of the
    one-process switch, within the cross-layout tolerance of tests/train/test_train_runs.py (Adam eps 1e-4)."""
    root, _, v1, v2 = setup
    run, _ = switched
    train(setup, "relayout", v1, 4, nproc=2, sets=["parallel.dp=2"])
    r = train(setup, "relayout", v2, 8)
    assert "in a new layout" in r.stdout and "the data switches from mix v1" in r.stdout
    inv = json.loads((root / "relayout" / "run.json").read_text())["invocations"][-1]
    assert inv["layout_change"]["step"] == 4 and inv["manifest_switch"]["segment"] == 1
    ours = read_metrics(root / "relayout", None)
    ref = [x for x in read_metrics(run, None) if x["step"] <= 8]
    assert [(x["kind"], x["step"]) for x in ours] == [(x["kind"], x["step"]) for x in ref]
    for a, b in zip(ours, ref):
        for key in ("loss", "grad_norm", "val_loss_wiki", "val_loss_prose"):
            if key in b:
                assert a[key] == pytest.approx(b[key], rel=1e-5), (a["step"], key)


@pytest.mark.trainer
def test_a_manifest_with_another_tokenizer_is_refused(setup, switched, tmp_path):
    root, _, v1, _ = setup
    run, _ = switched
    before = (run / "run.json").read_bytes()
    other = make_dataset(tmp_path / "other", total_tokens=60_000, max_seq_len=32, vocab_size=320)
    r = train(setup, "switched", other, 14, check=False)
    theirs, ours = read_manifest(other).tokenizer["sha256"], read_manifest(v1).tokenizer["sha256"]
    assert r.returncode == 2 and theirs != ours
    assert f"its tokenizer (sha256 {theirs}) is not the one run" in r.stderr and f"(sha256 {ours}," in r.stderr
    assert (run / "run.json").read_bytes() == before and not (run / "data_order" / "seg-3").exists()


def test_no_switch_before_a_trained_step(setup):
    root, _, v1, v2 = setup
    record = {"manifest": {"path": str(v1), "content_hash": read_manifest(v1).content_hash},
              "timeline": [timeline.entry(read_manifest(v1), 0, 1, 0, G)]}
    with pytest.raises(timeline.TimelineError, match="a mixture from step 0 is a new run"):
        timeline.apply_switch(record, root / "never", read_manifest(v2), 0, 0, G)


def test_the_runs_own_manifest_changed_on_disk(setup, tmp_path):
    """Without MANIFEST an existing run reads its recorded manifest path: changed content there is refused, not
    taken for a switch the user never asked for; named, the same file is a switch."""
    root, _, v1, v2 = setup
    path = v1.with_name("moving.json")
    shutil.copyfile(v1, path)
    run = tmp_path / "r"
    run.mkdir()
    m = read_manifest(path)
    (run / "run.json").write_text(json.dumps({"manifest": {"path": str(path), "content_hash": m.content_hash},
                                              "timeline": [timeline.entry(m, 0, 1, 0, G)]}))
    shutil.copyfile(v2, path)
    assert timeline.current_manifest_path(run) == str(path)
    with pytest.raises(timeline.TimelineError, match="changed since run .* trained on it"):
        timeline.switch_from(run, read_manifest(path), 32, asked=False)
    assert timeline.switch_from(run, read_manifest(path), 32)["content_hash"] == m.content_hash
    path.unlink()


# ------------------------------------------------------------------------------------------------ report

PROBE = """<script>
window.addEventListener("load", function () {
  var rows = document.querySelectorAll("#manifest-timeline tr.segment"), out = [];
  for (var i = 0; i < rows.length; i++) {
    out.push(rows[i].dataset.segment + "/" + rows[i].dataset.version + "/" + rows[i].dataset.firstStep);
  }
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = "SEGMENTS " + out.join(" ");
  document.body.appendChild(pre);
});
</script>"""


def _switch_pixels(png_b64: str) -> int:
    import base64
    img = decode_png(base64.b64decode(png_b64))[..., :3]
    rgb = np.array([int(SWITCH_COLOR[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return int((np.abs(img - rgb) < 0.15).all(axis=-1).sum())     # anti-aliased dashes: near the colour


@pytest.mark.trainer
def test_report_marks_the_switches(switched, tmp_path):
    run, _ = switched
    text = build_report(run, out=tmp_path / "report.html").read_text()
    table = re.search(r'<table id="manifest-timeline">(.*?)</table>', text, re.S).group(1)
    segs = re.findall(r'<tr class="segment" data-segment="(\d)" data-first-step="(\d+)" data-last-step="(\d*)" '
                      r'data-version="(\d)"', table)
    assert segs == [("0", "1", "4", "1"), ("1", "5", "8", "2"), ("2", "9", "", "1")]
    cells = [re.findall(r"<td>([^<]*)</td>", row) for row in table.split('<tr class="segment"')[1:]]
    assert [c[1] for c in cells] == ["1-4", "5-8", "9-12"]
    assert [c[5] for c in cells] == ["prose 0.300, wiki 0.700", "prose 0.800, wiki 0.200", "prose 0.300, wiki 0.700"]
    # Realized over each segment's trained batches (a prefix of its order): within one sequence in 32 of the plan.
    prose = [float(c[6].split()[1].rstrip(",")) for c in cells]
    assert all(abs(p - q) <= 1 / 32 for p, q in zip(prose, (0.3, 0.8, 0.3))), prose
    # The charts carry the switch lines; the same record without a timeline has none.
    images = dict(embedded_images(text))
    bare = tmp_path / "bare"
    shutil.copytree(run, bare, ignore=shutil.ignore_patterns("checkpoints", "data_order", "consumed"))
    rec = json.loads((bare / "run.json").read_text())
    rec.pop("timeline")
    (bare / "run.json").write_text(json.dumps(rec))
    plain = dict(embedded_images(build_report(bare).read_text()))
    for ident in ("loss", "val_sources", "telemetry"):
        assert _switch_pixels(images[ident]) > 300 and _switch_pixels(plain[ident]) == 0, ident
    assert 'id="manifest-timeline"' not in (bare / "report.html").read_text()
    # As a browser reads it.
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE + "</body>"))
    dom = chromium("--dump-dom", probe.as_uri(), tmp_path=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert re.search(r'<pre id="probe">SEGMENTS 0/1/1 1/2/5 2/1/9</pre>', dom.stdout), dom.stdout[-2000:]
