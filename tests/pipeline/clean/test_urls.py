"""URL and domain blocklists (pipeline/clean/urls.py) on UT1's real lists."""
from __future__ import annotations

import pytest

from pipeline.clean.list_settings import UrlFilterConfig
from pipeline.clean.lists import ListError, builtin, read_lines
from pipeline.clean.urls import UrlFilter, read_blocklist, split_url


@pytest.fixture(scope="module")
def urls() -> UrlFilter:
    return UrlFilter(UrlFilterConfig())


def test_a_listed_gambling_domain_and_its_subdomains(urls):
    host = next(line for _, line in read_lines(builtin("urls/gambling_domains.txt.gz")) if "casino" in line)
    assert urls.category(f"https://{host}/promo?x=1") == "gambling"
    assert urls.category(f"http://www.{host}/") == "gambling"
    assert urls.category(f"http://games.{host}:8080/slots") == "gambling"
    assert urls.reason(f"http://{host}/")[0] == "url_gambling"


def test_adult_url_words_and_url_prefixes(urls):
    assert urls.category("http://example.com/free-porn-videos/") == "adult"
    prefix = next(line for _, line in read_lines(builtin("urls/adult_urls.txt.gz")) if "/" in line)
    assert urls.category(f"http://{prefix}/more/page.html") == "adult"


def test_ordinary_urls_pass(urls):
    for u in ["https://www.gov.cn/zhengce/2020-01/01/content_1.htm", "http://example.org/sextant-navigation",
              "https://news.example.com/2021/essex-county", None, ""]:
        assert urls.category(u) is None


def test_allow_list_wins_and_is_reported(urls):
    assert urls.category("https://en.wikipedia.org/wiki/Pornography") == "allowed"
    assert urls.reason("https://en.wikipedia.org/wiki/Pornography") == (None, "allowed")
    cfg = UrlFilterConfig(allow=["example.com"])
    assert UrlFilter(cfg).category("http://example.com/free-porn-videos/") == "allowed"


def test_split_url():
    assert split_url("HTTPS://User@WWW.Example.COM:443/A/b?q=1#x") == ("example.com", "example.com/a/b")


def test_user_blocklist_and_its_errors(tmp_path):
    f = tmp_path / "block.tsv"
    f.write_text("other\tspam.example\nadult\thttp://x.example/dir/\n", encoding="utf-8")
    uf = UrlFilter(UrlFilterConfig(files=[str(f)]))
    assert uf.category("http://a.spam.example/") == "other"
    assert uf.category("http://x.example/dir/page") == "adult"
    f.write_text("weather\tspam.example\n", encoding="utf-8")
    with pytest.raises(ListError, match=r"block\.tsv:1: unknown category 'weather'"):
        read_blocklist(f)
