"""Page chrome at line level, per language: whole lines that a page repeats around its text (copyright and
licence-number footers, share and follow prompts, navigation, cookie banners) and that no one writes in prose.

A line is removed only when a pattern matches the WHOLE line (stripped, lower-cased); lines over
MAX_LINE_CHARS are never touched. Each language's table is a list of (name, gates, pattern, may_end_sentence):
a pattern is only tried on a line holding one of its gate substrings (patterns without gates are anchored at
the line start and fail fast), and a line that ends a sentence (。！？. after closing marks) is never chrome
unless the pattern says it may be (a footer "版权所有，侵权必究。" may; "她把照片发到了朋友圈。" is prose).

The Chinese table comes first and is tried only on lines that hold a Chinese character, so a page without
any pays one scan for the whole text. Every table is tried on every document, whatever its language: the
clean stage removes chrome before it identifies the language, and an English cookie banner on a German
page is chrome too.

How the Chinese patterns were chosen (docs/chinese.md, "Page chrome"): the kinds the issue names (版权所有,
ICP备案号, 公网安备, 上一篇/下一篇, 扫一扫/扫码关注, 展开全文, 责任编辑, 来源：…) plus the chrome lines seen on the
development half of real Chinese news, government, forum and blog pages (bench/chinese_web.py), each
written as narrowly as its lines allow; every pattern matches no line of the reference prose
(../shared/data/prose, both languages; tests/pipeline/clean/test_boilerplate.py measures it).
"""
from __future__ import annotations

import re

from pipeline.clean.heuristics import ends_sentence
from pipeline.clean.normalize import fold_fullwidth

MAX_LINE_CHARS = 250
MAX_ZH_LINE_CHARS = 120  # Chinese chrome is short: a footer of several items fits in 120 characters

# --- Chinese ---------------------------------------------------------------------------------------------
_ZSEP = r"[\s|｜丨/／·•・\-–—>＞»›、,，:：;；]*"   # separators between chrome items
_COLON = r"\s*[:：|｜丨]\s*"                     # field: value
_OPEN, _CLOSE = r"[（(【\[]?\s*", r"\s*[）)】\]]?"
_EDITORS = r"(?:责任编辑|责编|编辑|校对|审核|审校|监制|编审|终审|美编|值班编辑)"
_SOURCE = r"(?:(?:信息|文章|本文|稿件|图片|新闻|消息|内容)?来源|发布(?:时间|日期)|更新(?:时间|日期)|浏览(?:次数|量)|字号)"
_DATE = r"(?:\d{4}[-年/.]\d{1,2}[-月/.]\d{1,2}日?(?:\s*\d{1,2}:\d{2}(?::\d{2})?)?\s*)"
_MENU = (r"(?:首页|网站首页|登录|注册|登录/注册|退出|返回顶部|回到顶部|返回首页|返回|打印|打印本页|关闭|关闭窗口|收藏|"
         r"收藏本页|加入收藏|添加收藏夹|设为首页|关于我们|联系我们|网站地图|意见反馈|举报|分享|点赞|转发|广告|"
         r"字体放大|字体缩小|尾页|末页|上一页|下一页|\[?[大中小]\]?)")
_MENU_ALONE = (r"(?:返回顶部|回到顶部|返回首页|设为首页|加入收藏|添加收藏夹|收藏本页|打印本页|关闭窗口|字体放大|字体缩小|"
               r"登录/注册|网站地图|联系我们|关于我们|意见反馈|广告|举报)")
_RELATED = (r"(?:为您推荐|相关新闻|相关阅读|相关文章|相关推荐|推荐阅读|延伸阅读|热门推荐|精彩推荐|猜你喜欢|热点新闻|"
            r"推荐新闻|热门文章|最新文章|点击排行|跟贴排行|热门评论|网友评论|更多精彩)")

