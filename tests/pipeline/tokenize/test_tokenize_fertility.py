"""The tokenize step's fertility report per language (pipeline/tokenize/tokenizer.py), computed where the shards
are written, and the tokenizer's settings for CJK text. Plain Python: the two partition functions of
jobs/tokens.py run on Arrow batches here, as Spark runs them."""
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm

from pipeline.tokenize.settings import TokenizeConfig
from pipeline.tokenize.tokenizer import (TOKEN_STATS_DDL, add_fertility, document_lengths, fertility_report,
                               format_fertility, merge_fertility, tokenize_partition, trainer_args,
                               write_shards_partition)
from pipeline.clean.words import words

DOCS = [
    ("en", "The river rises in the hills and flows north to the sea. Its valley is farmed."),
    ("en", "Tokenizers split words into pieces; rare words need more pieces than common ones."),
    ("zh", "同样，施力的大小不同，引起的加速度不同，最终的结果也不一样。"),
    ("zh", "这种车辆如果归私人拥有，多半会设置昂贵的音频设备、电视机、影碟机，以及吧台和冰箱。"),
    ("ja", "今日は良い天気ですね。明日も晴れるでしょう。"),
    (None, "no language here"),
]


@pytest.fixture(scope="module")
def model() -> bytes:
    """A tiny BPE model trained with the step's own settings (CJK coverage and byte fallback)."""
    cfg = TokenizeConfig(vocab_size=400, threads=1)
    lines = [t for _, t in DOCS] * 3 + [f"line {i} of some english filler text about rivers" for i in range(200)]
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, minloglevel=2,
                                   **trainer_args(cfg))
    return out.getvalue()


def test_defaults_cover_cjk():
    args = trainer_args(TokenizeConfig())
    assert args["character_coverage"] == 0.9995 and args["byte_fallback"] is True


def test_unseen_chinese_characters_are_bytes_not_unk(model):
    sp = spm.SentencePieceProcessor(model_proto=model)
    text = "鑫淼焱垚，龘靐齉。"  # none of these characters is in the training text
    ids = sp.encode(text)
    assert sp.unk_id() not in ids
    assert sp.decode(ids) == text


def test_add_merge_and_report():
    a = add_fertility({}, ["en", "zh", None], [10, 6, 3], [2, 3, 1], [4, 5, 2])
    assert a == {"en": {"documents": 1, "chars": 10, "words": 2, "tokens": 3},
                 "zh": {"documents": 1, "chars": 6, "words": 3, "tokens": 4},
                 "und": {"documents": 1, "chars": 3, "words": 1, "tokens": 1}}
    b = add_fertility({}, ["zh"], [4], [0], [1])   # an empty text: the end-of-document id only
    total = merge_fertility([a, b, {}])
    assert total["zh"] == {"documents": 2, "chars": 10, "words": 3, "tokens": 4}
    rows = fertility_report(total)
    assert [r["lang"] for r in rows] == ["zh", "en", "und", "*"]   # most tokens first, then all
    zh, star = rows[0], rows[-1]
    assert zh["tokens_per_char"] == 0.4 and zh["tokens_per_word"] == pytest.approx(4 / 3, abs=1e-4)
    assert star == {"lang": "*", "documents": 4, "chars": 23, "words": 6, "tokens": 8,
                    "tokens_per_char": round(8 / 23, 4), "tokens_per_word": round(8 / 6, 4)}
    assert fertility_report({}) == []
    assert fertility_report({"xx": {"documents": 1, "chars": 0, "words": 0, "tokens": 0}})[0]["tokens_per_word"] is None


def test_document_lengths_use_the_segmentation_layer():
    texts = [t for _, t in DOCS] + [None, ""]
    langs = [lang for lang, _ in DOCS] + ["en", "zh"]
    chars, n_words = document_lengths(texts, langs)
    assert chars == [len(t or "") for t in texts]
    assert n_words == [len(words(t, lang)) if t else 0 for t, lang in zip(texts, langs)]
    assert n_words[0] == 16 and 5 < n_words[2] < len(DOCS[2][1])  # Chinese: ICU words, not characters


