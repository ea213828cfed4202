import json
import unicodedata

import pytest

from conftest import SHARED_DATA, SHARED_SKIP
from pipeline.clean.normalize import boilerplate_kind, clean_lines, normalize_text

DATA = SHARED_DATA


@pytest.mark.parametrize("raw, expected", [
    ("a\x00b\x07c\x1bd\x7fe\x9bf", "abcdef"),             # C0, DEL, C1 controls go
    ("a\r\nb\rc\x0cd\u2028e", "a\nb\nc\nd\ne"),           # every line break becomes \n
    ("10\u00a0kg and 5\u202f%\u3000x", "10 kg and 5 % x"),  # unusual spaces become plain spaces
    ("foo\u200bbar\u00adbaz\ufeff", "foobarbaz"),         # zero-width space, soft hyphen, BOM
    ("abc\u200e\u202edef", "abcdef"),                     # bidi marks and overrides
    ("a\udc80b", "ab"),                                   # lone surrogate (cannot be UTF-8 encoded)
    ("a   b\t\tc  \t d", "a b c d"),                      # runs of blanks collapse
    ("col1\tcol2", "col1\tcol2"),                         # ... a single tab stays (tables)
    ("    x  =  1   ", "    x = 1"),                      # indentation kept, line end stripped
    ("a\n\n\n\nb", "a\n\nb"),                             # 3+ blank lines -> one blank line
    ("a\n  \n\t\n \nb", "a\n\nb"),                        # whitespace-only lines count as blank
    ("\n\n  \nhello\n\n\n", "hello"),                     # no leading/trailing blank lines
    ("", ""),
])
def test_normalize_cases(raw, expected):
    assert normalize_text(raw) == expected


def test_nfc_not_nfkc():
    assert normalize_text("cafe\u0301") == "caf\u00e9"          # decomposed -> composed
    assert normalize_text("cafe\u200b\u0301") == "caf\u00e9"    # also once a removal joins them
    for kept in ["ﬁne", "x²", "ＡＢＣ", "①", "™"]:             # NFKC would rewrite these
        assert normalize_text(kept) == kept


def test_joiners_preserved():
    family = "\U0001F468\u200d\U0001F469\u200d\U0001F467"      # ZWJ emoji sequence
    persian = "می\u200cخواهم"                                    # ZWNJ inside a Persian word
    assert normalize_text(f"{family} ok") == f"{family} ok"
    assert normalize_text(persian) == persian
    assert normalize_text("\u2764\ufe0f") == "\u2764\ufe0f"     # variation selector kept


def test_output_is_nfc_utf8_and_idempotent():
    text = "Ame\u0301lie\r\n\r\n\r\n\u00a0\u00a0said\x00 hi\udcff  there \u200b"
    once = normalize_text(text)
    assert unicodedata.is_normalized("NFC", once)
    once.encode("utf-8")
    assert normalize_text(once) == once


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
