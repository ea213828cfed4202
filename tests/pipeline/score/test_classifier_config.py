"""score.classifiers: one model per language (or group), each writing its own column, checked as the config is
read (before Spark), with the fix in the message; quality is each document's own language's score."""
import subprocess
import sys

import pytest

from conftest import REPO
from glassbox.schema import ConfigError
from pipeline.clean.langid import default_model_path as lid_model
from pipeline.config import parse_config
from pipeline.score.settings import ScoreConfig

EN = str(REPO / "quality_models" / "default" / "quality_en.ftz")
ZH = str(REPO / "quality_models" / "default" / "quality_zh.ftz")


def parse(tmp_path, score):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    return parse_config({"sources": {"d": {"format": "jsonl", "paths": ["a.jsonl"]}}, "score": score},
                        base=tmp_path).score


def refused(tmp_path, score) -> str:
    with pytest.raises(ConfigError) as e:
        parse(tmp_path, score)
    return str(e.value)


def test_defaults_are_english_and_chinese(tmp_path):
    cfg = parse(tmp_path, None)
    assert [(c.languages, c.column) for c in cfg.classifiers] == [(["en"], "quality_en"), (["zh"], "quality_zh")]
    assert all(c.model.endswith((".ftz")) and c.min_quality is None for c in cfg.classifiers)
    assert cfg.min_quality == 0.0 and cfg.random_drop == 0.0


def test_columns_default_thresholds_and_the_any_language_model(tmp_path):
    cfg = parse(tmp_path, {"min_quality": 0.2, "classifiers": [
        {"model": EN, "languages": ["en"]}, {"model": ZH, "languages": ["zh", "ja"], "min_quality": 0.7},
        {"model": EN, "languages": ["*"], "column": "quality_any"}]})
    assert [c.column for c in cfg.classifiers] == ["quality_en", "quality_zh", "quality_any"]
    assert [cfg.threshold(cfg.classifier_for(x)) for x in ("en", "ja", "de")] == [0.2, 0.7, 0.2]


@pytest.mark.parametrize("score, key, words", [
    ({"fasttext_model": EN}, "score.fasttext_model", "replaced by score.classifiers"),
    ({"fasttext_languages": ["en"]}, "score.fasttext_languages", "replaced by score.classifiers"),
    ({"classifiers": [{"languages": ["en"]}]}, "score.classifiers[0].model", "missing"),
    ({"classifiers": [{"model": "nope.ftz", "languages": ["en"]}]}, "score.classifiers[0].model",
     "make quality-models"),
    ({"classifiers": [{"model": EN, "languages": []}]}, "score.classifiers[0].languages", "at least one language"),
    ({"classifiers": [{"model": EN, "languages": ["en", "en"]}]}, "score.classifiers[0].languages", "twice"),
    ({"classifiers": [{"model": EN, "languages": ["en"], "column": "score"}]}, "score.classifiers[0].column",
     "quality_"),
    ({"classifiers": [{"model": EN, "languages": ["*"]}]}, "score.classifiers[0].column", "every language"),
    ({"classifiers": [{"model": EN, "languages": ["en"], "min_quality": 1.5}]}, "score.classifiers[0].min_quality",
     "<= 1"),
    ({"classifiers": [{"model": EN, "languages": ["en"]}, {"model": ZH, "languages": ["zh", "en"]}]},
     "score.classifiers[1].languages", "en is scored by classifiers[0]"),
    ({"classifiers": [{"model": EN, "languages": ["en"]}, {"model": ZH, "languages": ["zh"], "column": "quality_en"}]},
     "score.classifiers[1].column", "another classifier"),
    ({"classifiers": {"model": EN}}, "score.classifiers", "expected a list"),
    ({"random_drop": 1.0}, "score.random_drop", "< 1"),
])
def test_mistakes_name_the_key_and_the_fix(tmp_path, score, key, words):
    msg = refused(tmp_path, score)
    assert msg.startswith(key + ":") and words in msg, msg


def test_a_model_without_the_quality_labels_is_refused_before_any_work(tmp_path):
    """lid.176 is a fastText model too, with 176 language labels: read from the file, without fastText."""
    if not lid_model().is_file():
        pytest.skip("models/lid.176.ftz is missing: run `make setup`")
    msg = refused(tmp_path, {"classifiers": [{"model": str(lid_model()), "languages": ["en"]}]})
    assert msg.startswith("score.classifiers[0].model:") and "__label__en" in msg and "not a quality classifier" in msg
    (tmp_path / "junk.ftz").write_bytes(b"not a model")
    msg = refused(tmp_path, {"classifiers": [{"model": str(tmp_path / "junk.ftz"), "languages": ["en"]}]})
    assert msg.startswith("score.classifiers[0].model:") and "corrupt" in msg


def test_checking_classifiers_loads_no_fasttext():
    code = ("import sys; from pipeline.config import parse_config\n"
            "parse_config({'sources': {'d': {'format': 'jsonl', 'paths': ['README.md']}}})\n"
            "print('fasttext' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stdout + r.stderr


def test_score_config_in_code_fills_columns():
    from glassbox.schema import validate
    from pipeline.score.settings import ClassifierSpec

    cfg = validate(ScoreConfig(classifiers=[ClassifierSpec(EN, ["en"]), ClassifierSpec(ZH, ["zh"])]), "score")
    assert [c.column for c in cfg.classifiers] == ["quality_en", "quality_zh"]