def _run_partitions(model: bytes, tmp_path):
    """tokenize_partition(fertility=True) -> shard column -> write_shards_partition, as jobs/tokens.py."""
    import hashlib

    texts = [t for _, t in DOCS]
    batch = pa.RecordBatch.from_pydict({
        "id": [f"d{i}" for i in range(len(DOCS))], "source": ["web"] * len(DOCS), "text": texts,
        "lang": [lang for lang, _ in DOCS]})
    sha = hashlib.sha256(model).hexdigest()
    out = list(tokenize_partition(lambda: model, sha, 2, fertility=True)(iter([batch[:3], batch[3:]])))
    rows = pa.Table.from_batches(out)
    assert rows.schema.names == [f.split()[0] for f in TOKEN_STATS_DDL.split(", ")]
    rows = rows.append_column("shard", pa.array([i % 2 for i in range(rows.num_rows)], pa.int32()))
    rows = rows.sort_by([("shard", "ascending"), ("id", "ascending")])
    writer = write_shards_partition(str(tmp_path))
    facts = [b.to_pylist()[0] for b in writer(iter(rows.to_batches(max_chunksize=2)))]
    return rows, facts


def test_fertility_is_summed_where_the_shards_are_written(model, tmp_path):
    rows, facts = _run_partitions(model, tmp_path)
    assert [f["shard"] for f in facts] == [0, 1]
    assert sum(f["documents"] for f in facts) == len(DOCS)
    report = fertility_report(merge_fertility(json.loads(f["fertility"]) for f in facts))
    by_lang = {r["lang"]: r for r in report}
    assert set(by_lang) == {"en", "zh", "ja", "und", "*"}

    sp = spm.SentencePieceProcessor(model_proto=model)
    for lang in ("en", "zh", "ja"):
        texts = [t for l, t in DOCS if l == lang]
        expect_tokens = sum(len(sp.encode(t)) for t in texts)   # without the end-of-document id
        assert by_lang[lang]["documents"] == len(texts)
        assert by_lang[lang]["tokens"] == expect_tokens
        assert by_lang[lang]["chars"] == sum(map(len, texts))
        assert by_lang[lang]["words"] == sum(len(words(t, lang)) for t in texts)
    assert by_lang["*"]["tokens"] == sum(f["tokens"] for f in facts) - len(DOCS)
    # the tokenizer spends more tokens per word on Chinese (few, long words) than per character
    assert by_lang["zh"]["tokens_per_word"] > by_lang["zh"]["tokens_per_char"]

    # the shards hold the token columns only, as before
    table = pq.read_table(tmp_path / "part-00000.parquet")
    assert table.column_names == ["id", "source", "tokens", "n_tokens"]


def test_shards_without_the_columns_report_nothing(tmp_path):
    batch = pa.RecordBatch.from_pydict({"id": ["a"], "source": ["web"],
                                        "tokens": pa.array([[5, 2]], pa.list_(pa.int32())),
                                        "n_tokens": pa.array([2], pa.int32()), "shard": pa.array([0], pa.int32())})
    fact = next(write_shards_partition(str(tmp_path))(iter([batch]))).to_pylist()[0]
    assert json.loads(fact["fertility"]) == {} and fact["documents"] == 1


def test_table_format(model, tmp_path):
    _, facts = _run_partitions(model, tmp_path)
    text = format_fertility(fertility_report(merge_fertility(json.loads(f["fertility"]) for f in facts)))
    lines = text.splitlines()
    assert lines[0].split() == ["lang", "docs", "chars", "words", "tokens", "tok/char", "tok/word"]
    assert [ln.split()[0] for ln in lines[1:]][-1] == "*" and len(lines) == 6


def test_a_vocabulary_smaller_than_the_chinese_alphabet_is_named():
    from pipeline.tokenize.tokenizer import TokenizerError, train_tokenizer

    lines = [t for lang, t in DOCS if lang in ("zh", "ja")] * 20   # about 70 distinct characters
    with pytest.raises(TokenizerError, match=r"tokenize.vocab_size: 300 pieces cannot hold the \d+ .*"
                                             r"character_coverage 0.9995"):
        train_tokenizer(lines, TokenizeConfig(vocab_size=300, threads=1), progress=lambda msg: None)
