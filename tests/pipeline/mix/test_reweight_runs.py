"""Re-weighting from the validation of real training runs, through the mix job on a real local Spark session.

A two-source corpus (WikiText-2 paragraphs and Shakespeare speeches) goes through the real tokenize and mix
jobs; one tiny run trains on a mixture that starves `verse` (wiki 0.9, verse 0.1), a reference run on an even
one. Against the reference, `verse` lags in validation, so the next manifest version gives it more weight;
weights sum to 1, the floor holds, the record names parent, rule, run and step, and a rerun is byte-identical.
"""
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs import mix as mix_job
from jobs import tokens as tokens_job
from pipeline.config import parse_config
from glassbox.contracts import manifest_content_hash
from pipeline.mix.mixture import load_mix
from train_fixtures import REPO, TEXT, launch, paragraphs

pytestmark = [pytest.mark.spark, pytest.mark.trainer]
BOOKS = REPO / "examples" / "sample" / "books" / "tinyshakespeare.jsonl.gz"
TRAIN = """
model: {n_layers: 2, d_model: 64, n_heads: 4, ffn_hidden: 128, vocab_multiple: 64}
data: {seq_len: 64}
train: {steps: 40, micro_batch_size: 8, global_batch_size: 16, seed: 11}
optimizer: {lr: 3.0e-3, min_lr: 3.0e-4}
schedule: {kind: cosine, warmup_steps: 4}
log: {every: 10, sample_every: 0}
eval: {every: 20, samples_per_source: 8}
checkpoint: {every: 0}
"""


def _mix(folder: Path, name: str, weights: str, reweight: str = "{smoothing: 0.0, min_weight: 0.02}") -> Path:
    p = folder / f"{name}.yaml"
    p.write_text(f"dataset_mix: {weights}\nmax_seq_len: 64\nseed: 5\ntotal_tokens: 40960\nmax_epochs: 8\n"
                 f"reweight: {reweight}\n")
    return p


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("reweight")
    data = root / "data"
    wiki = [p for p in paragraphs(TEXT.read_text(encoding="utf-8")) if len(p.split()) > 60][:160]
    with gzip.open(BOOKS, "rt", encoding="utf-8") as f:
        verse = [json.loads(line)["text"] for line in f][:40]
    rows = [{"id": f"w{i:04d}", "source": "wiki", "text": t} for i, t in enumerate(wiki)]
    rows += [{"id": f"v{i:04d}", "source": "verse", "text": t} for i, t in enumerate(verse)]
    (data / "dedup").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), data / "dedup" / "part-00000.parquet")
    tokens_job.run(spark, parse_config({"sources": {"verse": {"format": "jsonl", "paths": [str(BOOKS)]}},
                                      "tokenize": {"vocab_size": 400, "shards_per_source": 2}}), str(data))
    mixes = root / "mixes"
    mixes.mkdir()
    lag, even = _mix(mixes, "lag", "{wiki: 0.9, verse: 0.1}"), _mix(mixes, "even", "{wiki: 0.5, verse: 0.5}")
    out = {}
    for name, mix in (("lag", lag), ("even", even)):
        manifest, path = mix_job.run(spark, load_mix(mix), str(data))
        cfg = root / "tiny.yaml"
        cfg.write_text(TRAIN)
        launch(Path(path), cfg, root / "runs" / name)
        out[name] = root / "runs" / name
    return {"data": data, "lag": lag, "mixes": mixes, "run": out["lag"], "reference": out["even"]}


def _main(capsys, *args) -> tuple[int, str]:
    code = mix_job.main([str(a) for a in args])
    return code, capsys.readouterr().out


