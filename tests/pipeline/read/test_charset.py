"""bytes -> str for HTML: declared charsets, UTF-8, detection, binary refusal."""
import codecs
import zlib

import pytest

from pipeline.read.charset import decode_html, looks_binary, normalize_charset

FRENCH = ("<html><head><title>Nouvelles</title></head><body><div class='main'>"
          "<h1>Un été à Paris</h1><p>Le café était très agréable, à côté de la forêt. "
          "Les élèves ont reçu leurs diplômes après une année difficile.</p>"
          "<p>Ça coûte cher, mais c’est bien. «Œuvre» citée.</p></div></body></html>")
JAPANESE = ("<html><body><h1>東京の天気</h1><p>今日は晴れです。明日は雨が降るかもしれません。"
            "週末には気温が下がる見込みです。</p><p>日本語のテキストを正しく読めるかどうかを確認します。"
            "</p></body></html>")
CHINESE = ("<html><body><h1>北京新闻</h1><p>这是一个中文网页的测试文本。今天北京的天气很好，"
           "我们去公园散步吧。</p><p>经济发展和社会进步是人们关心的话题。</p></body></html>")
RUSSIAN = ("<html><body><h1>Новости Москвы</h1><p>Это тестовый текст на русском языке. "
           "Москва - столица России, крупнейший город страны.</p><p>Сегодня в городе "
           "солнечно и тепло, вечером ожидается небольшой дождь.</p></body></html>")


def _with_meta(html: str, charset: str, http_equiv: bool = False) -> str:
    meta = (f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">'
            if http_equiv else f'<meta charset="{charset}">')
    return html.replace("<html>", f"<html><head>{meta}</head>", 1)


def test_utf8():
    text, enc = decode_html(FRENCH.encode("utf-8"), "text/html")
    assert text == FRENCH and enc == "utf-8"


def test_bom():
    text, enc = decode_html(codecs.BOM_UTF8 + FRENCH.encode(), "text/html; charset=iso-8859-1")
    assert text == FRENCH and enc == "utf-8"
    text, enc = decode_html(codecs.BOM_UTF16_LE + FRENCH.encode("utf-16-le"), None)
    assert text == FRENCH


def test_cp1252_without_any_label():
    text, enc = decode_html(FRENCH.encode("cp1252"), "text/html")
    assert text == FRENCH and enc == "cp1252"


def test_latin1_label_decodes_as_cp1252():
    data = FRENCH.encode("cp1252")  # “ ” ’ « » Œ exist in cp1252 only, not in latin-1
    text, enc = decode_html(data, "text/html; charset=ISO-8859-1")
    assert text == FRENCH and enc == "cp1252"


def test_wrong_header_charset_is_still_readable():
    latin = FRENCH.replace("’", "'").replace("Œ", "Oe")
    text, _ = decode_html(latin.encode("latin-1"), "text/html; charset=utf-8")
    assert "Le café était très agréable" in text and "\ufffd" not in text


def test_utf8_page_labelled_latin1_reads_as_utf8():
    text, enc = decode_html(FRENCH.encode("utf-8"), "text/html; charset=iso-8859-1")
    assert text == FRENCH and enc == "utf-8"


@pytest.mark.parametrize("html,codec,label", [
    (JAPANESE, "shift_jis", "Shift_JIS"),
    (CHINESE, "gbk", "GB2312"),
    (RUSSIAN, "koi8_r", "KOI8-R"),
    (RUSSIAN, "cp1251", "windows-1251"),
])
@pytest.mark.parametrize("how", ["meta", "http-equiv", "header", "none"])
def test_legacy_encodings(html, codec, label, how):
    page = {"meta": _with_meta(html, label), "http-equiv": _with_meta(html, label, True)}.get(how, html)
    ctype = f"text/html; charset={label}" if how == "header" else "text/html"
    text, enc = decode_html(page.encode(codec), ctype)
    assert text == page, (how, enc)


def test_unknown_label_falls_through():
    text, enc = decode_html(_with_meta(RUSSIAN, "x-no-such-charset").encode("cp1251"),
                            "text/html; charset=bogus")
    assert "Новости Москвы" in text and enc == "cp1251"


def test_non_text_codec_labels_are_refused():
    assert normalize_charset("base64") is None
    assert normalize_charset("utf-7") is None
    assert normalize_charset("rot13") is None
    assert normalize_charset("latin1") == "cp1252"
    assert normalize_charset("GB2312") == "gb18030"
    assert normalize_charset(" 'UTF8' ") == "utf-8"
    assert decode_html(b"<p>plain ascii</p>", "text/html; charset=base64") == ("<p>plain ascii</p>",
                                                                               "utf-8")


@pytest.mark.parametrize("payload", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(300),
    b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)),
    b"GIF89a\x01\x00\x01\x00\x80\x00\x00",
    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n",
    zlib.compress(FRENCH.encode() * 10),
    bytes(range(256)) * 8,
])
def test_binary_is_refused(payload):
    assert looks_binary(payload)
    assert decode_html(payload, "text/html") is None


def test_high_bytes_noise_is_undecodable():
    assert decode_html(bytes(range(128, 256)) * 40, "text/html") is None


def test_empty_and_large():
    assert decode_html(b"", None) == ("", "utf-8")
    big = (RUSSIAN * 2000).encode("cp1251")  # ~700 KB: detection only looks at a prefix
    text, enc = decode_html(big, None)
    assert enc == "cp1251" and text == RUSSIAN * 2000
