"""Page chrome lines (pipeline/clean/boilerplate.py), per language: what each pattern removes, and that no
line of real prose or of an article's ground-truth body is removed. Plain Python."""
import gzip
import json

import pytest

from conftest import SHARED_DATA, SHARED_SKIP
from pipeline.clean.boilerplate import boilerplate_kind, clean_lines
from pipeline.clean.normalize import normalize_text

DATA = SHARED_DATA


@pytest.mark.parametrize("line, kind", [
    ("Please enable JavaScript to view the comments powered by Disqus.", "javascript_notice"),
    ("JavaScript is disabled in your browser.", "javascript_notice"),
    ("Your browser does not support the video tag.", "browser_support"),
    ("This website uses cookies to improve your experience.", "cookie_notice"),
    ("We use cookies to ensure that we give you the best experience on our website.", "cookie_notice"),
    ("Accept all cookies", "cookie_notice"),
    ("Cookie Policy", "cookie_notice"),
    ("By continuing to use this site, you agree to our use of cookies.", "consent_notice"),
    ("Share | Tweet | Email", "share_buttons"),
    ("Facebook Twitter Pinterest WhatsApp", "share_buttons"),
    ("0 shares", "share_buttons"),
    ("Skip to content", "skip_link"),
    ("Skip to main navigation", "skip_link"),
    ("Read more »", "read_more"),
    ("Continue reading →", "read_more"),
    ("© 2023 Company. All rights reserved.", "copyright"),
    ("Copyright 2019-2023 Acme Inc", "copyright"),
    ("All Rights Reserved.", "copyright"),
    ("Log in | Sign up", "site_chrome"),
    ("Back to top", "site_chrome"),
    ("Advertisement", "site_chrome"),
    ("Subscribe to our newsletter!", "newsletter_follow"),
    ("Follow us on Twitter", "newsletter_follow"),
])
def test_boilerplate_lines(line, kind):
    assert boilerplate_kind(line) == kind


@pytest.mark.parametrize("line", [
    "The court ruled that the website uses cookies to track visitors without their consent.",
    "JavaScript is a programming language that was first released in 1995.",
    "Read more about the history of the city in the archive, which opened last year.",
    "Home is where the heart is, as the saying goes.",
    "Share prices fell sharply on Tuesday after the announcement.",
    "(c) the applicant shall provide two forms of identification.",
    "Copyright law in the United States protects original works of authorship.",
    "Email remains the most common way for customers to reach the support team.",
    "We use cookie cutters to shape the dough before baking.",
    "Lorem ipsum dolor sit amet.",  # a document-level signal, not a line rule
    "",
])
def test_prose_lines_kept(line):
    assert boilerplate_kind(line) is None


def test_clean_lines_counts_and_collapses():
    text = "Skip to content\n\nTitle of the story\n\nShare | Tweet\n\nBody text here.\n\n© 2023 Acme"
    out, n = clean_lines(text)
    assert n == 3
    assert out == "Title of the story\n\nBody text here."


def test_clean_lines_can_be_turned_off():
    class Cfg:
        remove_boilerplate_lines = False
    assert clean_lines("Skip to content\nx", Cfg()) == ("Skip to content\nx", 0)


def test_clean_lines_keeps_extracted_articles():
    """Ground-truth article bodies (AEB) and trafilatura's must-keep snippets pass nearly unchanged."""
    aeb = DATA / "extraction" / "aeb" / "ground-truth.json"
    evald = DATA / "extraction" / "trafilatura_eval" / "evaldata.json"
    if not aeb.is_file() or not evald.is_file():
        pytest.skip(f"{SHARED_SKIP}: {DATA / 'extraction'}")
    lines = removed = 0
    for v in json.loads(aeb.read_text()).values():
        body = normalize_text(v["articleBody"])
        lines += body.count("\n") + 1
        removed += clean_lines(body)[1]
    print(f"\nAEB article bodies: {removed} of {lines} lines removed")
    assert removed <= 0.002 * lines
    must_keep = [s for v in json.loads(evald.read_text()).values() for s in v.get("with", [])]
    assert must_keep
    wrongly = [s for s in must_keep if boilerplate_kind(s)]
    assert wrongly == []


