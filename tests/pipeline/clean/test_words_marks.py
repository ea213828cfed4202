r"""The punctuation-mark spacing of the word layer (pipeline/clean/words.py) is re's `([^\w\s])` -> " \1 "."""
import re

from pipeline.clean import words

MARK = re.compile(r"([^\w\s])")


def test_the_mark_table_is_the_regex_on_every_character_of_the_bmp():
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF] + [chr(0x1F600), chr(0x20000), chr(0xE0001)]
    assert [words._MARKS[ord(ch)] for ch in chars] == [
        ord(ch) if MARK.fullmatch(ch) is None else f" {ch} " for ch in chars]
    text = "".join(chars)
    assert words._space_marks(text) == MARK.sub(r" \1 ", text)


def test_segment_lines_splits_marks_off_words():
    assert words.segment_lines("Hello, world!\n\n«Quoted» — 3.5%") == [
        ["hello", ",", "world", "!"], ["«", "quoted", "»", "—", "3", ".", "5", "%"]]


def test_map_distinct_is_translate_even_where_one_output_could_feed_another():
    chain = {ord("a"): " b ", ord("b"): " c "}   # a translate maps once: "ab" -> " b  c "
    assert words.map_distinct("ab", chain) == "ab".translate(chain) == " b  c "
    assert words.map_distinct("a,b.", words._MARKS) == "a , b . "
    for table in ({ord("a"): None, ord("b"): ord("b")}, {ord("a"): ord("z")}, {ord("a"): "", ord("c"): " c "}, {}):
        assert words.map_distinct("abcab", table) == "abcab".translate(table), table
