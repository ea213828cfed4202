"""quality_models/annotate/sample.py: N documents stratified by (source, lang), proportional with one for every
non-empty stratum while N allows, the same documents for the same seed, --lang/--source filters."""
from collections import Counter

from quality_models.annotate.sample import allocate, key, select, stratified, stratum
from quality_models.inputs import Doc


def corpus():
    docs = [Doc(f"web page {i}", None, "DATA", "en", source="web", id=f"w{i}") for i in range(900)]
    docs += [Doc(f"book {i}", None, "DATA", "en", source="books", id=f"b{i}") for i in range(90)]
    docs += [Doc(f"网页 {i}", None, "DATA", "zh", source="web", id=f"z{i}") for i in range(9)]
    docs += [Doc("一本书", None, "DATA", "zh", source="books", id="zb0")]
    return docs


def test_allocation_is_proportional_with_one_per_stratum_and_sums_to_n():
    sizes = {("web", "en"): 900, ("books", "en"): 90, ("web", "zh"): 9, ("books", "zh"): 1}
    # quotas 90, 9, 0.9, 0.1: the two small strata get their one, taken from the largest
    assert allocate(sizes, 100) == {("web", "en"): 89, ("books", "en"): 9, ("web", "zh"): 1, ("books", "zh"): 1}
    assert allocate(sizes, 10) == {("web", "en"): 7, ("books", "en"): 1, ("web", "zh"): 1, ("books", "zh"): 1}
    assert allocate(sizes, 2) == {("web", "en"): 1, ("books", "en"): 1, ("web", "zh"): 0, ("books", "zh"): 0}
    assert allocate(sizes, 5000) == sizes                                   # N beyond the corpus: everything
    assert allocate({("a", "en"): 3, ("b", "en"): 0}, 2) == {("a", "en"): 2, ("b", "en"): 0}
    for n in range(1, 60):
        got = allocate(sizes, n)
        assert sum(got.values()) == n and all(0 <= got[s] <= sizes[s] for s in sizes)


def test_the_sample_is_deterministic_by_seed_and_stratified():
    docs = corpus()
    a, b = stratified(docs, 50, seed=7), stratified(list(reversed(docs)), 50, seed=7)
    assert [d.id for d in a] == [d.id for d in b]                           # file order does not matter
    assert [d.id for d in stratified(docs, 50, seed=8)] != [d.id for d in a]
    assert Counter(stratum(d) for d in a) == {("web", "en"): 44, ("books", "en"): 4, ("web", "zh"): 1,
                                              ("books", "zh"): 1}
    assert len({d.id for d in a}) == 50
    bigger = stratified(docs, 200, seed=7)                                  # a larger N extends each stratum
    for s in {stratum(d) for d in a}:
        small = [d.id for d in a if stratum(d) == s]
        assert set(small) <= {d.id for d in bigger if stratum(d) == s}


def test_filters_and_repeated_ids():
    docs = corpus() + [Doc("web page 0 again", None, "DATA", "en", source="web", id="w0")]
    skipped = Counter()
    zh = select(docs, ["zh"], [], skipped)
    assert {d.lang for d in zh} == {"zh"} and len(zh) == 10 and skipped["lang is not zh"] == 991
    books = select(docs, ["en", "zh"], ["books"], Counter())
    assert len(books) == 91
    skipped = Counter()
    assert len(select(docs, [], [], skipped)) == 1000 and skipped == {"repeated id": 1}
    assert key(Doc("no id here", None, "x")).startswith("sha256:") and key(docs[0]) == "w0"
