"""The faster sketch arithmetic gives the very same values as its definition: the MinHash signatures
(shift after the minimum), the in-place n-gram fold, the ASCII shortcut of the shingle size and the forked sketch
workers of the local path (so the decisions of the dedup stage cannot move)."""
import random
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from bench.near_dedup import planted_corpus
from pipeline.dedup import minhash
from pipeline.dedup.exact import key_words
from pipeline.dedup.local import BATCH, sketch_column
from pipeline.dedup.minhash import (_fmix64, _WORD_HASHES, minhash_signatures, minhash_signatures_reference,
                                    shingle_hashes, shingles)
from pipeline.dedup.settings import NearDedupConfig
from pipeline.dedup.sketch import sketch_arrays
from pipeline.dedup.stage import local_path_workers


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_signatures_equal_the_definition(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 700, size=90)
    sizes[rng.random(90) < 0.2] = 0          # empty documents between full ones, first and last too
    sizes[0] = sizes[-1] = 0
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    values = rng.integers(0, 2**64, size=int(offsets[-1]), dtype=np.uint64)
    got = minhash_signatures(values, offsets, 112, 42)
    assert got.dtype == np.uint32 and got.shape == (90, 112)
    assert (got == minhash_signatures_reference(values, offsets, 112, 42)).all()
    assert (got[sizes == 0] == np.iinfo(np.uint32).max).all()
    empty = minhash_signatures(np.zeros(0, np.uint64), np.zeros(3, np.int64), 8, 1)
    assert (empty == np.iinfo(np.uint32).max).all()


def _fold_reference(words: list[str], n: int) -> list[int]:
    """A document's shingle hashes one n-gram at a time, in Python integers."""
    h = [_WORD_HASHES[w] for w in words]
    grams = [h[i:i + n] for i in range(len(h) - n + 1)] if len(h) >= n else ([h] if h else [])
    out = set()
    for g in grams:
        acc = 0
        for x in g:
            acc = (acc * int(minhash._MUL) + x) % 2**64
        out.add(int(_fmix64(np.array([acc], np.uint64))[0]))
    return sorted(out)


def test_shingle_hashes_equal_the_fold_one_ngram_at_a_time():
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(40)] + ["é", "字"]
    docs = [[rng.choice(vocab) for _ in range(rng.choice([0, 1, 2, 4, 5, 6, 9, 60]))] for _ in range(300)]
    for n in (5, 1, [rng.choice([1, 2, 5, 7]) for _ in docs]):
        values, offsets = shingle_hashes(docs, n)
        sizes = n if isinstance(n, list) else [n] * len(docs)
        for i, (words, k) in enumerate(zip(docs, sizes)):
            assert values[offsets[i]:offsets[i + 1]].tolist() == _fold_reference(words, k)


def test_ascii_shortcut_keeps_the_shingle_size():
    texts = ["Plain English words, a few of them here and there again.", "中文的文本没有空格但是有很多字",
             "Mixed: 一些中文字符 and English", "", None, "x"]
    fp = sketch_arrays(texts, 5, 16, 4, 4, 1, char_ngram=2)
    for i, t in enumerate(texts):
        assert int(fp.offsets[i + 1] - fp.offsets[i]) == len(shingles(t or "", 5, char_ngram=2))


def test_forked_sketch_workers_give_the_same_arrays():
    docs, _ = planted_corpus(3 * BATCH + 17, seed=2)
    texts = pa.chunked_array([[d["text"] for d in docs[:700]], [d["text"] for d in docs[700:]] + [None]])
    cfg = NearDedupConfig()
    one, two = sketch_column(texts, cfg, 1), sketch_column(texts, cfg, 2)
    assert one.exact == two.exact and len(one.exact) == len(docs) + 1
    for name in ("values", "offsets", "keys", "has_words"):
        assert np.array_equal(getattr(one, name), getattr(two, name))
    whole = sketch_arrays([d["text"] for d in docs] + [None], cfg.ngram, cfg.num_perm, cfg.bands, cfg.rows,
                          cfg.seed, cfg.char_ngram)
    assert np.array_equal(whole.values, one.values) and np.array_equal(whole.keys, one.keys)
    assert key_words(docs[0]["text"])  # the corpus has words


def test_local_path_workers():
    assert local_path_workers(SimpleNamespace(master="local[2]")) == 2
    assert local_path_workers(SimpleNamespace(master="local")) == 1
    assert local_path_workers(SimpleNamespace(master="spark://host:7077")) == 1  # one task's core
    assert local_path_workers(SimpleNamespace(master="local Python processes x3, no JVM", cores=3)) == 3
