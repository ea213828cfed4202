"""URL and domain blocklists (pipeline/clean/urls.py) on UT1's real lists."""
from __future__ import annotations

import gzip
import json

import pytest

from pipeline.clean.list_settings import UrlFilterConfig
from pipeline.clean.lists import ListError, builtin, read_lines
from pipeline.clean.urls import UrlFilter, adult_words, read_blocklist, split_url, url_tokens
from tests.conftest import shared


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


# Eight pages of ordinary English text under these URLs went through `make clean-dedup` (issue 41): UT1's URL
# expressions rejected all but the last as url_adult, on the single tokens breast, gay, adult, teens, tit, mature.
ORDINARY_PAGES = [
    "https://www.cancer.gov/types/breast",
    "https://www.nhs.uk/conditions/breast-cancer/",
    "https://www.bbc.co.uk/news/gay-rights-123",
    "https://www.example.edu/adult-education/",
    "https://kidshealth.org/en/teens/",
    "https://www.rspb.org.uk/birds/blue-tit/",
    "https://www.gov.uk/mature-students",
    "https://www.example.org/plain-page/",
]


@pytest.mark.parametrize("url", ORDINARY_PAGES)
def test_the_eight_ordinary_pages_of_issue_41_pass(urls, url):
    assert urls.reason(url) == (None, None)


@pytest.mark.parametrize("url", [
    "https://pornhub.example/", "https://xxx-videos.example/teen-sex", "http://freeporn.example/",
    "http://example.com/videos/teen-sex/", "http://example.com/busty-amateur-webcam", "http://milf.example/",
    "http://tube.example/%20teen%20sex", "https://hot.sex/", "http://example.adult/page",
])
def test_adult_words_still_reject(urls, url):
    assert urls.reason(url) == ("url_adult", "adult")


@pytest.mark.parametrize("url", [
    # ordinary words that hold an adult word as a substring: tokens are whole words
    "https://www.essex.gov.uk/", "https://www.sussex.ac.uk/study", "https://example.org/middlesex-hospital",
    "https://example.org/data-analysis", "https://example.org/page-title", "https://example.org/find-a-therapist",
    "https://example.org/cocktail-recipes", "https://example.org/charles-dickens", "https://example.org/assessment",
    "https://www.scunthorpe-united.example/", "https://www.cumbria.gov.uk/", "https://example.org/sextant",
    "https://www.essexshop.example/", "https://unisexstore.example/hoodies", "https://shop.example/t-shirt-xxxl",
    "https://plato.stanford.edu/entries/pornography-censorship/",
    # one soft word alone, as ordinary pages use them
    "https://example.org/adult-education", "https://example.org/breast-cancer", "https://example.org/teen",
    "https://example.org/gay-rights", "https://example.org/mature-students", "https://example.org/blue-tit",
    "https://example.org/birds/great-tits", "https://example.org/sex-education", "https://example.org/nude-painting",
    "https://example.org/hardcore-punk", "https://example.org/ford-escort", "https://example.org/magna-cum-laude",
])
def test_ordinary_words_are_no_adult_evidence(urls, url):
    assert adult_words().evidence(split_url(url)[1]) == ()
    assert urls.category(url) is None


def test_what_the_word_rule_found():
    words = adult_words()
    assert words.evidence("example.com/videos/teen-sex") == ("teen", "sex")
    assert words.evidence("example.com/teen/teens/teen") == ()          # one soft word, however often
    assert words.evidence("freeporn.example") == ("porn",)
    assert words.evidence("winsexstore.example") == ("sexstor",)
    assert words.evidence("hot.sex") == (".sex",)
    assert url_tokens("Example.com/Teen%20Sex_Videos") == ["example", "com", "teen", "sex", "videos"]


def test_url_list_entries_with_a_query_or_fragment_match(urls):
    # UT1 lists a few URLs with ?query or #fragment; split_url drops them from the URL it checks
    entries = [line for _, line in read_lines(builtin("urls/adult_urls.txt.gz")) if "#" in line or "?" in line]
    assert entries
    for e in entries:
        assert urls.category(f"http://{e}") in ("adult", "allowed"), e


def _c4_urls() -> list[str]:
    with gzip.open(shared("web_en", "c4-sample.jsonl.gz"), "rt", encoding="utf-8") as fh:
        return [json.loads(line)["url"] for line in fh if line.strip()]


def test_false_positives_on_ordinary_c4_urls(urls):
    # C4's pages are ordinary web; UT1's expressions rejected 4 of these 1,000 (gay-dating, breast-cancer-awareness,
    # a-naked-woman, gay-lifestyle). The cap is tighter than the 0.5 % asked for, which the old rule also met.
    c4 = _c4_urls()
    assert len(c4) == 1000
    hits = [u for u in c4 if urls.category(u) not in (None, "allowed")]
    assert len(hits) <= 2, hits


def test_hit_rate_of_the_word_rule_alone_on_ut1_adult_urls():
    # UT1's adult URLs are on the URL list already: this is what the words would catch where a list misses a page.
    # Measured 342/1,090 (31.4 %; UT1's expressions 346); many entries are tumblr posts or photo pages without a word.
    entries = [line for _, line in read_lines(builtin("urls/adult_urls.txt.gz"))]
    words = adult_words()
    caught = sum(words.rejects(split_url(f"http://{e}")[1]) for e in entries)
    assert caught / len(entries) >= 0.28, caught


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
