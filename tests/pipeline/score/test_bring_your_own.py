"""Classifiers a user brings to `score.classifiers`: a fastText model trained elsewhere (`kind: fasttext`, DCLM's
labels __label__hq/__label__cc, its own positive label and preprocessing) and a Hugging Face sequence-classification
or regression model from a local folder (`kind: hf`), each scored through the score stage's own batch function and
checked, with the setting named, before Spark starts. The models are made here (tests/score_fixtures.py)."""
import math
import subprocess
import sys

import pyarrow as pa
import pytest

from conftest import REPO
from glassbox.schema import ConfigError
from pipeline.config import parse_config
from pipeline.score.batches import score_partition
from pipeline.score.classifiers import get_classifier
from pipeline.score.quality import PREPARE, get_classifier as get_own
from score_fixtures import (CC_TEXT, HQ_TEXT, build_tiny_bert, drop_max_positions, reference_scores,
                            train_fasttext_hq_cc)

EN = str(REPO / "quality_models" / "default" / "quality_en.ftz")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("byo")
    return {"dclm": train_fasttext_hq_cc(d / "dclm.bin"),
            "edu": build_tiny_bert(d / "edu"),
            "labels": build_tiny_bert(d / "labels", labels=["bad", "ok", "good"]),
            "plain": build_tiny_bert(d / "plain", head=False),
            "nolimit": _no_limit(build_tiny_bert(d / "nolimit", tokenizer_max=None)),
            "dir": d}


def _no_limit(folder):
    drop_max_positions(folder)
    return folder


def parse(tmp_path, *classifiers, **score):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    return parse_config({"sources": {"d": {"format": "jsonl", "paths": ["a.jsonl"]}},
                         "score": {"classifiers": list(classifiers), **score}}, base=tmp_path).score


def refused(tmp_path, *classifiers) -> str:
    with pytest.raises(ConfigError) as e:
        parse(tmp_path, *classifiers)
    return str(e.value)


def scored(cfg, texts, langs=None) -> pa.Table:
    langs = langs or ["en"] * len(texts)
    batch = pa.RecordBatch.from_pydict({"id": [f"d{i}" for i in range(len(texts))], "source": ["web"] * len(texts),
                                        "text": texts, "lang": langs})
    cfg.kenlm_dir = str(REPO / "no-kenlm-here")   # classifiers only
    return pa.Table.from_batches(list(score_partition(cfg, batch.schema)(iter([batch]))))


# --- fastText trained elsewhere ----------------------------------------------------------------------------------

def test_dclm_preparation_is_dclms_own():
    """DCLM's classify_fasttext_hq_prob: " ".join(content.strip().splitlines()), case kept; none keeps the text
    but for the newlines fastText refuses."""
    text = "  The First line.\r\nSecond  Line\n\nEnd \u2028 here "
    assert PREPARE["dclm"](text) == " ".join(text.strip().splitlines()) == \
        "The First line. Second  Line  End   here"
    assert PREPARE["none"](text) == "  The First line.\r Second  Line  End \u2028 here "
    assert PREPARE["glassbox"](text) != PREPARE["dclm"](text)    # lower-cased, <nl> tokens


def test_a_fasttext_model_trained_elsewhere_scores_its_positive_label_with_its_preparation(tmp_path, models):
    cfg = parse(tmp_path, {"model": str(models["dclm"]), "kind": "fasttext", "languages": ["en"],
                           "column": "quality_dclm", "positive_label": "__label__hq"})
    spec = cfg.classifiers[0]
    assert spec.preprocess == "dclm" and spec.reads_chars() == 20_000   # the defaults of the kind
    texts = [HQ_TEXT, CC_TEXT, HQ_TEXT.replace(" ", "\n"), "", None]
    got = scored(cfg, texts).column("quality_dclm").to_pylist()
    assert got[0] > 0.9 and got[1] < 0.1 and got[2] > 0.9 and got[3] is None and got[4] is None, got
    assert scored(cfg, texts).column("quality").to_pylist()[:3] == got[:3]
    # the other label is the complement: the score is the named label's probability
    other = parse(tmp_path, {**_entry(models), "positive_label": "__label__cc"})
    flipped = scored(other, texts[:2]).column("quality_dclm").to_pylist()
    assert all(math.isclose(a + b, 1.0, abs_tol=1e-4) for a, b in zip(got[:2], flipped)), (got, flipped)
    # Glassbox's preparation lower-cases: this model then reads the capitals of high quality as common crawl
    lowered = parse(tmp_path, {**_entry(models), "preprocess": "glassbox"})
    assert scored(lowered, [HQ_TEXT]).column("quality_dclm").to_pylist()[0] < 0.1


