"""The fastText quality classifiers the score stage applies: the shipped defaults (English, Chinese), their cards,
the one preprocessing path of training and scoring, and the errors of a bad model file."""
import json
import statistics
import subprocess
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from glassbox.contracts import sha256_file
from pipeline.models import ModelError, check_fasttext_file, fasttext_labels, require_file
from pipeline.score import quality
from pipeline.score.quality import HQ_LABEL, NEWLINE, QualityClassifier, check_labels, get_classifier, preprocess
from quality_models import examples, train
from quality_models.inputs import parse_spec, read_input
from quality_models.train import keep_languages

REPO = Path(__file__).resolve().parents[3]
DEFAULT = REPO / "quality_models" / "default"
MODELS = {lang: DEFAULT / f"quality_{lang}.ftz" for lang in ("en", "zh")}


def facts(lang: str) -> dict:
    return json.loads(MODELS[lang].with_suffix(".json").read_text(encoding="utf-8"))


def roc_auc(pos: list[float], neg: list[float]) -> float:
    """The chance that a positive scores above a negative (ties count half): ROC AUC, by counting."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@lru_cache(maxsize=None)
def heldout_scores(lang: str) -> dict[str, tuple[int, list[float]]]:
    """The shipped model's P(hq) for every document its training held out (the card's inputs, seed and fraction:
    quality_models/examples.held_out, by whole work or page), per input: {input: (label, scores)}. Whole documents, as
    the score stage reads them. Negatives are the JSONL web inputs' held-out pages in the model's language (as
    `python -m quality_models.heldout` writes them); the sample's WARC crawls, which need extracting, are left out."""
    f, skipped, out = facts(lang), Counter(), {}
    clf = get_classifier(MODELS[lang])
    for role, label in (("positives", 1), ("negatives", 0)):
        for arg in f["inputs"][role]:
            spec = parse_spec(str(REPO / arg))
            if role == "negatives" and not spec.path.endswith((".jsonl", ".jsonl.gz", ".json.gz")):
                continue
            docs = [d for d in read_input(spec, skipped)
                    if d.group and examples.held_out(d.group, f["seed"], f["holdout"])]
            if role == "negatives":
                docs = keep_languages(docs, f["languages"], skipped)
            if docs:
                out[spec.name] = (label, clf.predict_proba([d.text for d in docs], [lang] * len(docs)))
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_default_model_loads_once_and_is_small(lang):
    path = MODELS[lang]
    assert path.is_file(), "the default model is missing: run `make quality-models`"
    check_fasttext_file(path)
    clf = get_classifier(path)
    assert clf is get_classifier(path)  # one load per process
    assert set(clf.load().get_labels()) == {HQ_LABEL, "__label__lq"} == set(fasttext_labels(path))
    assert path.stat().st_size < 2_000_000


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_card_describes_the_shipped_model_and_files(lang):
    f, card = facts(lang), MODELS[lang].with_suffix(".md").read_text(encoding="utf-8")
    assert f["model_sha256"] == sha256_file(MODELS[lang]) and f["model_sha256"] in card
    for row in f["files"]:
        assert sha256_file(REPO / row["path"]) == row["sha256"], f"{row['path']} changed since training"
        assert f"`{row['path']}` | `{row['sha256']}`" in card and row["licenses"] != ["not stated"], row
    for word in ("precision", "recall", "ROC AUC", "What it prefers", "glassbox train-classifier --lang"):
        assert word in card
    # no path of the machine that trained it: files named relative to the repository
    assert str(REPO) not in card and str(Path.home()) not in card
    assert not any(Path(row["path"]).is_absolute() for row in f["files"])
    assert f["languages"] == [lang] and "roc_auc" in f["held_out"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_shipped_model_ranks_held_out_prose_above_held_out_web(lang):
    """Measured here, not read from the card: on documents the model never trained on, ROC AUC of prose (and
    instructions) against web pages at least 0.9 (a random scorer: 0.5, give or take 0.03 at these counts; measured
    when written: en 0.975 on 171 against 42 documents, 0.926 on 785 against 152 for a retrained model with
    instructions and C4 pages; zh 0.988 on 188 against 126), and every positive kind's median above every web input's
    median (inputs of 20 documents or more)."""
    scores = heldout_scores(lang)
    pos = [p for label, ps in scores.values() if label == 1 for p in ps]
    neg = [p for label, ps in scores.values() if label == 0 for p in ps]
    assert len(pos) >= 150 and len(neg) >= 40, {k: len(v) for k, (_, v) in scores.items()}
    auc = roc_auc(pos, neg)
    assert auc >= 0.9, (lang, auc, len(pos), len(neg))
    prose = {k: statistics.median(ps) for k, (label, ps) in scores.items() if label == 1}
    web = {k: statistics.median(ps) for k, (label, ps) in scores.items() if label == 0 and len(ps) >= 20}
    assert web and min(prose.values()) > max(web.values()), (prose, web)


def test_classical_chinese_is_described_not_trained():
    f = facts("zh")
    assert not any("classical" in x for x in f["inputs"]["positives"])
    assert f["described"]["zh/literature_classical"]["n"] > 100


@pytest.fixture(scope="module")
def zh_heldout():
    """Chinese prose of works the default model never trained on, and the Chinese spam pages of the sample."""
    f, skipped = facts("zh"), Counter()
    docs = [d for arg in f["inputs"]["positives"] for d in read_input(parse_spec(str(REPO / arg)), skipped)
            if examples.held_out(d.group, f["seed"], f["holdout"])]
    return docs


def test_chinese_prose_no_longer_scores_zero(zh_heldout):
    """The old default gave every Chinese kind about 0.001 (and the pipeline no score at all)."""
    clf = get_classifier(MODELS["zh"])
    by_kind: dict[str, list[float]] = {}
    for d, s in zip(zh_heldout, clf.predict_proba([d.text for d in zh_heldout], ["zh"] * len(zh_heldout))):
        by_kind.setdefault(d.input, []).append(s)
    kinds = json.loads((MODELS["zh"].with_suffix(".json")).read_text())["inputs"]["positives"]
    assert len(by_kind) == len(kinds) == 6 and all(statistics.median(v) > 0.5 for v in by_kind.values()), \
        {k: statistics.median(v) for k, v in by_kind.items()}
    spam = ["澳门威尼斯人赌场官网，真人百家乐，注册送38元彩金，点击进入！" * 3,
            "首页 | 关于我们 | 联系我们 | 网站地图\n版权所有 © 2022 京ICP备12345678号"]
    assert max(clf.predict_proba(spam, ["zh", "zh"])) < 0.5


def test_one_preprocessing_path_through_the_word_layer():
    assert train.preprocess is quality.preprocess is examples.preprocess
    text = "The Lobster,\nknown as  H. gammarus; is BLUE.\n\n"
    assert preprocess(text) == f"the lobster , {NEWLINE} known as h . gammarus ; is blue ."
    assert preprocess("word , word") == preprocess("word, word")  # tokenized and raw text agree
    # Chinese is segmented into words by ICU (not one token per clause), full-width forms folded by NFKC
    assert preprocess("我们在北京大学学习。ＡＢＣ１２３", "zh") == "我们 在 北京 大学 学习 。 abc123"
    assert "\n" not in preprocess("a\nb\r\nc") and preprocess("") == "" and preprocess(" \n ") == ""
    # a page of both scripts: each line as the word layer cuts it alone (ICU once for all its Chinese lines)
    mixed = "Intro line, here\n我们在北京大学学习。\n\nsecond: line\n他们  在上海。"
    assert preprocess(mixed, "zh") == (f"intro line , here {NEWLINE} 我们 在 北京 大学 学习 。 {NEWLINE} second : line "
                                       f"{NEWLINE} 他们 在 上海 。")


def test_empty_text_is_none_and_order_is_kept():
    clf = get_classifier(MODELS["en"])
    out = clf.predict_proba(["", "   \n\t", None, "A plain sentence about a city.", ""])
    assert out[0] is None and out[1] is None and out[2] is None and out[4] is None
    assert 0.0 <= out[3] <= 1.0
    assert clf.predict_proba([]) == []


def test_missing_model_names_file_and_the_fix(tmp_path):
    missing = tmp_path / "nope" / "quality_en.ftz"
    with pytest.raises(ModelError) as e:
        QualityClassifier(missing).predict_proba(["some text"])
    assert str(missing) in str(e.value) and "glassbox train-classifier" in str(e.value)
    with pytest.raises(ModelError):
        get_classifier(missing)
    with pytest.raises(ModelError, match="make quality-models"):
        require_file(missing, "KenLM model")


def test_model_with_other_labels_is_refused():
    from pipeline.clean.langid import default_model_path

    if not default_model_path().is_file():
        pytest.skip("models/lid.176.ftz is missing: run `make setup`")
    with pytest.raises(ModelError, match="not a quality classifier"):
        check_labels(default_model_path())
    with pytest.raises(ModelError, match="__label__en"):
        QualityClassifier(default_model_path()).predict_proba(["x"])


@pytest.mark.parametrize("content", [b"", b"not a model\n", b"\x00" * 4096])
def test_corrupt_model_is_a_model_error(tmp_path, content):
    bad = tmp_path / "quality_en.ftz"
    bad.write_bytes(content)
    with pytest.raises(ModelError, match="corrupt") as e:
        QualityClassifier(bad).predict_proba(["some text"])
    assert str(bad) in str(e.value)


def test_truncated_model_fails_fast(tmp_path):
    """fastText's own loader spins on a truncated file (memory growing); ours must refuse it."""
    data = MODELS["en"].read_bytes()
    for n in (200, len(data) // 2, len(data) - 1):
        cut = tmp_path / f"cut{n}.ftz"
        cut.write_bytes(data[:n])
        with pytest.raises(ModelError, match="corrupt"):
            check_fasttext_file(cut)
    longer = tmp_path / "longer.ftz"
    longer.write_bytes(data + b"\0")
    with pytest.raises(ModelError, match="unexpected bytes"):
        check_fasttext_file(longer)
    # and through the public entry point, in a child process so a regression cannot hang the suite
    code = ("import sys; from pipeline.score.quality import QualityClassifier, ModelError\n"
            "try: QualityClassifier(sys.argv[1]).predict_proba(['x'])\n"
            "except ModelError as e: print('ModelError', e); sys.exit(0)\n"
            "sys.exit(1)")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / f"cut{len(data) // 2}.ftz")],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ModelError" in r.stdout, r.stdout + r.stderr