ZH_PATTERNS: list[tuple[str, tuple[str, ...], str, bool]] = [
    # Licence numbers of the footer: 京ICP备12345678号-1, ICP证：京B2-20090059, 京公网安备 11010502000001号.
    ("icp_record", ("icp", "网安备"),
     r".{0,100}(?:icp\s*(?:备|证|许可证?)\s*[:：]?\s*[\u4e00-\u9fff]?[a-z]?\d?-?\d{3,}|公网安备\s*\d{6,}).{0,100}", True),
    # 版权所有 footers: "世纪天成 | 上海邮通科技有限公司 版权所有 | 不良信息举报电话：…", "本文版权归原作者所有".
    ("copyright_zh", ("版权所有", "版权归", "保留所有权利"),
     r".{0,100}(?:版权所有|版权归.{1,20}所有|保留所有权利).{0,100}", True),
    # Previous / next links: "上一篇：标题", "下一篇", "上一页 下一页", "< 上一页 1 2 3 下一页 >". A lone 下一节 or
    # 下一页 may be a heading of documentation prose: only 上一篇/下一篇 stand alone.
    ("prev_next", ("上一", "下一"),
     r"[<《«‹]?\s*[上下]一篇[>》»›]?|[<《«‹]?\s*[上下]一(?:篇|页|条|章|节|张|个)[>》»›]?\s*[:：]\s*.{0,80}"
     r"|(?=.*[上下]一(?:篇|页|条|章|节|张|个))(?:(?:首页|尾页|末页|[上下]一(?:篇|页|条|章|节|张|个)|\d{1,3}|[<>《》«»‹›])"
     + _ZSEP + r"){2,}", False),
    # Scan and follow prompts: "微信扫一扫", "扫码关注", "关注该公众号", "更多猛料！欢迎扫描左方二维码关注新浪新闻官方
    # 微信", "扫描下方二维码解锁更多技能"; a scan that leads elsewhere ("微信扫码登录，无需绑定手机号") is not chrome.
    ("scan_follow", ("扫一扫", "扫码", "二维码", "公众号", "关注我们", "关注本站"),
     r".{0,20}(?:扫一扫|扫码|(?:扫描|识别|长按).{0,6}二维码).{0,20}(?:关注|订阅|下载|解锁|公众号|加入|添加|微信|app).{0,30}"
     r"|(?:微信|手机)?(?:扫一扫|扫码)(?:分享|关注|阅读|下载)?"
     r"|关注(?:我们|本站|该公众号|本公众号|公众号|官方微信).{0,20}", False),
    # Share prompts: "分享到：", "分享让更多人看到", "点击右上角微信好友", "朋友圈", "请使用浏览器分享功能进行分享".
    ("share_zh", ("分享", "朋友圈", "微信好友"),
     r"(?:分享(?:到|至|给)?.{0,20}|(?:点击|请使用).{0,20}(?:分享|微信好友).{0,30}|(?:微信)?(?:朋友圈|微信好友))", False),
    # Expand / more buttons: "展开全文", "阅读全文", "查看更多", "加载更多新闻", "更多回答", "收起".
    ("expand_more", ("展开", "全文", "更多", "收起", "全部"),
     r"(?:点击)?(?:展开(?:全文|阅读全文|更多)?|(?:阅读|查看)(?:全文|更多|全部)|加载更多.{0,6}|更多(?:回答|评论|内容)?|"
     r"收起(?:全文)?|显示全部)[\s>»›→…。.!！]*", False),
    # Editors: "责任编辑：张三", "（责任编辑：李四 SF099）", "责编|陈梦莹", "编辑：王五 审核：赵六".
    ("editor", ("编", "校对", "审核", "审校", "监制"),
     _OPEN + r"(?:" + _EDITORS + _COLON + r"[^：:|｜]{0,24}?" + _ZSEP + r")+" + _CLOSE, False),
    # Source and date lines: "来源：新华社", "2019-08-13 14:07来源：澎湃新闻", "发布时间：2024年05月05日 | 字体放大 |
    # 字体缩小", "（来源：上海证券报）", "| 来源: | 发布时间: 2018-05-17 | 浏览次数: |".
    ("source_date", ("来源", "发布", "更新", "浏览", "字号"),
     r"[|｜\s]*" + _OPEN + _DATE + r"?" + _SOURCE + _COLON + r".{0,80}", False),
    # Breadcrumbs: "您所在的位置：首页 > 快讯 > 公司", "当前位置：首页 > 新闻动态", "首页 >> 东区新闻 >> 正文".
    ("breadcrumb", ("位置", "首页"),
     r"[|｜\s]*(?:您?(?:当前|现在|所在)?的?位置\s*[:：].{0,80}|首页\s*(?:[>＞»›]+\s*[^>＞»›]{1,16}\s*)+)", False),
    # Comment disclaimers: "网友评论仅供其表达个人看法，并不表明网易立场。"
    ("comment_notice", ("评论仅供",),
     r".{0,10}评论仅供.{0,40}", True),
    # Report lines of the footer: "违法和不良信息举报电话：010-62675637", "举报邮箱：jubao@vip.sina.com".
    ("report_contact", ("举报",),
     r".{0,20}举报(?:电话|邮箱|中心|热线|专区|受理)" + _COLON + r".{0,80}", False),
    # Headings of link lists: "为您推荐", "相关新闻：", "推荐阅读：绥德交警：8月1日起…", "点击排行".
    ("related_links", ("推荐", "相关", "阅读", "热门", "热点", "喜欢", "排行", "评论", "精彩", "最新"),
     _RELATED + r"(?:\s*[:：].{0,60})?", False),
    # Site menus: "添加收藏夹 | 设为首页 | 关于我们", "登录 | 注册", "首页 >"; alone, only the items no prose line
    # is made of ("返回顶部", "广告"; a lone 注册 or 返回 may be a heading of documentation).
    ("site_menu_zh", ("首页", "登录", "注册", "返回", "打印", "关闭", "收藏", "关于我们", "联系我们", "网站地图",
                      "意见反馈", "举报", "分享", "点赞", "转发", "广告", "字体", "尾页", "末页"),
     r"(?:" + _MENU + _ZSEP + r"){2,}|" + _MENU_ALONE + _ZSEP, False),
]

