"""Re-weighting from validation without Spark: the rule (a lagging source gains weight, weights sum to 1, the
floor holds, the formula by hand), reading a run's validation, and manifest versions (parent, record, a rerun
that finds its own result). tests/pipeline/mix/test_reweight_runs.py does it on real training runs through the mix job."""
import json
import math
from pathlib import Path

import pytest

from glassbox.contracts import manifest_content_hash
from pipeline.mix.mixture import MixError, build_manifest, dumps_manifest, load_mix, parse_mix
from pipeline.mix.reweight import (FORMULA, ReweightParams, apply_floor, format_change, next_version, parse_params,
                               read_evidence, reweight, versions)


def test_a_lagging_source_gains_weight_and_weights_sum_to_one():
    old = {"web": 0.5, "books": 0.5}
    new, ev = reweight(old, {"web": 5.2, "books": 4.0}, ReweightParams())
    assert new["web"] > 0.5 > new["books"]
    assert sum(new.values()) == pytest.approx(1.0, abs=1e-9)
    assert ev["web"]["excess"] == pytest.approx(1.2) and ev["books"]["excess"] == 0.0
    # The formula by hand: exp(1.2) = 3.32 times the weight, normalised, then 10% toward uniform.
    m = math.exp(1.2)
    want = 0.9 * (0.5 * m / (0.5 * m + 0.5)) + 0.1 * 0.5
    assert new["web"] == pytest.approx(want, abs=1e-9)
    # A larger step moves further; no lag, no move (smoothing toward uniform aside).
    bigger, _ = reweight(old, {"web": 5.2, "books": 4.0}, ReweightParams(step_size=2.0))
    assert bigger["web"] > new["web"]
    same, _ = reweight({"a": 0.2, "b": 0.8}, {"a": 3.0, "b": 3.0}, ReweightParams(smoothing=0.0))
    assert same == {"a": 0.2, "b": 0.8}


def test_with_a_reference_the_excess_is_over_it_and_clipped_at_zero():
    # books is harder text (higher loss) but no worse than the reference reached: only web lags.
    losses, ref = {"web": 4.5, "books": 5.0}, {"web": 4.0, "books": 5.3}
    new, ev = reweight({"web": 0.5, "books": 0.5}, losses, ReweightParams(), ref)
    assert ev["books"]["excess"] == 0.0 and ev["web"]["excess"] == pytest.approx(0.5)
    assert ev["web"]["reference_val_loss"] == 4.0 and new["web"] > 0.5
    # Without the reference, the harder text would have won.
    plain, _ = reweight({"web": 0.5, "books": 0.5}, losses, ReweightParams())
    assert plain["books"] > 0.5


def test_the_floor_holds():
    old = {"a": 0.34, "b": 0.33, "c": 0.33}
    losses = {"a": 30.0, "b": 1.0, "c": 1.5}                        # a lags by 29 nats: b and c would vanish
    new, ev = reweight(old, losses, ReweightParams(smoothing=0.0, min_weight=0.05))
    assert new["b"] == 0.05 and new["c"] == 0.05 and new["a"] == pytest.approx(0.9)
    assert ev["b"]["floored"] and not ev["a"]["floored"]
    assert sum(new.values()) == pytest.approx(1.0, abs=1e-9)
    # Cascading: raising one to the floor pushes another below it.
    w = apply_floor({"a": 0.94, "b": 0.04, "c": 0.0199, "d": 0.0001}, 0.03)
    assert min(w.values()) == pytest.approx(0.03) and sum(w.values()) == pytest.approx(1.0)
    with pytest.raises(MixError, match="min_weight"):
        apply_floor({"a": 0.5, "b": 0.5, "c": 0.0}, 0.4)


