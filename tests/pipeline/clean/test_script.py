"""繁/简 (pipeline/clean/script.py): detection on the UD Chinese GSD / GSDSimp test splits (the same sentences in
both scripts, tests/data/zh_script), the OpenCC trap, the policy in the clean stage, and the folded keys."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.clean.script import NEUTRAL, SIMPLIFIED, TRADITIONAL, chinese_script, to_simplified

DATA = Path(__file__).resolve().parents[2] / "data" / "zh_script"


def sentences(name: str) -> list[str]:
    return [line.split("\t", 1)[1] for line in (DATA / f"{name}.tsv").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def twins() -> list[tuple[str, str]]:
    t, s = sentences("gsd-test"), sentences("gsdsimp-test")
    return [("".join(t[i:i + 10]), "".join(s[i:i + 10])) for i in range(0, len(t), 10)]


def test_documents_are_recorded_right(twins):
    assert [chinese_script(t) for t, _ in twins] == [TRADITIONAL] * len(twins)
    assert [chinese_script(s) for _, s in twins] == [SIMPLIFIED] * len(twins)


def test_sentences_are_right_or_neutral():
    for name, want in (("gsd-test", TRADITIONAL), ("gsdsimp-test", SIMPLIFIED)):
        found = [chinese_script(x) for x in sentences(name)]
        assert all(f in (want, NEUTRAL) for f in found)
        assert found.count(want) >= 0.9 * len(found)


def test_mixed_and_neutral():
    assert chinese_script("這個問題很難。这个问题很难。") == "mixed"
    assert chinese_script("hello world 123") == NEUTRAL


def test_converting_simplified_text_changes_nothing(twins):
    """The OpenCC trap (1.4.0 turned 坏 into 坯): simplified text through t2s stays as it is."""
    assert to_simplified("坏人做了坏事，东西坏了。") == "坏人做了坏事，东西坏了。"
    for _, s in twins[:10]:
        assert to_simplified(s) == s


def test_traditional_converts_to_its_simplified_twin(twins):
    from pipeline.dedup.exact import exact_key_text

    assert all(chinese_script(to_simplified(t)) == SIMPLIFIED for t, _ in twins)
    pairs = list(zip(sentences("gsd-test"), sentences("gsdsimp-test")))
    same = sum(exact_key_text(to_simplified(t)) == exact_key_text(s) for t, s in pairs)
    assert same >= 0.9 * len(pairs)     # GSDSimp's own conversion differs in a few words (and in its quotes)


def test_keys_fold_traditional_to_simplified(twins):
    from pipeline.clean.words import key_units
    from pipeline.dedup.exact import exact_hash
    from pipeline.dedup.minhash import jaccard, shingles
    from pipeline.tokenize.decontam import words as decontam_words

    t, s = "這種車輛如果歸私人擁有，多半會設置昂貴的音頻設備。", "这种车辆如果归私人拥有，多半会设置昂贵的音频设备。"
    assert key_units(t) == key_units(s)
    assert exact_hash(t) == exact_hash(s)
    assert decontam_words(t) == decontam_words(s)
    merged = sum(exact_hash(a) == exact_hash(b) or jaccard(shingles(a, 5, 2), shingles(b, 5, 2)) >= 0.8
                 for a, b in twins)
    assert merged >= 0.95 * len(twins)


@pytest.mark.parametrize("mode, reason, converted", [("keep", None, False), ("to_simplified", None, True),
                                                     ("drop_traditional", "zh_traditional", False)])
def test_policy_in_the_clean_stage(twins, mode, reason, converted):
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch

    class Chinese:
        def predict(self, texts):
            return [("zh", 0.99)] * len(texts)

    cfg = CleanConfig(languages=["zh"], chinese_script=mode, rules=[])
    trad, simp = twins[0]
    row, srow = clean_batch([trad, simp], Chinese(), cfg)
    assert row["zh_script"] == TRADITIONAL and srow["zh_script"] == SIMPLIFIED
    assert row["reason"] == reason and srow["reason"] is None
    assert (row["text"] != trad) == converted
    assert srow["text"] == simp