# --- English (and every space-separated language: what web chrome says in English) ------------------------
_END = r"[\s.!:;?»›>→…|·•\-–—]*"  # trailing punctuation, arrows and separators a button label may carry
_SEP = r"\s*(?:[|•·/,:;]|\s-\s)?\s*"  # separators between navigation crumbs
_SOCIAL = (r"(?:share(?: this(?: article| post| page| story)?| on (?:facebook|twitter|x|linkedin))?|tweet|"
           r"e-?mail|print|facebook|twitter|linkedin|pinterest|reddit|whatsapp|telegram|tumblr|"
           r"pin it|save|like|flipboard|copy link|comments?|\d+ (?:shares|comments))")

EN_PATTERNS: list[tuple[str, tuple[str, ...], str, bool]] = [
    # "Please enable JavaScript to view this site", "JavaScript is disabled in your browser": noscript text.
    ("javascript_notice", ("javascript",),
     r".*\b(?:enable|turn on|activate|allow)\s+javascript\b.*"
     r"|.*\bjavascript\s+(?:is\s+)?(?:disabled|required|not enabled|turned off|must be enabled)\b.*", True),
    # "Your browser does not support the video tag": media fallback text.
    ("browser_support", ("browser",),
     r".*\byour browser (?:does not|doesn't) support (?:javascript|the video tag|html5 video|iframes|the audio element)\b.*",
     True),
    # Cookie banners: "This website uses cookies ...", "We use cookies to ...", "Accept all cookies".
    ("cookie_notice", ("cookie",),
     r"(?:this|our)\s+(?:web\s?)?site\s+uses\s+cookies\b.*|we\s+use\s+cookies\b.*"
     r"|.*\baccept\s+(?:all\s+)?cookies" + _END +
     r"|(?:cookie\s+(?:policy|settings|preferences|consent)|manage\s+cookies)" + _END, True),
    # "By continuing to use this site you agree to ...": consent banners.
    ("consent_notice", ("by continuing", "by using this"),
     r"by\s+(?:continuing\s+to\s+(?:use|browse)|using)\s+this\s+(?:web\s?)?site,?\s+you\s+(?:agree|consent)\b.*", True),
    # Copyright-only lines: "© 2023 Company. All rights reserved.", "Copyright 2019-2023 Acme Inc".
    ("copyright", ("©", "(c)", "copyright", "all rights reserved"),
     r"(?:copyright\s*)?(?:©|\(c\)\s*\d{4})\s*.{0,100}|copyright\s+\d{4}\b.{0,100}"
     r"|.{0,100}\ball rights reserved" + _END, True),
    # Share/social button rows: "Share | Tweet | Email", "Facebook Twitter Pinterest", "0 shares".
    ("share_buttons", (), rf"(?:{_SOCIAL}{_SEP})+", True),
    # Accessibility skip links: "Skip to content", "Skip to main navigation".
    ("skip_link", (),
     r"skip to(?::)?\s*(?:the\s+)?(?:main\s+|page\s+)?(?:content|navigation|menu|search|footer)" + _END, True),
    # Teaser links: "Read more", "Continue reading »", "Load more", "See all".
    ("read_more", (),
     r"(?:(?:read|see|view|show|load)\s+(?:more|all|full (?:story|article))|continue reading"
     r"|click here to read more)" + _END, True),
    # Account/site chrome: "Log in", "Sign up | Register", "Back to top", "Advertisement".
    ("site_chrome", (),
     r"(?:(?:log\s?in|log\s?out|sign\s?in|sign\s?up|register|my account|subscribe|search|menu|home|"
     r"back to top|go to top|scroll to top|advertisement|advertisements|sponsored|"
     r"previous (?:post|article|page)|next (?:post|article|page)|newer posts|older posts)" + _SEP + r")+", True),
    # Newsletter/follow prompts: "Subscribe to our newsletter", "Follow us on Twitter".
    ("newsletter_follow", (),
     r"(?:(?:subscribe to|sign up for|join) our (?:newsletter|mailing list)"
     r"|follow us(?: on (?:facebook|twitter|instagram|linkedin|x|social media))?)" + _END, True),
]