def test_the_starved_source_gains_weight_from_validation(runs, capsys):
    data, run, ref = runs["data"], runs["run"], runs["reference"]
    mix_bytes = runs["lag"].read_bytes()
    base = json.loads((data / "manifests" / "lag.json").read_text())
    code, out = _main(capsys, "--mix", runs["lag"], "--data", data, "--reweight-from", run, "--reference", ref)
    assert code == 0, out
    path = data / "manifests" / "lag.v2.json"
    m = json.loads(path.read_text())
    assert m["version"] == 2 and m["parent"] == base["content_hash"] and m["content_hash"] == manifest_content_hash(m)
    r = m["reweight"]
    vals = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if '"val"' in line]
    last = vals[-1]
    assert r["run"]["step"] == last["step"] == 40 and r["reference"]["step"] == 40
    assert r["unit"] == "bits/byte"            # the trainer logs bits per byte: the rule compares sources in it
    assert r["sources"]["verse"]["val_loss"] == pytest.approx(last["val_bpb_verse"], abs=1e-6)
    ref_last = [json.loads(line) for line in (ref / "metrics.jsonl").read_text().splitlines() if '"val"' in line][-1]
    # The evidence: verse, seen 10% of the time, is further above the reference than wiki is.
    ex = {k: max(last[f"val_bpb_{k}"] - ref_last[f"val_bpb_{k}"], 0.0) for k in ("wiki", "verse")}
    assert ex["verse"] > ex["wiki"]
    assert r["sources"]["verse"]["excess"] == pytest.approx(ex["verse"], abs=1e-6)
    new = r["new_weights"]
    assert new["verse"] > 0.1 > 0 and new["wiki"] < 0.9
    assert sum(new.values()) == pytest.approx(1.0, abs=1e-9) and min(new.values()) >= 0.02
    assert m["sources"]["verse"]["requested_weight"] == pytest.approx(new["verse"], abs=1e-9)
    assert r["old_weights"] == {"verse": 0.1, "wiki": 0.9}
    assert "verse" in out and "0.1000" in out and f"{new['verse']:.4f}" in out and "why: verse" in out
    assert f"lag.v2.json (parent {base['content_hash'][:12]}" in out
    assert runs["lag"].read_bytes() == mix_bytes
    # A rerun is byte-identical: the same file, found as already there, and no third version.
    before = path.read_bytes()
    code, out = _main(capsys, "--mix", runs["lag"], "--data", data, "--reweight-from", run, "--reference", ref)
    assert code == 0 and "already there" in out and path.read_bytes() == before
    assert not (data / "manifests" / "lag.v3.json").exists()


def test_the_floor_holds_and_a_new_decision_is_a_new_version(runs, capsys):
    data = runs["data"]
    (runs["mixes"] / "floor").mkdir()
    strict = _mix(runs["mixes"] / "floor", "lag", "{wiki: 0.9, verse: 0.1}",
                  "{step_size: 50.0, smoothing: 0.0, min_weight: 0.3}")
    code, out = _main(capsys, "--mix", strict, "--data", data, "--reweight-from", runs["run"], "--reference",
                      runs["reference"])
    assert code == 0, out
    versions = sorted(p.name for p in (data / "manifests").glob("lag.v*.json"))
    newest = json.loads((data / "manifests" / versions[-1]).read_text())
    new = newest["reweight"]["new_weights"]
    assert newest["version"] >= 2 and min(new.values()) >= 0.3 - 1e-12
    assert sum(new.values()) == pytest.approx(1.0, abs=1e-9)
    assert newest["reweight"]["parameters"] == {"step_size": 50.0, "smoothing": 0.0, "min_weight": 0.3}
    assert any(e["floored"] for e in newest["reweight"]["sources"].values())


def test_errors_before_spark(runs, capsys):
    data = runs["data"]
    code = mix_job.main(["--mix", str(runs["lag"]), "--data", str(data), "--reweight-from", str(runs["reference"])])
    assert code == 2 and "trained on mix 'even', not 'lag'" in capsys.readouterr().err
    code = mix_job.main(["--mix", str(runs["lag"]), "--data", str(data), "--reference", str(runs["reference"])])
    assert code == 2 and "--reference and --step go with --reweight-from" in capsys.readouterr().err
    code = mix_job.main(["--mix", str(runs["lag"]), "--data", str(data), "--reweight-from", str(runs["run"]),
                         "--step", "30"])
    assert code == 2 and "validation steps: 20, 40" in capsys.readouterr().err
