"""Mixture configs and planning without Spark: normalisation, missing sources, the repetition cap,
shares within 1% of the weights when the cap does not bind, and a canonical, hashable manifest."""
import json
from pathlib import Path

import pytest

from glassbox.contracts import manifest_content_hash
from pipeline.mix.mixture import (DEFAULT_MAX_EPOCHS, MixError, build_manifest, dumps_manifest,
                              format_table, load_mix, parse_mix, parse_tokens, plan_mixture)

REPO = Path(__file__).resolve().parents[3]


def _counts(tokens: dict[str, int], shards: int = 2) -> dict:
    sources = {}
    for name, n in tokens.items():
        per = [n // shards + (1 if i < n % shards else 0) for i in range(shards)]
        sources[name] = {"documents": 10 * shards, "tokens": n, "shards": [
            {"path": f"{name}/part-{i:05d}.parquet", "sha256": f"{name}{i}".ljust(64, "0"), "documents": 10,
             "tokens": per[i]} for i in reversed(range(shards))]}  # unsorted on purpose
    return {"tokenizer": {"path": "tokenizer.model", "sha256": "ab" * 32, "vocab_size": 3000, "eos_id": 2,
                          "bos_id": 1, "pad_id": 3, "unk_id": 0}, "sources": sources}


def test_common_form_and_defaults():
    mix = parse_mix({"dataset_mix": {"code": 0.30, "web": 0.70}, "max_seq_len": 4096, "seed": 42}, "m")
    assert mix.normalized() == {"code": 0.30, "web": 0.70} and not mix.warnings
    assert mix.total_tokens is None and mix.max_epochs == DEFAULT_MAX_EPOCHS and mix.seed == 42


def test_weights_not_summing_to_one_are_normalized_with_a_warning():
    mix = parse_mix({"dataset_mix": {"code": 3, "web": 7}, "max_seq_len": 128}, "m")
    assert mix.normalized() == {"code": 0.3, "web": 0.7}
    assert len(mix.warnings) == 1 and "sum to 10" in mix.warnings[0] and "normalized" in mix.warnings[0]
    m = build_manifest(mix, _counts({"code": 1000, "web": 1000}), "/d/tokenized", "/d/manifests")
    assert m["warnings"][0] == mix.warnings[0]


def test_source_absent_from_the_corpus_lists_the_sources_present():
    mix = parse_mix({"dataset_mix": {"code": 0.5, "book": 0.5}, "max_seq_len": 128}, "m")
    with pytest.raises(MixError) as err:
        build_manifest(mix, _counts({"web": 10, "code": 10}), "/d/tokenized", "/d/manifests")
    msg = str(err.value)
    assert msg.startswith("dataset_mix.book:") and "sources present: code, web" in msg


@pytest.mark.parametrize("value, expected", [(1000, 1000), (1.5e9, 1_500_000_000), ("300M", 300_000_000),
                                             ("2B", 2_000_000_000), ("1.5k", 1500), ("1e6", 1_000_000), (None, None)])
def test_token_counts(value, expected):
    assert parse_tokens("total_tokens", value) == expected


@pytest.mark.parametrize("raw, key", [
    ({"max_seq_len": 128}, "dataset_mix"),
    ({"dataset_mix": {"web": 1}}, "max_seq_len"),
    ({"dataset_mix": {"web": 1}, "max_seq_len": 128, "max_epoch": 2}, "max_epoch"),
    ({"dataset_mix": {"web": -1}, "max_seq_len": 128}, "dataset_mix.web"),
    ({"dataset_mix": {"web": "half"}, "max_seq_len": 128}, "dataset_mix.web"),
    ({"dataset_mix": {"web": 1}, "max_seq_len": 128, "total_tokens": "lots"}, "total_tokens"),
    ({"dataset_mix": {"web": 1}, "max_seq_len": 128, "total_tokens": 0}, "total_tokens"),
    ({"dataset_mix": {"web": 1}, "max_seq_len": 128, "max_epochs": 0}, "max_epochs"),
    ({"dataset_mix": {"web": 1}, "max_seq_len": 128, "seed": "x"}, "seed"),
])
def test_mix_errors_name_the_key(raw, key):
    with pytest.raises(MixError) as err:
        parse_mix(raw, "m")
    assert str(err.value).startswith(key + ":"), str(err.value)


def test_load_mix_yaml_and_json(tmp_path):
    y = tmp_path / "a.yaml"
    y.write_text("dataset_mix: {web: 0.5, cc: 0.5}\nmax_seq_len: 64\ntotal_tokens: 10K\n")
    assert load_mix(y).name == "a" and load_mix(y).total_tokens == 10_000
    j = tmp_path / "b.json"
    j.write_text(json.dumps({"dataset_mix": {"web": 1.0}, "max_seq_len": 64, "seed": 1}))
    assert load_mix(j).name == "b"
    bad = tmp_path / "c.yaml"
    bad.write_text("dataset_mix: {web: 1}\nmax_seq_len: 64\nweights: 1\n")
    with pytest.raises(MixError, match=r"c\.yaml: weights: unknown key"):
        load_mix(bad)
    assert load_mix(REPO / "mixes" / "sample.yaml").weights == {"books": 0.80, "web": 0.13, "zh": 0.04, "cc": 0.03}


@pytest.mark.parametrize("weights, available, total", [
    ({"a": 0.5, "b": 0.5}, {"a": 10_000, "b": 10_000}, 8_000),
    ({"code": 0.3, "web": 0.35, "book": 0.1, "paper": 0.1, "chat": 0.1, "other": 0.05},
     {"code": 5_000_000, "web": 9_000_000, "book": 800_000, "paper": 900_000, "chat": 1_000_000, "other": 333_333},
     7_777_777),
    ({"x": 0.97, "y": 0.03}, {"x": 1_000_000, "y": 1_000}, 100_000),
])
def test_shares_within_one_percent_when_the_cap_does_not_bind(weights, available, total):
    plan = plan_mixture(weights, available, total, max_epochs=4)
    assert not any(plan.capped.values()) and not plan.warnings
    assert sum(plan.targets.values()) == total
    for k, w in weights.items():
        share = plan.targets[k] / total
        assert abs(share - w) <= 0.01 * w, (k, share, w)


def test_cap_binds_then_the_others_are_rescaled():
    # web would need 0.5 * 100k = 50k tokens = 10 epochs of its 5k: capped at 2 epochs (10k).
    plan = plan_mixture({"web": 0.5, "code": 0.3, "book": 0.2}, {"web": 5_000, "code": 1_000_000, "book": 1_000_000},
                        100_000, max_epochs=2)
    assert plan.capped == {"book": False, "code": False, "web": True}
    assert plan.targets["web"] == 10_000 and sum(plan.targets.values()) == 100_000
    assert plan.targets["code"] / plan.targets["book"] == pytest.approx(0.3 / 0.2, rel=1e-4)
    assert len(plan.warnings) == 1 and plan.warnings[0].startswith("web:") and "10.00 epochs" in plan.warnings[0]


def test_cap_cascades_until_stable():
    # Capping a frees budget that then pushes b over its own cap.
    plan = plan_mixture({"a": 0.6, "b": 0.3, "c": 0.1}, {"a": 100, "b": 250, "c": 10_000}, 1_000, max_epochs=1)
    assert plan.targets == {"a": 100, "b": 250, "c": 650} and plan.capped == {"a": True, "b": True, "c": False}
    assert [w.split(":")[0] for w in plan.warnings] == ["a", "b"]


def test_all_capped_shrinks_the_total_with_a_warning():
    plan = plan_mixture({"a": 0.5, "b": 0.5}, {"a": 100, "b": 300}, 10_000, max_epochs=3)
    assert plan.targets == {"a": 300, "b": 900} and plan.total_tokens == 1_200 and all(plan.capped.values())
    assert "shrinks from 10,000 to 1,200" in plan.warnings[-1]


def test_no_budget_means_the_largest_one_within_the_cap():
    plan = plan_mixture({"web": 0.7, "cc": 0.3}, {"web": 45_536, "cc": 10_086}, None, max_epochs=4)
    epochs = {k: plan.targets[k] / a for k, a in {"web": 45_536, "cc": 10_086}.items()}
    assert max(epochs.values()) <= 4 and epochs["cc"] == pytest.approx(4, abs=1e-3)
    assert plan.targets["web"] / plan.total_tokens == pytest.approx(0.7, abs=1e-4)


def test_manifest_keys_paths_and_hash():
    mix = parse_mix({"dataset_mix": {"web": 0.7, "cc": 0.3}, "max_seq_len": 1024, "seed": 42,
                     "total_tokens": 20_000, "max_epochs": 2}, "sample")
    m = build_manifest(mix, _counts({"web": 9_000, "cc": 1_000}), "/d/tokenized", "/d/manifests")
    for key in ("name", "seed", "max_seq_len", "total_tokens", "max_epochs", "tokenizer_sha256", "tokenizer",
                "content_hash", "warnings", "sources"):
        assert key in m
    assert set(m["tokenizer"]) >= {"path", "sha256", "vocab_size", "eos_id", "bos_id", "pad_id", "unk_id"}
    assert m["tokenizer"]["path"] == "../tokenized/tokenizer.model"
    cc = m["sources"]["cc"]
    assert set(cc) >= {"weight", "requested_weight", "available_tokens", "available_documents", "target_tokens",
                       "epochs", "capped", "shards"}
    assert cc["capped"] and cc["target_tokens"] == 2_000 and cc["epochs"] == 2.0 and m["warnings"]
    assert [s["path"] for s in cc["shards"]] == ["../tokenized/cc/part-00000.parquet", "../tokenized/cc/part-00001.parquet"]
    assert sum(s["weight"] for s in m["sources"].values()) == pytest.approx(1.0)
    assert m["sources"]["web"]["weight"] == pytest.approx(18_000 / 20_000)
    assert m["content_hash"] == manifest_content_hash(m) == manifest_content_hash(json.loads(dumps_manifest(m)))
    text = dumps_manifest(m)
    assert text.endswith("}\n") and text == dumps_manifest(json.loads(text))
    again = build_manifest(mix, _counts({"web": 9_000, "cc": 1_000}), "/d/tokenized", "/d/manifests")
    assert dumps_manifest(again) == text
    other = build_manifest(mix, _counts({"web": 9_001, "cc": 1_000}), "/d/tokenized", "/d/manifests")
    assert other["content_hash"] != m["content_hash"]
    table = format_table(m)
    assert "cc *" in table and "capped" in table and m["content_hash"] in table
