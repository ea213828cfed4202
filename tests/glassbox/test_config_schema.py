"""One config schema on one checker (glassbox/schema.py), walked key by key.

Every setting of every config dataclass, pipeline and trainer alike, gets a value of the wrong type and, where
it has a range or choices, a value outside them; each must be refused before any heavy work with a message that
starts with the key's full path. Every number must declare its range, so a new setting cannot slip in
unchecked. YAML numbers read alike on both sides, and checking a config imports nothing heavy.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from glassbox.schema import ConfigError, _strip_optional, settings
from pipeline import config as pipeline_config
from pipeline.clean.settings import CleanConfig
from pipeline.dedup.settings import DedupConfig
from pipeline.extract.settings import ExtractConfig
from pipeline.score.settings import ClassifierSpec, ScoreConfig
from pipeline.tokenize.settings import DecontamConfig, TokenizeConfig
from train import config as train_config
from train_fixtures import REPO

# (section path, dataclass) of everything a pipeline config file can set
PIPELINE = [("extract", ExtractConfig), ("clean", CleanConfig), ("score", ScoreConfig), ("dedup", DedupConfig),
            ("decontaminate", DecontamConfig), ("tokenize", TokenizeConfig),
            ("sources.web", pipeline_config.SourceSpec), ("decontaminate.benchmarks.g", pipeline_config.BenchmarkSpec),
            ("score.classifiers.0", ClassifierSpec)]
TRAINER = [(f.name, f.type) for f in dataclasses.fields(train_config.TrainConfig) if f.name != "path"]
TRAINER = [(name, typing.get_type_hints(train_config.TrainConfig)[name]) for name, _ in TRAINER]
# keys built by pipeline/config.py itself, not read as settings
NOT_SETTINGS = {"decontaminate.benchmarks"}
# a benchmark without a valid name is named by its place in the list
NAMED_AS = {"decontaminate.benchmarks.g.name": "decontaminate.benchmarks[0].name"}


def leaves(section: str, cls) -> list[tuple[str, object, dict]]:
    out = []
    for name, tp, meta in settings(cls):
        base, _ = _strip_optional(tp)
        key = f"{section}.{name}"
        if key in NOT_SETTINGS:
            continue
        if dataclasses.is_dataclass(base):
            out += leaves(key, base)
        else:
            out.append((key, base, meta))
    return out


PIPELINE_KEYS = [leaf for section, cls in PIPELINE for leaf in leaves(section, cls)]
# the first classifier's keys, nested ones (buckets) included, are named by its place in the list
NAMED_AS.update({key: key.replace("score.classifiers.0.", "score.classifiers[0].")
                 for key, _, _ in PIPELINE_KEYS if key.startswith("score.classifiers.0.")})
TRAINER_KEYS = [leaf for section, cls in TRAINER for leaf in leaves(section, cls)]


def wrong_type(tp) -> object:
    origin = typing.get_origin(tp) or tp
    return {bool: "yes", int: "many", float: "fast", str: 3, list: {"not": "a list"}, dict: "x"}[origin]


def out_of_range(tp, meta: dict) -> list[object]:
    """Values just outside the field's declared range (for lists: one bad item)."""
    item = (typing.get_args(tp) or (None,))[0] if (typing.get_origin(tp) or tp) is list else tp
    bad = []
    if "choices" in meta:
        bad.append(99 if item is int else "no-such-choice")
    for bound, delta in (("ge", -1), ("gt", 0), ("le", +1), ("lt", 0)):
        if bound in meta:
            bad.append(meta[bound] + delta if item is int or delta else meta[bound])
    if item is float:
        bad.append(math.nan)
    return [[b] if item is not tp else b for b in bad]


def pipeline_raw(tmp_path) -> dict:
    (tmp_path / "a.warc.gz").write_bytes(b"")
    (tmp_path / "g.jsonl").write_text('{"text": "x"}\n')
    return {"sources": {"web": {"format": "jsonl", "paths": ["*.warc.gz"]}},
            "decontaminate": {"benchmarks": [{"name": "g", "paths": ["g.jsonl"]}]},
            "score": {"classifiers": [{"model": str(REPO / "quality_models/default/quality_en.ftz"), "languages": ["en"]}]}}


def with_value(raw: dict, key: str, value) -> dict:
    raw = copy.deepcopy(raw)
    parts = key.split(".")
    if parts[:2] == ["decontaminate", "benchmarks"]:        # the list entry named g
        raw["decontaminate"]["benchmarks"][0][parts[-1]] = value
        return raw
    if parts[:2] == ["score", "classifiers"] and len(parts) > 2:   # the first classifier's entry
        node = raw["score"]["classifiers"][0]
        for p in parts[3:-1]:                                       # a nested section such as buckets
            node = node.setdefault(p, {})
        node[parts[-1]] = value
        return raw
    node = raw
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return raw


def refused(parse, raw, key: str) -> str:
    key = NAMED_AS.get(key, key)
    with pytest.raises(ConfigError) as e:
        parse(raw)
    msg = str(e.value)
    assert msg.startswith((key + ":", key + "[")), msg
    return msg


def test_every_number_declares_its_range():
    unranged = [key for key, tp, meta in PIPELINE_KEYS + TRAINER_KEYS
                if (typing.get_origin(tp) or tp) in (int, float) and not {"ge", "gt", "le", "lt", "choices"} & set(meta)]
    assert unranged == []
    assert len(PIPELINE_KEYS) > 60 and len(TRAINER_KEYS) > 50


