"""Page-structure spam signals (pipeline/clean/spam_signals.py) and the brand lexicon (lists/safety/brands/zh.tsv)."""
from pathlib import Path

from pipeline.clean import spam_signals as ss
from pipeline.clean.safety import Matcher, read_list

BRANDS = Path(__file__).resolve().parents[3] / "pipeline/clean/lists/safety/brands/zh.tsv"

ARTICLE = ("铜鼓县一制药公司发生爆炸事故致1死2伤\n" + "据江西省应急管理厅消息，铜鼓县一家制药公司发生爆炸事故，造成1人死亡、2人受伤。"
           "事故发生后，铜鼓县立即组织力量开展救援，伤者已送医院救治，事故原因正在调查中。" * 3)


def test_signals_of_an_ordinary_article():
    s = ss.signals(ARTICLE, "https://www.example.gov.cn/news/1.html")
    assert set(s) == set(ss.SIGNALS)
    assert s["spam_title_overlap"] > 0.5
    assert s["spam_host"] == 0.0 and s["spam_brand_pattern"] == 0.0 and s["spam_link_list"] == 0.0
    assert ss.reason(s) is None


def test_title_replaced_by_a_brand_scores_low():
    page = "【欧宝体育app】官网入口\n" + ARTICLE.split("\n", 1)[1]
    assert ss.title_overlap(page) < 0.15


def test_generated_hosts():
    for url in ("http://335.3355703.com/news/2022/0314/61491.html", "http://bdf.1422058.cn/09da0/52149.html",
                "http://035.psb556.com/24/i/u_1090813/article.html", "https://474441.com/a/x/"):
        assert ss.host_generated(url) == 1.0, url
    for url in ("https://3g.163.com/dy/article/x.html", "http://tech.sina.com.cn/x", None, "http://127.0.0.1/x",
                "https://www.gov.cn/"):
        assert ss.host_generated(url) == 0.0, url


def test_brand_pattern_counts_distinct_matches():
    assert ss.brand_pattern("ng体育官网app下载 利博体育平台登录入口 安博体育app官网登录入口") == 3.0
    assert ss.brand_pattern("澳门威尼斯人度假村酒店位于路氹金光大道。") == 0.0


def test_link_list_page():
    page = "\n".join(f"2020-03-{i:02d} admin 香港最快开奖{i}" for i in range(1, 20))
    assert ss.link_list(page) > 0.85
    assert ss.link_list(ARTICLE) == 0.0


def test_rules_fire_only_when_named():
    s = ss.signals("x", "http://335.3355703.com/a.html")
    assert ss.reason(s) is None                    # no structure rule rejects by default
    assert ss.reason(s, rules=["host"]) == "spam_host"
    assert ss.fired(s, ["host"], {"host": 2.0}) == []


def test_brand_lexicon_reads_and_matches():
    entries = read_list(BRANDS)
    assert {c for c, _ in entries} <= {"gambling", "porn", "ads"}
    m = Matcher(entries)
    text = "王者威尼斯人现金网网址：宜春市铜鼓县江西佰利达制药有限公司发生一起爆炸事故。吕氏贵宾会组织开展核酸检测。"
    terms = {t for _, t in m.matches(text)}
    assert {"王者威尼斯人", "吕氏贵宾会"} <= terms
    # ordinary words around the brands are not terms
    assert not list(m.matches("威尼斯人在中世纪建立了共和国；金沙江流经云南；银河系有上千亿颗恒星。"))


def test_brand_lexicon_is_built_in_for_zh_and_ads_false_positives_dropped():
    from pipeline.clean.list_settings import SafetyConfig
    from pipeline.clean.safety import Safety, builtin_languages

    assert builtin_languages().count("zh") == 1
    s = Safety(SafetyConfig())
    assert any(f.name == "zh.tsv" and f.parent.name == "brands" for f in s.lists.files("zh"))
    spam = "王者威尼斯人现金网网址：" + ARTICLE + "王者威尼斯人官网，吕氏贵宾会，美狮贵宾会。"
    assert s.reason(s.signals(spam, "zh"), "zh") == "safety_gambling"
    ordinary = "本公司招聘客服人员，淘宝店铺招商中。证监会发布通知。" + ARTICLE
    assert s.reason(s.signals(ordinary, "zh"), "zh") is None


def test_latin_brand_next_to_han_text_counts():
    m = Matcher([("gambling", "bet365"), ("porn", "anal")])
    assert [t for _, t in m.matches("bet365亚洲体育官网，bet365。")] == ["bet365", "bet365"]
    assert [t for _, t in m.matches("analysis 分析analysis xbet365 bet3650")] == []