def test_parameters_in_the_mix_file_and_their_errors(tmp_path):
    mix = parse_mix({"dataset_mix": {"a": 1, "b": 1}, "max_seq_len": 64,
                     "reweight": {"step_size": 0.5, "min_weight": 0.1}}, "m")
    assert mix.reweight == ReweightParams(step_size=0.5, smoothing=0.1, min_weight=0.1)
    assert parse_mix({"dataset_mix": {"a": 1}, "max_seq_len": 64}, "m").reweight == ReweightParams()
    for raw, key in (({"stepsize": 1}, "reweight.stepsize"), ({"step_size": 0}, "reweight.step_size"),
                     ({"smoothing": 1.0}, "reweight.smoothing"), ({"min_weight": "x"}, "reweight.min_weight"),
                     ([1, 2], "reweight")):
        with pytest.raises(MixError) as err:
            parse_params(raw)
        assert str(err.value).startswith(key), str(err.value)


# ------------------------------------------------------------------------------------- a run's record

def _metrics(run: Path, rows: list[dict], torn: bool = False) -> None:
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "metrics.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
        if torn:
            f.write('{"kind": "val", "step": 99, "val_loss_web": 1.')


def _val_rows(steps, lag=1.0):
    rows = []
    for s in steps:
        rows.append({"kind": "train", "step": s, "tokens": s * 1000, "loss": 4.0, "share_web": 0.3,
                     "share_books": 0.7, "share_target_web": 0.3})
        rows.append({"kind": "val", "step": s, "tokens": s * 1000, "val_loss": 4.2, "val_loss_web": 4.0 + lag / s,
                     "val_loss_books": 3.5})
    return rows


def test_read_evidence_takes_the_last_validation_or_the_step_asked(tmp_path):
    run = tmp_path / "run"
    _metrics(run, _val_rows([10, 20, 30]), torn=True)
    (run / "manifest.json").write_text(json.dumps({"name": "m", "content_hash": "c" * 64}))
    e = read_evidence(run)
    assert (e.step, e.tokens) == (30, 30_000) and e.losses == {"web": 4.0 + 1 / 30, "books": 3.5}
    assert e.shares == {"web": 0.3, "books": 0.7} and e.manifest["name"] == "m"
    assert read_evidence(run, step=10).losses["web"] == pytest.approx(4.1)
    with pytest.raises(MixError, match="validation steps: 10, 20, 30"):
        read_evidence(run, step=15)
    # Rows without a kind, as other scripts write them, are read too.
    bare = tmp_path / "bare"
    _metrics(bare, [{k: v for k, v in r.items() if k != "kind"} for r in _val_rows([5])
                    if r["kind"] == "val"])
    (bare / "manifest.json").write_text("{}")
    assert read_evidence(bare).losses == {"web": 4.2, "books": 3.5}


def test_read_evidence_errors_name_the_fix(tmp_path):
    with pytest.raises(MixError, match="no such run directory"):
        read_evidence(tmp_path / "nope")
    run = tmp_path / "r"
    _metrics(run, [{"kind": "train", "step": 1, "loss": 5.0}])
    with pytest.raises(MixError, match="no manifest.json"):
        read_evidence(run)
    (run / "manifest.json").write_text("{}")
    with pytest.raises(MixError, match="eval.every"):
        read_evidence(run)


# ------------------------------------------------------------------------------------------- versions

def _counts(tokens: dict[str, int]) -> dict:
    return {"tokenizer": {"path": "tokenizer.model", "sha256": "ab" * 32, "vocab_size": 3000, "eos_id": 2,
                          "bos_id": 1, "pad_id": 3, "unk_id": 0},
            "sources": {n: {"documents": 10, "tokens": t, "shards": [
                {"path": f"{n}/part-00000.parquet", "sha256": n.ljust(64, "0"), "documents": 10, "tokens": t}]}
                for n, t in tokens.items()}}


