"""The ablation spec (ablation/spec.py): every mistake named with its key and the fix, before anything runs.
No Spark, no trainer: the checks read files only."""
import json
from pathlib import Path

import pytest
import yaml

from ablation.spec import apply_overrides, check
from glassbox.schema import ConfigError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def files(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": str(i), "text": f"document {i} text."}) + "\n" for i in range(3)))
    base = tmp_path / "pipeline.yaml"
    base.write_text(yaml.safe_dump({"sources": {"prose": {"format": "jsonl", "paths": [str(docs)]}},
                                    "clean": {"languages": ["en"]}}))
    return tmp_path, base, docs


def write_spec(tmp_path, base, docs, **changes):
    spec = {"name": "t", "base": str(base),
            "variants": {"null_control": {"seeds": [3, 4]}, "no_rules": {"set": {"clean.rules": []}}},
            "proxy": {"config": str(REPO / "examples/ablate/proxy.yaml"), "tokens": 20480},
            "seeds": [1, 2], "evaluations": {"prose": {"paths": [str(docs)], "format": "jsonl"}}}
    for k, v in changes.items():
        if v is None:
            spec.pop(k, None)
        else:
            spec[k] = v
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    return str(p)


def error_of(path) -> str:
    with pytest.raises(ConfigError) as e:
        check(path)
    return str(e.value)


def test_a_good_spec_resolves_every_variant_and_the_steps(files):
    spec, variants, plan = check(write_spec(*files))
    assert [v.name for v in variants] == ["base", "null_control", "no_rules"]
    assert variants[0].config.clean.rules and variants[2].config.clean.rules == []
    assert variants[1].seeds == [3, 4] and variants[2].seeds == [1, 2]
    assert plan["steps"] == 20480 // (16 * 64) and plan["tokens"] == plan["steps"] * 16 * 64


@pytest.mark.parametrize("changes, expected", [
    ({"variant": {}}, "variant: unknown key (did you mean variants?)"),
    ({"seeds": [1]}, "seeds: at least 2 seeds"),
    ({"proxy": {"config": str(REPO / "examples/ablate/proxy.yaml")}}, "proxy.tokens: missing; add proxy.tokens"),
    ({"proxy": {"config": str(REPO / "examples/ablate/proxy.yaml"), "tokens": 100}},
     "proxy.tokens: 100 is less than one step of 1024 tokens"),
    ({"proxy": {"config": str(REPO / "examples/ablate/proxy.yaml"), "tokens": 20480, "max_epoch": 3}},
     "proxy.max_epoch: unknown key (did you mean max_epochs?)"),
    ({"variants": {"base": {}}}, "variants.base: 'base' is the base config itself"),
    ({"variants": {"x": {"seeds": [1, 2, 3]}}}, "variants.x.seeds: 3 seeds, the base has 2"),
    ({"variants": {"x": {"set": {"clean.rulez": []}}}}, "variants.x.set: clean.rulez: unknown key (did you mean rules?)"),
    ({"variants": {"x": {"set": {"score.min_quality": 2}}}}, "variants.x.set: score.min_quality: must be <= 1"),
    ({"variants": {"x": {"sett": {}}}}, "variants.x.sett: unknown key (did you mean set?)"),
    ({"variants": {}}, "variants: name at least one variant"),
    ({"evaluations": {"prose": {"paths": ["nowhere.txt"]}}}, "evaluations.prose.paths: no file nowhere.txt"),
    ({"evaluations": {"prose": {"paths": ["x"], "format": "csv"}}}, "evaluations.prose.format: must be one of text, jsonl"),
    ({"name": "a/b"}, "name: use letters, digits"),
    ({"variants": {"x": {"against": ["y"]}}}, "variants.x.against: 'y' is not another variant of this spec"),
    ({"variants": {"x": {"against": ["x"]}}}, "variants.x.against: 'x' is not another variant of this spec"),
    ({"variants": {"x": {"draw_per_seed": True}}}, "variants.x.draw_per_seed: the variant drops nothing at random"),
])
def test_mistakes_name_the_key_and_the_fix(files, changes, expected):
    msg = error_of(write_spec(*files, **changes))
    assert expected in msg, msg
    assert msg.startswith(str(files[0] / "spec.yaml"))


def test_a_random_drop_drawn_per_seed_has_a_corpus_per_seed(files):
    """draw_per_seed: each seed's corpus config draws with that seed, so each gets its own corpus; the other variants
    keep one corpus for all their seeds, and the same config the same corpus key (null control and base)."""
    from ablation.corpus import corpus_key
    from ablation.run import kept_of
    from ablation.spec import corpus_variants, load_file

    variants_spec = {"random_drop": {"set": {"score.random_drop": 0.5}, "draw_per_seed": True},
                     "fixed_drop": {"set": {"score.random_drop": 0.5}}, "null_control": {"seeds": [3, 4]}}
    spec, variants, _ = check(write_spec(*files, variants=variants_spec))
    base_raw = load_file(spec.base)
    per_seed = {v.name: corpus_variants(v, base_raw) for v in variants}
    keys = {name: {seed: corpus_key(cv.raw, {}) for seed, cv in by_seed.items()} for name, by_seed in per_seed.items()}
    assert {s: cv.config.score.random_seed for s, cv in per_seed["random_drop"].items()} == {1: 1, 2: 2}
    assert len(set(keys["random_drop"].values())) == 2
    assert len(set(keys["fixed_drop"].values())) == 1 and per_seed["fixed_drop"][1].config.score.random_seed == 0
    assert set(keys["null_control"].values()) == set(keys["base"].values())
    assert not set(keys["random_drop"].values()) & set(keys["fixed_drop"].values())

    one = {"documents": 10, "tokens": 100, "sources": {"a": {"documents": 10, "tokens": 100}}}
    two = {"documents": 20, "tokens": 300, "sources": {"a": {"documents": 15, "tokens": 200},
                                                       "b": {"documents": 5, "tokens": 100}}}
    assert kept_of([one]) == one
    assert kept_of([one, two]) == {"documents": 15, "tokens": 200,
                                   "sources": {"a": {"documents": 12, "tokens": 150}, "b": {"documents": 2, "tokens": 50}},
                                   "per_seed": [{"documents": 10, "tokens": 100}, {"documents": 20, "tokens": 300}]}


def test_a_proxy_config_without_seq_len_is_refused(files, tmp_path):
    cfg = yaml.safe_load((REPO / "examples/ablate/proxy.yaml").read_text())
    cfg["data"]["seq_len"] = None
    p = tmp_path / "proxy.yaml"
    p.write_text(yaml.safe_dump(cfg))
    msg = error_of(write_spec(*files, proxy={"config": str(p), "tokens": 20480}))
    assert "leaves data.seq_len null; set it" in msg


def test_overrides_set_nested_keys_and_null_removes_one():
    raw = {"sources": {"a": {"format": "jsonl"}, "b": {"format": "text"}}, "clean": {"languages": ["en"]}}
    out = apply_overrides(raw, {"clean.min_lang_score": 0.5, "sources.b": None, "score.min_quality": 0.2}, "v")
    assert out == {"sources": {"a": {"format": "jsonl"}}, "clean": {"languages": ["en"], "min_lang_score": 0.5},
                   "score": {"min_quality": 0.2}}
    assert raw["sources"]["b"] == {"format": "text"}            # the base is not changed
    with pytest.raises(ConfigError, match="v.sources.c: null removes a key, but the base config has no sources.c"):
        apply_overrides(raw, {"sources.c": None}, "v")


def test_the_demo_spec_checks():
    """examples/ablate/demo.yaml, as make demo-ablate runs it (its planted files written first)."""
    from ablation.planted import write_planted

    write_planted(str(REPO / "examples/sample/books/tinyshakespeare.jsonl.gz"),
                  str(REPO / "data/ablate-demo/planted"), 800)
    import os

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        spec, variants, plan = check("examples/ablate/demo.yaml")
        _, classifier, _ = check("examples/ablate/classifier.yaml")
    finally:
        os.chdir(cwd)
    assert {v.name for v in variants} == {"base", "null_control", "heuristics"} and plan["steps"] == 160
    assert [v.config.score.min_quality for v in classifier] == [0.0, 0.1]


def test_the_command_exits_2_naming_the_key_before_any_work(files, capsys):
    """`glassbox ablate SPEC` with a mistyped override: exit 2, the key and the fix on stderr, nothing written."""
    from glassbox.cli import main

    tmp_path = files[0]
    spec = write_spec(*files, variants={"x": {"set": {"dedup.exat": False}}}, out=str(tmp_path / "out"))
    assert main(["ablate", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ablate error: ") and "variants.x.set: dedup.exat: unknown key (did you mean exact?)" in err
    assert not (tmp_path / "out").exists()
    assert main(["ablate", write_spec(*files, out=str(tmp_path / "out")), "--check"]) == 0
    assert "spec ok" in capsys.readouterr().out and not (tmp_path / "out").exists()


@pytest.mark.slow   # about 5-20 s: the held-out files of both classifiers and the instruction evaluation part
def test_the_quality_specs_check():
    """examples/ablate/quality-{en,zh}.yaml, with the files `make ablate-quality-data` writes (the held-out prose of
    the default classifiers, the instruction data's evaluation quarter, the Chinese science abstracts). The three
    English candidates it trains into data/ablate-quality stand in as copies of the default when absent: the check is
    of the spec and its configs."""
    import os
    import shutil

    from conftest import shared
    from quality_models import heldout, instruct

    csl = shared("prose", "zh", "science", "csl.jsonl.gz")
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        assert heldout.main(["--card", "quality_models/default/quality_en.json", "--out", "data/ablate-quality/en"]) == 0
        assert instruct.main(["--shared", str(shared("instruct").parent), "--eval-out", "data/ablate-quality/en/instruct.jsonl",
                              "--max-docs", "1000"]) == 0
        for name in ("quality_en_instruct.ftz", "quality_en_docs.ftz", "quality_en_twoclass.ftz"):
            if not Path("data/ablate-quality", name).is_file():
                shutil.copy("quality_models/default/quality_en.ftz", Path("data/ablate-quality", name))
        assert heldout.main(["--card", "quality_models/default/quality_zh.json", "--out", "data/ablate-quality/zh",
                             "--extra", "literature_classical=quality_models/data/prose/zh/literature_classical.jsonl.gz",
                             f"science={csl}"]) == 0
        _, en, plan = check("examples/ablate/quality-en.yaml")
        _, zh, _ = check("examples/ablate/quality-zh.yaml")
        _, cand, _ = check("examples/ablate/quality-en-candidates.yaml")
    finally:
        os.chdir(cwd)
    # the null control is split-half (the base's own eight seeds, docs/quality.md): no variant of its own
    assert [v.name for v in en] == ["base", "quality_filter", "random_drop", "prose_classifier"]
    assert en[1].against == ["random_drop", "prose_classifier"] and plan["steps"] == 240
    assert all(v.seeds == list(range(1, 9)) for v in en) and en[2].draw_per_seed
    assert en[3].config.score.classifiers[0].model.endswith("quality_models/previous/quality_en_prose.ftz")
    # the candidates run into the same folder: the shared variants are the same configs, so their proxies are reused
    assert [v.name for v in cand] == ["base", "quality_filter", "random_drop", "instruct_classifier", "docs_classifier",
                                      "two_class"]
    assert [v.overrides for v in cand[:3]] == [v.overrides for v in en[:3]]
    assert [v.config.score.random_drop for v in zh] == [0.0, 0.0, 0.0, 0.55]
    assert zh[3].draw_per_seed      # the control drawn again for each seed
