import unicodedata

import pytest

from pipeline.clean.normalize import fold_fullwidth, normalize_text


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


def test_fullwidth_fold_keeps_chinese_punctuation():
    text = "ＧＰＵ训练用了１２８张卡，准确率９５．２％！（见表３）「结论」：『好』、《报告》。Ｐ＜０．０５"
    assert fold_fullwidth(text) == "GPU训练用了128张卡，准确率95.2%！（见表3）「结论」：『好』、《报告》。P<0.05"
    assert fold_fullwidth("plain ascii, 普通中文。") == "plain ascii, 普通中文。"
    every = "".join(map(chr, range(0xFF01, 0xFF5F)))
    kept = {c for c in fold_fullwidth(every) if ord(c) > 0x7E}
    assert kept == set("，！？；：（）")                        # the marks Chinese writes full-width stay
    assert fold_fullwidth(fold_fullwidth(text)) == fold_fullwidth(text)