def test_settings_name_the_same_rules():
    from pipeline.clean.list_settings import SPAM_RULES
    assert tuple(ss.RULES) == SPAM_RULES


def test_clean_stage_columns_off_by_default_and_a_named_rule_rejects():
    from pipeline.clean.list_settings import SpamSignalsConfig
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch

    text = ("The council met on Tuesday to discuss the new library, which will open next spring in the old market "
            "hall. Residents asked whether the reading rooms would stay open in the evening, and the mayor said that "
            "the budget allows for it. Work on the roof has already started, and the builders expect to finish the "
            "windows before the winter. A public meeting about the children's section is planned for next month.\n")
    off = clean_batch([text], None, CleanConfig(languages=None), ["http://335.3355703.com/a.html"])[0]
    assert all(off[s] is None for s in ss.SIGNALS)
    on = clean_batch([text], None, CleanConfig(languages=None, spam=SpamSignalsConfig(enabled=True)),
                     ["http://335.3355703.com/a.html"])[0]
    assert on["spam_host"] == 1.0 and on["reason"] != "spam_host"
    rej = clean_batch([text], None, CleanConfig(languages=None, spam=SpamSignalsConfig(reject=["host"])),
                      ["http://335.3355703.com/a.html"])[0]
    assert rej["reason"] == "spam_host"
    assert off["reason"] is None


def test_bad_spam_settings_are_config_errors_naming_the_key():
    import pytest

    from pipeline.config import ConfigError, parse_config
    base = {"sources": {"t": {"format": "text", "paths": ["nothing-matches-*.txt"]}}}
    for spam, key in (({"reject": ["weather"]}, r"clean\.spam\.reject"), ({"thresholds": {"hosts": 1}},
                                                                         r"clean\.spam\.thresholds: hosts"),
                      ({"thresholds": {"host": "high"}}, r"clean\.spam\.thresholds: host")):
        with pytest.raises(ConfigError, match=key):
            parse_config({**base, "clean": {"spam": spam}}, "c.yaml")


def test_refresh_drops_the_pruned_terms(tmp_path, monkeypatch):
    """refresh_lists safety drops the terms of lists/safety/prune/<lang>.tsv with that reason (a refresh from
    upstream does not bring the ads false positives back)."""
    from pipeline.clean import refresh_lists

    out = tmp_path / "lists"
    (out / "safety" / "prune").mkdir(parents=True)
    (out / "safety" / "prune" / "zh.tsv").write_text("ads\t招聘\n", encoding="utf-8")
    konsheng = tmp_path / "k" / "Vocabulary"
    konsheng.mkdir(parents=True)
    for name in ("色情词库", "色情类型", "涉枪涉爆"):
        (konsheng / f"{name}.txt").write_text("成人影院\n", encoding="utf-8")
    (konsheng / "广告类型.txt").write_text("招聘\n代开发票\n", encoding="utf-8")
    houbb = tmp_path / "houbb.txt"
    houbb.write_text("百家乐\n", encoding="utf-8")
    ldnoobw = tmp_path / "ldnoobw"
    ldnoobw.mkdir()
    (ldnoobw / "zh.txt").write_text("操你\n", encoding="utf-8")
    monkeypatch.setattr(refresh_lists, "LISTS_DIR", out)
    monkeypatch.setattr(refresh_lists, "write_checksums", lambda: None)
    refresh_lists.refresh_safety(tmp_path / "k", houbb, ldnoobw, [])
    text = (out / "safety" / "zh.tsv").read_text(encoding="utf-8")
    assert "# dropped (on ordinary web pages, lists/safety/prune/zh.tsv): ads\t招聘" in text
    assert "\nads\t代开发票\n" in text


def test_link_farm_signals():
    farm = "\n".join(f"5g.example-farm.cn{brand}{i}" for i, brand in
                     enumerate(["亚星官网入口", "欧博注册平台", "亚星代理登录", "欧博手机版下载"] * 5))
    assert ss.repeated_prefix(farm) > 0.9 and ss.host_lines(farm) > 0.9
    news = "\n".join(f"第{i}条新闻：本市今天召开会议，讨论了交通建设的第{i}项安排。" for i in range(15))
    assert ss.host_lines(news) == 0.0
    assert ss.repeated_prefix(ARTICLE) == 0.0           # under 12 lines: not judged