def _entry(models) -> dict:
    return {"model": str(models["dclm"]), "kind": "fasttext", "languages": ["en"], "column": "quality_dclm"}


def test_glassbox_kind_stays_the_default_and_the_same_model(tmp_path):
    cfg = parse(tmp_path, {"model": EN, "languages": ["en"]})
    spec = cfg.classifiers[0]
    assert spec.kind == "glassbox" and spec.text_prep() == "glassbox" and spec.label() == "__label__hq"
    assert get_classifier(spec) is get_own(EN)   # one cached model, scored exactly as before


def test_fasttext_mistakes_name_the_setting(tmp_path, models):
    m = str(models["dclm"])
    msg = refused(tmp_path, {"model": m, "kind": "fasttext", "languages": ["en"], "positive_label": "__label__good"})
    assert msg.startswith("score.classifiers[0].positive_label:") and "'__label__hq', '__label__cc'" in msg, msg
    # without kind: fasttext it is taken for one of Glassbox's own models, whose labels it lacks
    msg = refused(tmp_path, {"model": m, "languages": ["en"]})
    assert msg.startswith("score.classifiers[0].model:") and "not a quality classifier" in msg, msg
    for entry, key, words in [
        ({"positive_label": "__label__cc"}, "positive_label", "kind: fasttext"),
        ({"preprocess": "dclm"}, "preprocess", "kind: fasttext"),
        ({"kind": "fasttext", "max_length": 128}, "max_length", "applies to kind hf"),
        ({"kind": "fasttext", "min_quality": 3}, "min_quality", "<= 1"),
        ({"kind": "fasttext", "preprocess": "lower"}, "preprocess", "glassbox, dclm, none"),
    ]:
        msg = refused(tmp_path, {"model": m if entry.get("kind") else EN, "languages": ["en"], **entry})
        assert msg.startswith(f"score.classifiers[0].{key}:") and words in msg, msg


# --- Hugging Face models -----------------------------------------------------------------------------------------

TEXTS = ["the energy of light", "click here to buy now, cheap " * 40, "   ", None, "river", "a study of the water cycle",
         "history", "the mountain river and the plant cell"]


def test_a_regression_model_scores_in_batches_as_transformers_does_one_by_one(tmp_path, models):
    cfg = parse(tmp_path, {"model": str(models["edu"]), "kind": "hf", "languages": ["en"], "column": "quality_edu",
                           "batch_size": 3})
    got = scored(cfg, TEXTS).column("quality_edu").to_pylist()
    assert got[2] is None and got[3] is None
    real = [i for i, t in enumerate(TEXTS) if t and t.strip()]
    ref = reference_scores(models["edu"], [TEXTS[i] for i in real], 64)   # cut at the model's 64 positions
    assert all(math.isclose(got[i], r[0], abs_tol=1e-4) for i, r in zip(real, ref)), (got, ref)
    assert len({round(got[i], 4) for i in real}) > 3                       # the documents tell apart
    # a shorter max_length reads fewer tokens of the long document only
    short = parse(tmp_path, {"model": str(models["edu"]), "kind": "hf", "languages": ["en"], "column": "quality_edu",
                             "max_length": 16})
    cut = scored(short, TEXTS).column("quality_edu").to_pylist()
    assert math.isclose(cut[1], reference_scores(models["edu"], [TEXTS[1]], 16)[0][0], abs_tol=1e-4)
    assert not math.isclose(cut[1], got[1], abs_tol=1e-4) and math.isclose(cut[0], got[0], abs_tol=1e-4)
    # clipped to [low, high] (FineWeb-Edu's 0-5): here around the scores' median
    values = sorted(got[i] for i in real)
    low, high = values[1], values[-2]
    clipped = parse(tmp_path, {"model": str(models["edu"]), "kind": "hf", "languages": ["en"],
                               "column": "quality_edu", "clip": [low, high], "min_quality": 3})
    c = scored(clipped, TEXTS).column("quality_edu").to_pylist()
    assert all(c[i] == pytest.approx(min(max(got[i], low), high), abs=1e-5) for i in real)
    assert min(c[i] for i in real) == pytest.approx(low) and max(c[i] for i in real) == pytest.approx(high)


