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