@pytest.mark.parametrize("key, tp, meta", PIPELINE_KEYS, ids=[k for k, _, _ in PIPELINE_KEYS])
def test_pipeline_key_refuses_wrong_type_and_out_of_range(tmp_path, key, tp, meta):
    raw = pipeline_raw(tmp_path)
    parse = lambda r: pipeline_config.parse_config(r, base=tmp_path)  # noqa: E731
    parse(raw)                                                         # the base is valid
    if key != "sources.web.paths":                                     # one path may be written without a list
        refused(parse, with_value(raw, key, wrong_type(tp)), key)
    for bad in out_of_range(tp, meta):
        refused(parse, with_value(raw, key, bad), key)


@pytest.mark.parametrize("key, tp, meta", TRAINER_KEYS, ids=[k for k, _, _ in TRAINER_KEYS])
def test_trainer_key_refuses_wrong_type_and_out_of_range(key, tp, meta):
    parse = train_config.parse_config
    parse({})
    refused(parse, with_value({}, key, wrong_type(tp)), key)
    for bad in out_of_range(tp, meta):
        refused(parse, with_value({}, key, bad), key)


def test_issue_cases(tmp_path):
    """The cases that used to pass the check and then misbehave: a language score no document can reach,
    1e-3 read as a string by one side only."""
    raw = pipeline_raw(tmp_path)
    for bad in (2.0, -0.5, math.nan):
        refused(lambda r: pipeline_config.parse_config(r, base=tmp_path),
                with_value(raw, "clean.min_lang_score", bad), "clean.min_lang_score")
    (tmp_path / "p.yaml").write_text("sources: {web: {format: jsonl, paths: ['*.warc.gz']}}\n"
                                     "score: {min_quality: 1e-3}\ndedup: {near: {threshold: 8e-1}}\n")
    cfg = pipeline_config.load_config(tmp_path / "p.yaml", base=tmp_path)
    assert cfg.score.min_quality == 1e-3 and cfg.dedup.near.threshold == 0.8
    (tmp_path / "t.yaml").write_text("optimizer: {lr: 1e-3, min_lr: 1e-4}\n")
    assert train_config.load_config(tmp_path / "t.yaml").optimizer.lr == 1e-3


def test_checking_a_config_imports_nothing_heavy():
    code = ("import sys, glassbox.cli, glassbox.config_check, pipeline.config, train.config, pipeline.mix.mixture\n"
            "from glassbox.config_check import check\n"
            "check('examples/sample.yaml'); check('train/configs/tiny.yaml'); check('mixes/sample.yaml')\n"
            "heavy = ('pyspark', 'torch', 'deepspeed', 'trafilatura', 'fasttext', 'numpy', 'pyarrow', 'kenlm',\n"
            "         'sentencepiece', 'model2vec', 'sentence_transformers', 'transformers', 's3fs')\n"
            "print(sorted(m for m in heavy if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_one_checker_for_every_kind(tmp_path):
    """`glassbox config check` is the one config checker, the one make runs before heavy work: every kind,
    the pipeline's sources and benchmarks listed, a trainer config's process count for make pretrain, and a
    wrong key named with exit 2."""
    exe = [str(Path(sys.executable).with_name("glassbox")), "config", "check"]
    run = lambda *a: subprocess.run(exe + list(a), cwd=REPO, capture_output=True, text=True, timeout=120)  # noqa: E731
    out = run("examples/sample.yaml").stdout.splitlines()
    assert out[0].startswith("examples/sample.yaml: pipeline config ok (4 sources")
    assert "source zh: jsonl, 1 file(s)" in out and "benchmark mgsm_zh: 1 file(s), fields question" in out
    assert run("train/configs/tiny.yaml", "--world-size", "--set", "parallel.tp=2").stdout.strip() == "2"
    assert "mixture config ok" in run("mixes/sample.yaml").stdout
    (tmp_path / "bad.yaml").write_text("sources: {web: {format: warc, paths: ['examples/sample/*.warc.gz']}}\n"
                                       "clean: {langauges: [en]}\n")
    r = run(str(tmp_path / "bad.yaml"))
    assert r.returncode == 2 and "clean.langauges: unknown key (did you mean languages?)" in r.stderr, r.stderr
    make = subprocess.run(["make", "-n", "--no-print-directory", "tokenize", "pretrain"], cwd=REPO,
                          capture_output=True, text=True, timeout=120).stdout
    assert "jobs/tokens.py" in make and "--or-submit" in make and "config check --kind train" in make
    assert "-m pipeline.config" not in make and "-m train.config" not in make
    # make clean-dedup's and make tokenize's first process checks the config itself (one Python start less) and
    # says the same
    for name in ("clean_dedup", "tokens"):
        bad = [sys.executable, f"jobs/{name}.py", "--data", str(tmp_path / "data"), "--config", str(tmp_path / "bad.yaml")]
        r = subprocess.run(bad + ["--or-submit", "false"], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "clean.langauges: unknown key (did you mean languages?)" in r.stderr, r.stderr
        assert not (tmp_path / "data").exists()
    job = [sys.executable, "jobs/clean_dedup.py", "--data", str(tmp_path / "data"), "--config"]
    r = subprocess.run(job + ["examples/sample.yaml", "--or-submit", "false"], cwd=REPO, capture_output=True, text=True,
                       timeout=120, env={**os.environ, "GLASSBOX_EXECUTOR": "spark"})
    assert r.stdout.splitlines()[:len(out)] == out and r.returncode == 1, r.stdout + r.stderr
