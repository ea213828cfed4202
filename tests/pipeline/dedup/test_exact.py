from pipeline.dedup.exact import exact_hash, exact_key_text


def test_case_whitespace_and_punctuation_do_not_make_a_new_document():
    a = "The quick brown fox.\n\nJumps over the lazy dog!"
    b = "the  quick brown fox\njumps over the LAZY dog"
    assert exact_key_text(a) == "the quick brown fox jumps over the lazy dog"
    assert exact_hash(a) == exact_hash(b)


def test_different_words_differ_and_unicode_is_folded():
    assert exact_hash("one two three") != exact_hash("one two four")
    assert exact_hash("Straße ｆｕｌｌwidth") == exact_hash("STRASSE fullwidth")
    assert exact_hash("") == exact_hash(None) and len(exact_hash("x")) == 32


def test_key_text_equals_the_regex_definition_over_the_basic_multilingual_plane():
    """exact_key_text translates characters through a table filled from the regex [\\W_]+ instead of
    running the regex: the same text must come out, for every character and mixed with words; a
    character of a script written without spaces is a unit of its own, a traditional one folded to its
    simplified form (pipeline/clean/script.py)."""
    import random
    import re
    import unicodedata

    from pipeline.clean.script import fold_char
    from pipeline.clean.words import has_unspaced

    non_word = re.compile(r"[\W_]+", re.UNICODE)

    def by_regex(text):
        spaced = non_word.sub(" ", unicodedata.normalize("NFKC", text).casefold())
        return " ".join("".join(f" {fold_char(c)} " if has_unspaced(c) else c for c in spaced).split())

    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000]
    assert exact_key_text("".join(chars)) == by_regex("".join(chars))
    rng = random.Random(0)
    for _ in range(2000):
        text = "".join(rng.choice(chars) if rng.random() < 0.5 else rng.choice("ab cd_e-f.")
                       for _ in range(rng.randint(0, 40)))
        assert exact_key_text(text) == by_regex(text), repr(text)


def test_chinese_units_are_characters_so_spacing_and_punctuation_do_not_matter():
    assert exact_key_text("使用PyTorch训练模型，效果很好。") == "使 用 pytorch 训 练 模 型 效 果 很 好"
    assert exact_hash("效果 很好") == exact_hash("效果很好！")
    assert exact_hash("效果很好") != exact_hash("效果不好")


def test_a_traditional_mirror_has_the_key_of_its_simplified_page():
    assert exact_hash("大多數的加長型禮車則是租車公司的財產。") == exact_hash("大多数的加长型礼车则是租车公司的财产。")
