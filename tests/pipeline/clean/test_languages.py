"""Every language first class: segmentation, per-language calibration, language ID and dedup keys on every
script (pipeline/clean/words.py, languages.py, calibrate.py, clean.py). Plain Python, seconds."""
import json
import random

import pytest

from conftest import SHARED_DATA
from pipeline.clean import reference_docs
from pipeline.clean.calibrate import calibrate, derive_stopwords, quantile
from pipeline.clean.stage import clean_batch, identify, script_language
from pipeline.config import ConfigError, parse_config
from pipeline.dedup.sketch import sketch_arrays
from pipeline.dedup.minhash import jaccard, shingles
from pipeline.clean.heuristics import compute_signals
from pipeline.clean.languages import Profiles, load_table
from pipeline.clean.langid import default_model_path, get_identifier
from pipeline.clean.settings import CleanConfig
from pipeline.dedup.settings import NearDedupConfig
from pipeline.clean.words import key_units, tokens, unit_ngram, words

LINGUA = SHARED_DATA / "langid" / "lingua" / "sentences"
ZH_ARTICLE = ("深度学习框架PyTorch提供了动态计算图，研究人员可以用Python直接调试模型。训练大型语言模型时，"
              "我们通常使用DeepSpeed的ZeRO优化器来减少显存占用，并结合tensor parallel和pipeline parallel。\n"
              "在数据处理方面，Spark可以把网页抽取、清洗和去重分布到整个集群上，每个阶段都写出Parquet文件，"
              "被删除的文档和原因也都会保留下来，方便之后审计。这样的流程让团队能够重复实验并比较不同的数据配方。\n"
              "我们还为中文文本训练了KenLM语言模型，用困惑度来区分高质量的百科文章和低质量的垃圾网页，"
              "同时保留英文术语，例如tokenizer、fertility和MinHash，不会影响中文的识别结果。\n"
              "最后，每一次训练都会记录损失曲线、学习率和梯度范数，诊断工具会解释曲线中的尖峰和平台期。"
              "如果验证集上的损失不再下降，系统会提示可能的过拟合，并建议调整数据混合的比例或者增加新的数据来源。")


def lingua(lang: str) -> list[str]:
    path = LINGUA / f"{lang}.txt"
    if not path.is_file():
        pytest.skip(f"{path} missing (../shared/data)")
    return reference_docs.sentence_lines(path.read_text(encoding="utf-8").splitlines(), "held_out")


def test_english_words_are_the_old_whitespace_words():
    text = "The quick (brown) fox -- jumps... over the lazy dog's back!"
    got, n_raw = tokens(text)
    assert got == [w for w in (t.strip("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") for t in text.lower().split()) if w]
    assert n_raw == len(text.split())


def test_unspaced_scripts_are_segmented_into_words():
    assert words("我们使用深度学习训练模型。", "zh") == ["我们", "使用", "深度", "学习", "训练", "模型"]
    assert "ファイル" in words("1年以上参照されていないファイルを識別し", "ja")
    th = words("ภาษาไทยเป็นภาษาที่สวยงาม", "th")
    assert len(th) >= 4 and "".join(th) == "ภาษาไทยเป็นภาษาที่สวยงาม"
    assert words("ພາສາລາວເປັນພາສາທີ່ສວຍງາມ", "lo")[:2] == ["ພາສາ", "ລາວ"]
    # mixed: Latin words stay whole, Chinese runs are cut
    assert words("Glassbox 使用PyTorch训练模型", None) == ["glassbox", "使用", "pytorch", "训练", "模型"]


def test_key_units_split_unspaced_characters_and_pick_the_shingle_size():
    units = key_units("使用PyTorch训练，模型！")
    assert units == ["使", "用", "pytorch", "训", "练", "模", "型"]
    assert unit_ngram(units, 5, 2) == 2 and unit_ngram(key_units("one two three 模"), 5, 2) == 5


