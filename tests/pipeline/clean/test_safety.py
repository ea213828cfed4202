"""Content safety by lists (pipeline/clean/safety.py): real list entries, the allow-list, word boundaries, the
density rule, and bad list files refused with their file and line."""
from __future__ import annotations

import pytest

from pipeline.clean.list_settings import SafetyConfig
from pipeline.clean.lists import ListError, builtin
from pipeline.clean.safety import Lists, Matcher, Safety, read_list

AD = ("澳门威尼斯人真人百家乐，注册送38元，首存送彩金。老虎机、时时彩、六合彩投注，24小时在线提款。"
      "百家乐娱乐城官方网站，真人视讯，体育投注，下载客户端即送彩金。")


@pytest.fixture(scope="module")
def zh() -> Matcher:
    return Lists().matcher("zh")


@pytest.mark.parametrize("word", ["性质", "一次性", "性别", "奶茶"])
def test_ordinary_words_holding_a_listed_character_do_not_match(zh, word):
    text = f"这个问题的{word}需要在实验中说明，{word}也写进了报告。"
    assert sum(zh.counts(text)) == 0


def test_single_characters_are_not_terms():
    terms = {t for _, t in read_list(builtin("safety/zh.tsv"))}
    assert "性" not in terms and "奶" not in terms
    assert "百家乐" in terms                        # a real gambling entry is kept


def test_gambling_ad_is_dense_and_rejected_with_its_category(zh):
    safety = Safety(SafetyConfig())
    signals = safety.signals(AD, "zh")
    assert signals["safety_gambling"] > 10    # matches per 1,000 characters (a short text counted as 500)
    assert safety.reason(signals, "zh") == "safety_gambling"


def test_reference_prose_passes():
    text = ("法律是由国家制定或认可，并由国家强制力保证实施的行为规范。公民的基本权利和义务由宪法规定。"
            "深度学习模型通过反向传播算法更新参数，学习率决定每一步的大小。") * 5
    safety = Safety(SafetyConfig())
    assert safety.reason(safety.signals(text, "zh"), "zh") is None


def test_space_separated_terms_match_on_word_boundaries():
    en = Lists().matcher("en")
    assert sum(en.counts("An analysis of canal traffic and the scunthorpe problem.")) == 0
    assert en.counts("free porn here")[0] + en.counts("free porn here")[5] == 1


def test_user_list_adds_a_category(tmp_path):
    f = tmp_path / "politics.tsv"
    f.write_text("# my own list\npolitics\t某某口号\n", encoding="utf-8")
    cfg = SafetyConfig(lists={"zh": [str(f)]}, reject=["politics"], thresholds={"zh": {"politics": 0.5}})
    safety = Safety(cfg)
    assert safety.reason(safety.signals("大家都在喊某某口号。" * 3, "zh"), "zh") == "safety_politics"
    assert Safety(SafetyConfig()).reason(Safety(SafetyConfig()).signals("大家都在喊某某口号。", "zh"), "zh") is None


@pytest.mark.parametrize("content, message", [
    ("porn\tfoo\nweather\tbar\n", ":2: unknown category 'weather'"),
    ("porn foo\n", ":1: expected 'category<TAB>term'"),
    ("# only a comment\n\n", "the list is empty"),
])
def test_bad_list_files_name_file_and_line(tmp_path, content, message):
    f = tmp_path / "list.tsv"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(ListError, match=message) as e:
        read_list(f)
    assert str(f) in str(e.value)


def test_bad_list_is_a_config_error_before_spark(tmp_path):
    from pipeline.config import ConfigError, parse_config

    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    (tmp_path / "zh.tsv").write_text("porn\tfoo\nnope\tbar\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"clean\.safety\.lists: .*zh\.tsv:2: unknown category 'nope'"):
        parse_config({"sources": {"t": {"format": "text", "paths": ["a.txt"]}},
                      "clean": {"safety": {"lists": {"zh": ["zh.tsv"]}}}}, "c.yaml", tmp_path)


def test_a_changed_builtin_file_is_refused(tmp_path, monkeypatch):
    from pipeline.clean import lists

    copy = tmp_path / "lists"
    (copy / "safety").mkdir(parents=True)
    (copy / "safety" / "zh.tsv").write_text("porn\tfoo\n", encoding="utf-8")
    (copy / "CHECKSUMS").write_text(f"{'0' * 64}  safety/zh.tsv\n", encoding="utf-8")
    monkeypatch.setattr(lists, "LISTS_DIR", copy)
    monkeypatch.setattr(lists, "CHECKSUMS", copy / "CHECKSUMS")
    lists.pinned.cache_clear()
    lists.builtin.cache_clear()
    try:
        with pytest.raises(ListError, match="differs from the pinned"):
            lists.builtin("safety/zh.tsv")
    finally:
        lists.pinned.cache_clear()
        lists.builtin.cache_clear()