@pytest.fixture
def corpus(tmp_path):
    """A base manifest written as `make mix` would, and a run directory that trained on it."""
    mix_file = tmp_path / "mixes" / "sample.yaml"
    mix_file.parent.mkdir()
    mix_file.write_text("dataset_mix: {web: 0.3, books: 0.7}\nmax_seq_len: 256\nseed: 42\ntotal_tokens: 100K\n"
                        "max_epochs: 4\nreweight: {step_size: 1.0, smoothing: 0.1, min_weight: 0.05}\n")
    mix = load_mix(mix_file)
    data = tmp_path / "data"
    counts = _counts({"web": 50_000, "books": 400_000})
    tok, man_dir = str(data / "tokenized"), str(data / "manifests")
    base = build_manifest(mix, counts, tok, man_dir)
    (data / "manifests").mkdir(parents=True)
    (data / "manifests" / "sample.json").write_text(dumps_manifest(base))
    run = tmp_path / "runs" / "sample"
    _metrics(run, _val_rows([50, 100], lag=50.0))       # web: 5.0 then 4.5; books 3.5
    (run / "manifest.json").write_text(dumps_manifest(base))
    return {"mix_file": mix_file, "mix": mix, "counts": counts, "tok": tok, "man_dir": man_dir, "base": base,
            "run": run, "data": data}


def _write(manifest, path):
    Path(path).write_text(dumps_manifest(manifest))


def test_next_version_records_parent_rule_evidence_and_weights(corpus):
    c = corpus
    mix_bytes = c["mix_file"].read_bytes()
    ev = read_evidence(c["run"])
    m, path, again = next_version(c["mix"], c["counts"], c["tok"], c["man_dir"], ev)
    assert not again and path == c["data"] / "manifests" / "sample.v2.json"
    assert m["version"] == 2 and m["parent"] == c["base"]["content_hash"] and m["content_hash"] == manifest_content_hash(m)
    assert c["base"]["version"] == 1 and c["base"]["parent"] is None
    r = m["reweight"]
    assert r["formula"] == FORMULA and r["parameters"] == {"step_size": 1.0, "smoothing": 0.1, "min_weight": 0.05}
    assert r["run"] == {"path": str(c["run"]), "step": 100, "tokens": 100_000,
                        "manifest_content_hash": c["base"]["content_hash"], "manifest_name": "sample",
                        "manifest_version": 1}
    assert r["reference"] is None and r["realized_shares"] == {"books": 0.7, "web": 0.3}
    assert r["old_weights"] == {"books": 0.7, "web": 0.3}
    assert r["sources"]["web"]["val_loss"] == 4.5 and r["sources"]["web"]["excess"] == 1.0
    new = r["new_weights"]
    assert new["web"] > 0.3 and sum(new.values()) == pytest.approx(1.0, abs=1e-9)
    assert {k: s["requested_weight"] for k, s in m["sources"].items()} == pytest.approx(new, abs=1e-9)
    assert m["total_tokens"] == 100_000 and m["sources"]["web"]["target_tokens"] == pytest.approx(
        new["web"] * 100_000, abs=1)
    assert c["mix_file"].read_bytes() == mix_bytes                   # the mix file is only read
    text = format_change(r, str(path), m["version"], m["parent"], again)
    assert "web" in text and "0.3000" in text and f"{new['web']:.4f}" in text and "why: web" in text


def test_rerun_finds_its_own_version_and_a_new_decision_is_the_next(corpus):
    c = corpus
    ev = read_evidence(c["run"])
    m, path, _ = next_version(c["mix"], c["counts"], c["tok"], c["man_dir"], ev)
    _write(m, path)
    first = path.read_bytes()
    m2, path2, again = next_version(c["mix"], c["counts"], c["tok"], c["man_dir"], read_evidence(c["run"]))
    assert again and path2 == path and dumps_manifest(m2).encode() == first
    # Another decision (an earlier step) from the same parent: a sibling, version 3, same parent.
    m3, path3, again3 = next_version(c["mix"], c["counts"], c["tok"], c["man_dir"], read_evidence(c["run"], step=50))
    assert not again3 and path3.name == "sample.v3.json" and m3["parent"] == m["parent"]
    _write(m3, path3)
    assert sorted(versions(c["man_dir"], "sample")) == [1, 2, 3]
    # A run trained on version 2 re-weights into version 4, whose parent is version 2.
    run2 = c["run"].parent / "on-v2"
    _metrics(run2, _val_rows([100], lag=0.0))
    (run2 / "manifest.json").write_text(dumps_manifest(m))
    m4, path4, _ = next_version(c["mix"], c["counts"], c["tok"], c["man_dir"], read_evidence(run2))
    assert path4.name == "sample.v4.json" and m4["parent"] == m["content_hash"]
    assert m4["reweight"]["run"]["manifest_version"] == 2
    assert m4["reweight"]["old_weights"] == pytest.approx(m["reweight"]["new_weights"])


