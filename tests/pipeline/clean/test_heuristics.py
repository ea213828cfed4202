import random

import pytest

from pipeline.clean.heuristics import SIGNAL_NAMES, SIGNAL_TYPES, compute_signals


def test_fixed_keys_and_types():
    assert set(SIGNAL_TYPES) == set(SIGNAL_NAMES) and len(SIGNAL_NAMES) == len(set(SIGNAL_NAMES))
    assert set(SIGNAL_TYPES.values()) == {"int", "double"}
    for text in ["", "   \n\n ", "word", "Some text.\n\nMore text here, with # and ...", "a b " * 500]:
        s = compute_signals(text)
        assert list(s) == SIGNAL_NAMES
        for k, v in s.items():
            assert isinstance(v, int if SIGNAL_TYPES[k] == "int" else float), k
    assert all(v == 0 for v in compute_signals("").values())


def test_duplicate_lines():
    s = compute_signals("alpha beta\nalpha beta\nalpha beta\ngamma delta\nepsilon zeta")
    assert s["n_lines"] == 5
    assert s["gopher_dup_line_frac"] == pytest.approx(2 / 5)           # copies after the first
    assert s["gopher_dup_line_char_frac"] == pytest.approx(20 / 53)    # 2*10 of 10*3+11+12
    assert s["fineweb_dup_line_char_frac"] == s["gopher_dup_line_char_frac"]
    assert s["gopher_dup_para_frac"] == 0.0                            # one paragraph


def test_duplicate_paragraphs():
    s = compute_signals("p one.\n\np one.\n\np two.")
    assert s["gopher_dup_para_frac"] == pytest.approx(1 / 3)
    assert s["gopher_dup_para_char_frac"] == pytest.approx(6 / 18)


def test_bullets_and_ellipses():
    s = compute_signals("- a\n- b\n• c\nd")
    assert s["gopher_bullet_line_frac"] == pytest.approx(3 / 4)
    s = compute_signals("wait...\nmore…\nok")
    assert s["gopher_ellipsis_line_frac"] == pytest.approx(2 / 3)


def test_words_stopwords_and_length():
    s = compute_signals("The cat, sat!")
    assert s["gopher_n_words"] == 3
    assert s["gopher_mean_word_len"] == pytest.approx(3.0)
    assert s["gopher_stopword_count"] == 1
    s = compute_signals("the and of THE with that have be to")
    assert s["gopher_stopword_count"] == 9


def test_alpha_words():
    # tokens: abc (letter), 123, --, x1 (letter), $5 -> 2 of 5; "--" is not a word
    s = compute_signals("abc 123 -- x1 $5")
    assert s["gopher_alpha_word_frac"] == pytest.approx(2 / 5)
    assert s["gopher_n_words"] == 4


def test_symbol_ratio():
    assert compute_signals("# # a b c d e f g h")["gopher_symbol_word_ratio"] == pytest.approx(2 / 8)
    assert compute_signals("a... b… c d")["gopher_symbol_word_ratio"] == pytest.approx(2 / 4)


def test_top_ngrams():
    # word chars: cat dog cat dog bird = 16; "cat dog" twice = 12
    s = compute_signals("cat dog cat dog bird")
    assert s["gopher_top_2gram_char_frac"] == pytest.approx(12 / 16)
    assert s["gopher_top_3gram_char_frac"] == 0.0  # no 3-gram repeats
    assert compute_signals("one two three four")["gopher_top_2gram_char_frac"] == 0.0


def test_dup_ngrams_hand_computed():
    text = "one two three four five six one two three four five seven"  # 46 word chars
    s = compute_signals(text)
    assert s["gopher_dup_5gram_char_frac"] == pytest.approx(38 / 46)
    assert s["gopher_dup_6gram_char_frac"] == 0.0
    # ties among 2-grams that occur twice: the one with most characters wins ("three four")
    assert s["gopher_top_2gram_char_frac"] == pytest.approx(18 / 46)
    assert s["gopher_top_3gram_char_frac"] == pytest.approx(26 / 46)
    assert s["gopher_top_4gram_char_frac"] == pytest.approx(32 / 46)
    s = compute_signals(" ".join(f"w{i}" for i in range(10)) * 1 + " " + " ".join(f"w{i}" for i in range(10)))
    assert s["gopher_dup_10gram_char_frac"] == pytest.approx(1.0)


def _naive_ngram(words):
    """Straightforward reference for the n-gram signals."""
    total = sum(map(len, words))
    out = {}
    for n in range(2, 11):
        grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
        counts = {}
        for g in grams:
            counts[g] = counts.get(g, 0) + 1
        if n <= 4:
            best = max(counts.values(), default=0)
            v = 0.0
            if best > 1:
                v = best * max(sum(map(len, g)) for g, c in counts.items() if c == best) / total
            out[f"gopher_top_{n}gram_char_frac"] = v
        else:
            cov = [False] * len(words)
            for i, g in enumerate(grams):
                if counts[g] > 1:
                    for j in range(i, i + n):
                        cov[j] = True
            out[f"gopher_dup_{n}gram_char_frac"] = sum(len(w) for w, c in zip(words, cov) if c) / total
    return out


def test_ngrams_match_naive_reference():
    rng = random.Random(7)
    for trial in range(150):
        vocab = [f"{chr(97 + k)}" * rng.randint(1, 6) for k in range(rng.randint(2, 12))]
        n = rng.randint(2, 120)
        words = [rng.choice(vocab) for _ in range(n)]
        if trial % 3 == 0:  # paste a repeated block so long n-grams repeat too
            block = words[: rng.randint(5, 15)]
            words = words + block + words[:7] + block
        s = compute_signals(" ".join(words))
        for k, v in _naive_ngram(words).items():
            assert s[k] == pytest.approx(v), (k, words)


def test_c4_signals():
    s = compute_signals("Lorem ipsum dolor sit amet. var x = {a: 1};\nPlease enable JavaScript.\n"
                        "Read our Privacy Policy\nThis site uses cookies\nhello")
    assert s["c4_has_lorem_ipsum"] == 1
    assert s["c4_has_curly_bracket"] == 1
    assert s["c4_javascript_line_count"] == 1
    assert s["c4_policy_line_count"] == 2
    assert compute_signals("One. Two! Three? Four")["c4_n_sentences"] == 3
    assert compute_signals('He said "stop." Then... what.')["c4_n_sentences"] == 3
    s = compute_signals('a.\nb\n"c."\nd!')
    assert s["c4_terminal_punct_line_frac"] == pytest.approx(3 / 4)
    assert compute_signals("plain text")["c4_has_lorem_ipsum"] == 0


def test_fineweb_signals():
    s = compute_signals("short\n" + "x" * 31 + ".")
    assert s["fineweb_short_line_frac"] == pytest.approx(1 / 2)
    assert s["fineweb_line_punct_frac"] == pytest.approx(1 / 2)
    s = compute_signals("a\nb\nc")
    assert s["fineweb_list_frac"] == pytest.approx(2 / 3)
    assert s["fineweb_short_line_frac"] == 1.0
    assert compute_signals("It ended…\nShe said «no»")["fineweb_line_punct_frac"] == 1.0


def test_counts():
    s = compute_signals("ab\n\ncd")
    assert s["n_chars"] == 6 and s["n_lines"] == 2