# The per-language table, Chinese first. The English table runs on every line; the Chinese one on lines
# that hold a Chinese character.
BOILERPLATE_PATTERNS: dict[str, list[tuple[str, tuple[str, ...], str, bool]]] = {"zh": ZH_PATTERNS, "en": EN_PATTERNS}

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_MANY_BLANKS = re.compile(r"\n{3,}")


class _Table:
    """One language's patterns, compiled: a gate regex over all gate substrings, the gated patterns, and
    the ungated ones joined into one anchored regex."""

    def __init__(self, patterns):
        self.gated = [(name, gates, re.compile(pat), ok) for name, gates, pat, ok in patterns if gates]
        gates = [g for _, gs, _, _ in patterns for g in gs]
        self.any_gate = re.compile("|".join(map(re.escape, gates))) if gates else None
        ungated = [(name, pat, ok) for name, gates, pat, ok in patterns if not gates]
        self.anchored = re.compile("|".join(f"(?P<{n}>{p})" for n, p, _ in ungated)) if ungated else None
        self.sentence_ok = {n: ok for n, _, _, ok in patterns}

    def kind(self, s: str, sentence: bool | None) -> str | None:
        if self.anchored is not None:
            m = self.anchored.fullmatch(s)
            if m and (self.sentence_ok[m.lastgroup] or not sentence):
                return m.lastgroup
        if self.any_gate is not None and self.any_gate.search(s):
            for name, gates, pat, ok in self.gated:
                if (ok or not sentence) and any(g in s for g in gates) and pat.fullmatch(s):
                    return name
        return None


_ZH = _Table(ZH_PATTERNS)
_EN = _Table(EN_PATTERNS)
_EN_ANCHORED, _EN_GATE, _EN_GATED = _EN.anchored, _EN.any_gate, _EN.gated  # every line of every page: no lookups


def boilerplate_kind(line: str, han: bool = True) -> str | None:
    """The name of the pattern a line matches in full, or None (exposed for tests and audits). `han`
    False says the text holds no Chinese character (the Chinese table is then skipped)."""
    s = line.strip().lower()
    if not s or len(s) > MAX_LINE_CHARS:
        return None
    if han and len(s) <= MAX_ZH_LINE_CHARS and _HAN.search(s):
        z = fold_fullwidth(s)  # ＩＣＰ备 and ICP备 alike
        kind = _ZH.kind(z, ends_sentence(z))
        if kind:
            return kind
    # the English table: every pattern may match a sentence, so the test is the plain one
    m = _EN_ANCHORED.fullmatch(s)
    if m:
        return m.lastgroup
    if _EN_GATE.search(s):
        for name, gates, pat, _ in _EN_GATED:
            if any(g in s for g in gates) and pat.fullmatch(s):
                return name
    return None


def clean_lines(text: str, cfg=None) -> tuple[str, int]:
    """Drop whole boilerplate lines; returns (text, lines removed). `cfg.remove_boilerplate_lines` False
    (any object with that attribute, e.g. a CleanConfig) turns it off."""
    if cfg is not None and not getattr(cfg, "remove_boilerplate_lines", True):
        return text, 0
    kept: list[str] = []
    removed = 0
    han = not text.isascii() and _HAN.search(text) is not None  # a page without Chinese never tries its table
    for line in text.split("\n"):
        if boilerplate_kind(line, han) is None:
            kept.append(line)
        else:
            removed += 1
    if not removed:
        return text, 0
    out = _MANY_BLANKS.sub("\n\n", "\n".join(kept)).strip("\n")
    return out, removed