# Chinese page chrome: lines of real news, government, forum and blog pages (bench/chinese_web.py's set).
@pytest.mark.parametrize("line, kind", [
    ("建议以IE8.0以上版本浏览器浏览本页面京ICP备11039383号-6京 公网安备11010202000010", "icp_record"),
    ("京ＩＣＰ备１１０３９３８３号", "icp_record"),                       # full-width, folded to match
    ("世纪天成 | 上海邮通科技有限公司 版权所有 | 不良信息举报电话：021-34144567 | 全国文化市场统一举报电话：12318",
     "copyright_zh"),
    ("制作单位：新华网股份有限公司河北分公司 版权所有：新华网股份有限公司", "copyright_zh"),
    ("上一篇：专项整治电动车违法行为", "prev_next"),
    ("下一篇", "prev_next"),
    ("首页 上一页 1 2 3 下一页 尾页", "prev_next"),
    ("微信扫一扫", "scan_follow"),
    ("关注该公众号", "scan_follow"),
    ("更多猛料！欢迎扫描左方二维码关注新浪新闻官方微信（xinlang-xinwen）", "scan_follow"),
    ("点击右上角微信好友", "share_zh"),
    ("朋友圈", "share_zh"),
    ("请使用浏览器分享功能进行分享", "share_zh"),
    ("展开全文", "expand_more"),
    ("加载更多新闻", "expand_more"),
    ("更多回答", "expand_more"),
    ("责任编辑：支全明 SF099", "editor"),
    ("（责任编辑：周雁）", "editor"),
    ("责编|陈梦莹", "editor"),
    ("来源：无锡交警", "source_date"),
    ("2019-08-13 14:07来源：澎湃新闻·澎湃号·政务", "source_date"),
    ("发布时间：2024年05月05日 | 字体放大 | 字体缩小", "source_date"),
    ("| 来源: \\| 发布时间: 2018-05-17 \\| 浏览次数: 2168 |", "source_date"),
    ("您所在的位置：", "breadcrumb"),
    ("| 现在位置： 首页 >> 东区新闻 >> 正文 |", "breadcrumb"),
    ("网友评论仅供其表达个人看法，并不表明网易立场。", "comment_notice"),
    ("违法和不良信息举报电话：010-62675637", "report_contact"),
    ("为您推荐", "related_links"),
    ("推荐阅读：绥德交警：8月1日起，专项整治电动车、二轮车、三轮车违法行为", "related_links"),
    ("添加收藏夹 | 设为首页 | 关于我们", "site_menu_zh"),
    ("广告", "site_menu_zh"),
])
def test_chinese_chrome_lines(line, kind):
    assert boilerplate_kind(line) == kind


@pytest.mark.parametrize("line", [
    # lines of real pages and prose that hold a gate word and are text, not chrome
    "6.微信扫码登录，无需绑定手机号，不会涉及推广短信等",                 # a forum post's list item
    "在 下一页 和 之后的页面 中，你将学习如何修复这段代码，而不违反规则。修复代码总是值得的！",  # react.dev zh
    "下一节",                                                          # a heading of documentation
    "注册",
    "第九条 军官的来源：",                                              # a law
    "第十条 对举报恐怖活动或者协助防范、制止恐怖活动有突出贡献的单位和个人，按照国家有关规定给予表彰、奖励。",
    "用手机扫一扫就能支付。",
    "她把照片发到了朋友圈，很多人点了赞。",
    "登录GitHub",
])
def test_chinese_text_lines_kept(line):
    assert boilerplate_kind(line) is None


def test_no_line_of_reference_prose_is_chrome():
    """Line precision on ../shared/data/prose (both languages, every kind, both halves): no line removed."""
    removed, lines = [], 0
    files = sorted(DATA.glob("prose/*/*/*.jsonl.gz"))
    if not files:
        pytest.skip(f"{SHARED_SKIP}: {DATA / 'prose'}")
    for f in files:
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for doc in fh:
                for line in normalize_text(json.loads(doc)["text"]).split("\n"):
                    lines += bool(line.strip())
                    if boilerplate_kind(line):
                        removed.append(line)
    assert lines > 30_000 and removed == []


def test_a_page_without_chinese_never_tries_the_chinese_table():
    text = "版权所有"  # matched alone ...
    assert clean_lines(text)[1] == 1
    assert boilerplate_kind(text, han=False) is None   # ... and skipped when the page has no Chinese
