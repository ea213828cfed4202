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


# the same kind of page in written Cantonese, traditional characters (嘅 係 喺 啲 唔: Cantonese, not Mandarin)
AD_YUE = ("澳門威尼斯人真人百家樂，註冊即送38蚊，首存送彩金。老虎機、時時彩、六合彩投注，24小時喺線提款，"
          "快啲嚟玩啦。百家樂娛樂城官方網站係真人視訊，體育投注，下載客戶端即送彩金，唔使等。")


@pytest.mark.parametrize("lang", ["yue", "wuu"])
def test_cantonese_and_wu_pages_are_checked_with_the_chinese_lists(lang):
    """lid.176 labels Cantonese yue and Wu wuu; both are Chinese (pipeline/clean/script.py) and there is no
    safety/yue.tsv: their pages meet the zh lists and thresholds, and are rejected like the zh page."""
    safety = Safety(SafetyConfig())
    zh = safety.signals(AD, "zh")
    got = safety.signals(AD, lang)
    assert got["safety_gambling"] > 10
    assert got == zh
    assert safety.reason(got, lang) == safety.reason(zh, "zh") == "safety_gambling"
    assert safety.limits(lang) == safety.limits("zh")


@pytest.mark.parametrize("lang", ["yue", "wuu", "zh"])
def test_a_traditional_cantonese_ad_through_the_list_steps_is_rejected(lang):
    """The clean stage's own path (pipeline/clean/lists_step.py): the traditional page is folded to the
    simplified lists' characters, then checked with the list of its language."""
    from pipeline.clean.lists_step import ListSteps
    from pipeline.clean.settings import CleanConfig

    steps = ListSteps(CleanConfig(languages=None))
    row = {"text": AD_YUE}
    assert steps.before_rules(row, lang, None) is None
    assert row["zh_script"] == "traditional" and row["safety_gambling"] > 10
    assert steps.safety_reason(row, lang) == "safety_gambling"


def test_a_config_unpickled_per_task_reuses_the_built_lists():
    """Every task of the clean stage unpickles its own copy of the config: an equal copy gets the steps (URL lists,
    safety automata) built for the first, a changed one its own."""
    import pickle

    from pipeline.clean.lists_step import ListSteps
    from pipeline.clean.settings import CleanConfig

    cfg = CleanConfig(languages=None)
    steps = ListSteps.of(cfg)
    assert ListSteps.of(pickle.loads(pickle.dumps(cfg))) is steps
    other = pickle.loads(pickle.dumps(cfg))
    other.safety.enabled = not cfg.safety.enabled
    assert ListSteps.of(other) is not steps and (ListSteps.of(other).safety is None) == cfg.safety.enabled


def test_every_chinese_language_uses_the_chinese_lists():
    from pipeline.clean.safety import list_language
    from pipeline.clean.script import is_chinese

    for lang in ("zh", "yue", "wuu"):
        assert is_chinese(lang) and list_language(lang) == "zh"
    assert list_language("en") == "en" and list_language(None) == ""


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
    text = "大家都在喊某某口号。" * 3        # 3 matches, counted per 500 characters: 6 per 1,000, over the 2.5 default
    cfg = SafetyConfig(lists={"zh": [str(f)]}, reject=["politics"], thresholds={"zh": {"politics": 0.5}})
    safety = Safety(cfg)
    assert safety.reason(safety.signals(text, "zh"), "zh") == "safety_politics"
    # the same list with the default categories: the density is measured, but politics never rejects by default
    default = Safety(SafetyConfig(lists={"zh": [str(f)]}))
    signals = default.signals(text, "zh")
    assert signals["safety_politics"] > builtin_threshold("zh", "politics")
    assert default.reason(signals, "zh") is None


def builtin_threshold(lang: str, category: str) -> float:
    from pipeline.clean.safety import builtin_thresholds
    table = builtin_thresholds()
    return {**table["*"], **table.get(lang, {})}[category]


def test_no_builtin_list_holds_a_policy_category():
    """Politics is a user's own list, never a built-in one (its threshold row exists only for such a list)."""
    from pipeline.clean.safety import builtin_languages

    for lang in builtin_languages():
        assert "politics" not in {c for c, _ in read_list(builtin(f"safety/{lang}.tsv"))}, lang


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
    """A copy of the real zh list with its real pinned checksum is read; the same copy with one byte changed
    (one term's letter) is refused."""
    from pipeline.clean import lists

    real = builtin("safety/zh.tsv")
    copy = tmp_path / "lists"
    (copy / "safety").mkdir(parents=True)
    data = bytearray(real.read_bytes())
    (copy / "safety" / "zh.tsv").write_bytes(bytes(data))
    (copy / "CHECKSUMS").write_text(f"{lists.pinned()['safety/zh.tsv']}  safety/zh.tsv\n", encoding="utf-8")
    monkeypatch.setattr(lists, "LISTS_DIR", copy)
    monkeypatch.setattr(lists, "CHECKSUMS", copy / "CHECKSUMS")
    lists.pinned.cache_clear()
    lists.builtin.cache_clear()
    try:
        assert lists.builtin("safety/zh.tsv") == copy / "safety" / "zh.tsv"     # unchanged: accepted
        lists.builtin.cache_clear()
        i = data.index(b"porn\t") + len(b"porn\t")     # the first byte of a real term, still a valid line after
        data[i] = ord("x") if data[i] != ord("x") else ord("y")
        (copy / "safety" / "zh.tsv").write_bytes(bytes(data))
        with pytest.raises(ListError, match="differs from the pinned"):
            lists.builtin("safety/zh.tsv")
    finally:
        lists.pinned.cache_clear()
        lists.builtin.cache_clear()