def test_a_classification_head_scores_the_probability_of_its_positive_label(tmp_path, models):
    cfg = parse(tmp_path, {"model": str(models["labels"]), "kind": "hf", "languages": ["en"],
                           "column": "quality_cls", "positive_label": "good"})
    got = scored(cfg, TEXTS).column("quality_cls").to_pylist()
    real = [i for i, t in enumerate(TEXTS) if t and t.strip()]
    for i, logits in zip(real, reference_scores(models["labels"], [TEXTS[i] for i in real], 64)):
        e = [math.exp(x - max(logits)) for x in logits]
        assert math.isclose(got[i], e[2] / sum(e), abs_tol=1e-4), (got[i], logits)
    assert all(0 < got[i] < 1 for i in real)


def test_a_hf_model_loads_once_per_process(tmp_path, models):
    spec = parse(tmp_path, {"model": str(models["edu"]), "kind": "hf", "languages": ["en"]}).classifiers[0]
    assert get_classifier(spec) is get_classifier(spec)


def test_hf_mistakes_are_config_errors_naming_the_setting(tmp_path, models):
    hf = {"kind": "hf", "languages": ["en"], "column": "quality_edu"}
    cases = [
        ({"model": str(models["plain"])}, "model", "no sequence-classification head (architectures: ['BertModel'])"),
        ({"model": str(models["labels"])}, "positive_label", "['bad', 'ok', 'good']"),
        ({"model": str(models["labels"]), "positive_label": "great"}, "positive_label",
         "'great' is not a label"),
        ({"model": str(models["edu"]), "positive_label": "LABEL_0"}, "positive_label", "one regression output"),
        ({"model": str(models["nolimit"])}, "max_length", "states no maximum length"),
        ({"model": str(models["edu"]), "max_length": 65}, "max_length", "(64 tokens)"),
        ({"model": str(models["labels"]), "positive_label": "good", "clip": [0, 5]}, "clip", "regression output"),
        ({"model": str(models["labels"]), "positive_label": "good", "min_quality": 2}, "min_quality", "<= 1"),
        ({"model": str(models["edu"]), "clip": [5, 0]}, "clip", "must increase"),
        ({"model": str(models["edu"]), "preprocess": "dclm"}, "preprocess", "tokenizer prepares"),
        ({"model": str(models["edu"]), "max_chars": 100}, "max_chars", "tokenizer prepares"),
        ({"model": str(models["dir"] / "missing")}, "model", "not found"),
        ({"model": str(models["dclm"])}, "model", "not a folder"),
    ]
    for entry, key, words in cases:
        msg = refused(tmp_path, {**hf, **entry})
        assert msg.startswith(f"score.classifiers[0].{key}:") and words in msg, (entry, msg)
    # the missing maximum, stated in the config, is accepted; so is a regression threshold above 1
    cfg = parse(tmp_path, {**hf, "model": str(models["nolimit"]), "max_length": 32, "min_quality": 3})
    assert cfg.classifiers[0].max_length == 32


def test_checking_bring_your_own_classifiers_imports_no_model_library(tmp_path, models):
    """The config check reads config.json and the fastText dictionary: no torch, transformers or fastText."""
    code = ("import sys; from pipeline.config import parse_config\n"
            f"parse_config({{'sources': {{'d': {{'format': 'jsonl', 'paths': ['README.md']}}}}, 'score': {{"
            f"'classifiers': [{{'model': {str(models['edu'])!r}, 'kind': 'hf', 'languages': ['en']}},"
            f"{{'model': {str(models['dclm'])!r}, 'kind': 'fasttext', 'languages': ['de']}}]}}}})\n"
            "print(sorted(m for m in ('torch', 'transformers', 'fasttext') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_a_regression_scale_is_never_dropped_by_the_default_threshold(tmp_path, models):
    """A regression head's score may be negative: min_quality 0 (the default) still drops nothing; the model's own
    threshold on its scale (FineWeb-Edu keeps 3 and above) does."""
    from pipeline.score.decisions import score_reason

    cfg = parse(tmp_path, {"model": str(models["edu"]), "kind": "hf", "languages": ["en"], "column": "quality_edu"})
    assert score_reason(-5.0, None, cfg, "en", "d0") is None
    cfg.classifiers[0].min_quality = 3.0
    assert score_reason(2.9, None, cfg, "en", "d0") == "low_quality" and score_reason(3.0, None, cfg, "en") is None