def test_chinese_near_duplicate_is_found_and_a_different_page_is_not():
    sents = lingua("zh")
    a = "".join(sents[:10])
    rng = random.Random(0)
    chars = list(a)
    for i in rng.sample(range(len(chars)), len(chars) * 3 // 100):
        chars[i] = rng.choice(a)
    b = "".join(chars)
    c = "".join(sents[10:20])
    cfg = NearDedupConfig()
    assert jaccard(shingles(a, cfg.ngram, cfg.char_ngram), shingles(b, cfg.ngram, cfg.char_ngram)) > cfg.threshold
    assert jaccard(shingles(a, cfg.ngram, cfg.char_ngram), shingles(c, cfg.ngram, cfg.char_ngram)) < 0.3
    # the word-only shingles of before could not see it: a Chinese page is a handful of "words"
    assert jaccard(shingles(a, cfg.ngram), shingles(b, cfg.ngram)) < cfg.threshold
    fp = sketch_arrays([a, b, c], cfg.ngram, cfg.num_perm, cfg.bands, cfg.rows, cfg.seed, cfg.char_ngram)
    assert (fp.keys[0] == fp.keys[1]).any() and not (fp.keys[0] == fp.keys[2]).any()


def test_decontamination_matches_a_chinese_benchmark_item():
    from pipeline.tokenize.decontam import Item, NgramIndex
    item = Item("mgsm_zh:1", ("珍妮特的鸭子每天下16颗蛋。她每天早上早餐时吃3颗，每天用4颗为自己的朋友做松饼。",))
    index = NgramIndex([item], ngram=13, min_words=8)
    doc = "今天的作业：珍妮特的鸭子每天下 16 颗蛋。她每天早上早餐时吃 3 颗，还有别的题目。"
    assert [k for k, _ in index.match(doc)] == ["mgsm_zh:1"]
    assert index.match("珍妮特今天去了农贸市场，买了很多新鲜的鸭蛋和松饼。") == []


def test_stop_words_come_from_the_language_and_english_keeps_gophers():
    docs = ["今天我们在学校里学习了很多的东西，这是我的书。" * 3, "他的朋友在北京工作，这是一个好的机会。" * 3]
    stop = derive_stopwords(docs, "zh")
    assert "的" in stop and "在" in stop
    s = compute_signals("这是我的书，他的朋友在北京。", "zh", frozenset(stop))
    assert s["gopher_stopword_count"] >= 3
    assert compute_signals("the cat and the hat")["gopher_stopword_count"] == 3  # the default list


def test_quantile():
    assert quantile([3, 1, 2], 0.5) == 2 and quantile([0, 10], 0.25) == 2.5


@pytest.fixture(scope="module")
def identifier():
    if not default_model_path().is_file():
        pytest.skip("lid.176.ftz missing: run `make setup`")
    return get_identifier()


def test_calibration_relaxes_only_what_the_language_needs(tmp_path, identifier):
    ref = tmp_path / "ref"
    ref.mkdir()
    for lang in ("en", "zh", "de"):
        (ref / f"{lang}.txt").write_text("\n".join(lingua(lang)[:120]), encoding="utf-8")
    table = calibrate(ref, half="all", n_docs=60, identifier=identifier)
    zh, de = table["languages"]["zh"], table["languages"]["de"]
    assert "rules" not in table["languages"]["en"]               # English is not recalibrated
    assert zh["rules"]["gopher_short_words"] < 3                 # Chinese words are short ...
    assert zh["rules"]["gopher_too_few_words"] > 50              # ... and many to a sentence
    assert "gopher_short_words" not in de.get("rules", {})       # German passes the published value
    assert "的" in zh["stopwords"] and "der" in de["stopwords"]
    assert ["nb", "no", "nn"] in table["confusable"]
    # the file form is what clean.calibration reads
    out = tmp_path / "table.json"
    out.write_text(json.dumps(table, ensure_ascii=False))
    cfg = parse_config({"sources": {"x": {"format": "text", "paths": [str(out)]}},
                        "clean": {"calibration": str(out), "languages": None}}, base=tmp_path)
    assert Profiles(cfg.clean).get("zh").changed["gopher_short_words"][1] == zh["rules"]["gopher_short_words"]
    with pytest.raises(ConfigError, match="clean.calibration"):
        parse_config({"sources": {"x": {"format": "text", "paths": [str(out)]}},
                      "clean": {"calibration": str(tmp_path / "missing.json")}}, base=tmp_path)


def test_per_language_overrides_win_over_the_table():
    cfg = CleanConfig(languages=None, per_language={"zh": {"rules": {"gopher_short_words": 0.5},
                                                             "stopwords": ["的"], "min_lang_score": 0.2}})
    prof = Profiles(cfg).get("zh")
    assert dict((r["reason"], r["value"]) for r in prof.rules)["gopher_short_words"] == 0.5
    assert prof.stopwords == frozenset(["的"]) and prof.min_lang_score == 0.2
    # a language without calibration gets the published values and no stop-word rule
    plain = Profiles(CleanConfig(calibration="none")).get("xx")
    assert "gopher_few_stopwords" not in {r["reason"] for r in plain.rules}


def test_chinese_article_with_english_terms_is_chinese_and_kept(identifier):
    assert script_language(ZH_ARTICLE)[0] == "zh"
    row = clean_batch([ZH_ARTICLE], identifier, CleanConfig(languages=["zh"]))[0]
    assert row["lang"] == "zh" and row["reason"] is None, row


def test_confused_languages_do_not_drop_documents(identifier):
    profiles = Profiles(CleanConfig(languages=["bs"]))
    assert identify([("hr", 0.5), ("bs", 0.3), ("sr", 0.1)], "tekst", profiles) == ("hr", pytest.approx(0.9))
    docs = reference_docs.documents(lingua("bs"), "bs", 6, seed=5)
    rows = clean_batch(docs, identifier, CleanConfig(languages=["bs"]))
    assert [r["lang"] for r in rows] == ["bs"] * 6
    assert sum(r["reason"] is None for r in rows) >= 5, [r["reason"] for r in rows]


def test_every_language_keeps_its_prose_and_rejects_spam(identifier):
    """A small version of bench/languages.py on the held-out lines (the table was calibrated on the others)."""
    cfg = CleanConfig(languages=None)
    kept = total = 0
    for lang in ("en", "zh", "ja", "ko", "th", "ru", "de", "ar", "hi", "vi", "zu"):
        sents = lingua(lang)
        docs = reference_docs.documents(sents, lang, 6, seed=7)
        rows = clean_batch(docs, identifier, cfg)
        kept += sum(r["reason"] is None for r in rows)
        total += len(rows)
        j = reference_docs.joiner(lang)
        spam = ["\n".join([sents[0]] * 12), "\n\n".join([j.join(sents[1:4])] * 5)]
        assert all(r["reason"] for r in clean_batch(spam, identifier, cfg)), lang
    assert kept >= 0.9 * total


def test_the_builtin_table_covers_the_focus_languages():
    TABLE = load_table("builtin")
    for lang in ("en", "zh", "ja", "ko", "th", "ru", "de", "fr", "es", "ar", "hi", "vi"):
        assert TABLE["languages"][lang]["stopwords"], lang
    assert TABLE["method"]["lines"] == "even"  # calibrated on the lines bench/languages.py does not use