def test_evidence_that_does_not_fit_is_refused(corpus):
    c = corpus
    ev = read_evidence(c["run"])
    other = parse_mix({"dataset_mix": {"web": 0.3, "books": 0.7}, "max_seq_len": 256}, "other")
    with pytest.raises(MixError, match="trained on mix 'sample', not 'other'"):
        next_version(other, c["counts"], c["tok"], c["man_dir"], ev)
    counts = json.loads(json.dumps(c["counts"]))
    counts["tokenizer"]["sha256"] = "cd" * 32
    with pytest.raises(MixError, match="do not compare across tokenizers"):
        next_version(c["mix"], counts, c["tok"], c["man_dir"], ev)
    ev.losses.pop("books")
    with pytest.raises(MixError, match="no validation loss for books"):
        next_version(c["mix"], c["counts"], c["tok"], c["man_dir"], ev)
    three = parse_mix({"dataset_mix": {"web": 0.3, "books": 0.6, "cc": 0.1}, "max_seq_len": 256}, "sample")
    counts = _counts({"web": 50_000, "books": 400_000, "cc": 1000})
    with pytest.raises(MixError, match="keeps the sources"):
        next_version(three, counts, c["tok"], c["man_dir"], read_evidence(c["run"]))


def test_manifest_versions_are_listed_by_number(tmp_path):
    d = tmp_path / "manifests"
    d.mkdir()
    for n in ("mix.json", "mix.v2.json", "mix.v10.json", "mix.v3.json.tmp", "other.v2.json", "mix.vx.json"):
        (d / n).write_text("{}")
    assert {k: p.name for k, p in versions(d, "mix").items()} == {1: "mix.json", 2: "mix.v2.json", 10: "mix.v10.json"}


def test_bits_per_byte_are_preferred_and_a_record_without_them_falls_back_to_nats(tmp_path):
    """The rule compares sources: in bits per byte when every source of the row has val_bpb_<source> (a source
    cut into more tokens per byte, such as Chinese, looks easier per token); otherwise nats per token, said so."""
    run = tmp_path / "run"
    rows = [{"kind": "val", "step": 10, "tokens": 10_000, "val_loss": 4.0, "val_loss_zh": 3.0, "val_loss_en": 4.0,
             "val_bpb": 1.5, "val_bpb_zh": 2.0, "val_bpb_en": 1.2}]
    _metrics(run, rows)
    (run / "manifest.json").write_text(json.dumps({"name": "m", "content_hash": "c" * 64}))
    e = read_evidence(run)
    assert e.unit == "bits/byte" and e.losses == {"zh": 2.0, "en": 1.2} and e.nats == {"zh": 3.0, "en": 4.0}
    new, ev = reweight({"zh": 0.5, "en": 0.5}, e.losses, ReweightParams())
    assert new["zh"] > new["en"]          # per byte zh is the harder source; per token it looked the easier
    new_nats, _ = reweight({"zh": 0.5, "en": 0.5}, e.in_nats().losses, ReweightParams())
    assert new_nats["zh"] < new_nats["en"]
    partial = tmp_path / "partial"
    _metrics(partial, [{k: v for k, v in rows[0].items() if k != "val_bpb_en"}])
    (partial / "manifest.json").write_text("{}")
    assert read_evidence(partial).unit == "nats/token" and read_evidence(partial).losses == {"zh": 3.0, "en": 4.0}
