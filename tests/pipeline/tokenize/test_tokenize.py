"""Tokenizer training, encoding and shard writing without Spark (real sentencepiece, real pyarrow)."""
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm

import pipeline.tokenize.tokenizer as tk
from pipeline.config import ConfigError, parse_config
from pipeline.tokenize.tokenizer import (ShardWriter, TokenizeConfig, TokenizerError, describe_model, encode_batch,
                               shard_facts, token_arrow_schema, train_tokenizer, training_sentences,
                               write_shards_partition)

REPO = Path(__file__).resolve().parents[3]
WIKITEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"


def _sentences(n_chars: int = 150_000) -> list[str]:
    out, total = [], 0
    for line in WIKITEXT.read_text(encoding="utf-8").splitlines():
        for s in training_sentences(line):
            out.append(s)
            total += len(s)
        if total >= n_chars:
            break
    return out


@pytest.fixture(scope="module")
def model() -> bytes:
    return train_tokenizer(_sentences(), TokenizeConfig(vocab_size=800, special_tokens=["<eod>", "<code>"]),
                           progress=lambda m: None)


def test_training_is_lossless_and_reproducible(model):
    info = describe_model(model, "<eod>")
    assert info["vocab_size"] == 800 and info["eos_id"] == 2
    assert (info["unk_id"], info["bos_id"], info["pad_id"]) == (0, 1, 3)
    sp = spm.SentencePieceProcessor(model_proto=model)
    assert sp.id_to_piece(4) == "<code>" and sp.encode("a <code> b", out_type=str).count("<code>") == 1
    texts = ["Line one\n\n    indented code:\tx = 1  # two  spaces\n", "ünïcödé 漢字 🎉 and \r\n endings", ""]
    ids = encode_batch(sp, texts, info["eos_id"])
    for text, row in zip(texts, ids):
        assert row[-1] == 2 and row.count(2) == 1       # exactly one end of document, at the end
        assert sp.decode(row[:-1]) == text              # byte fallback + identity normalisation: lossless
    assert ids[2] == [2]
    again = train_tokenizer(_sentences(), TokenizeConfig(vocab_size=800, special_tokens=["<eod>", "<code>"]),
                            progress=lambda m: None)
    assert again == model


def test_training_reports_progress_and_names_a_too_large_vocab():
    # sentencepiece's log level is process-wide: a quiet training elsewhere must not mute ours
    spm.SentencePieceTrainer.train(sentence_iterator=iter(_sentences(3_000)), model_writer=io.BytesIO(),
                                   vocab_size=200, minloglevel=2)
    seen = []
    train_tokenizer(_sentences(20_000), TokenizeConfig(vocab_size=400, model_type="unigram"), progress=seen.append)
    assert any("sentences" in m for m in seen) and seen[-1].startswith("tokenizer trained")
    with pytest.raises(TokenizerError, match=r"tokenize\.vocab_size: 20000 is more pieces"):
        train_tokenizer(_sentences(3_000), TokenizeConfig(vocab_size=20_000, model_type="unigram"),
                        progress=lambda m: None)


def test_a_given_model_must_have_the_end_of_document_piece(model):
    with pytest.raises(TokenizerError, match=r"tokenize\.eod_token: .*'<end>'"):
        describe_model(model, "<end>")
    with pytest.raises(TokenizerError, match="not a sentencepiece model"):
        describe_model(b"not a model", "<eod>")


def test_training_sentences_are_bounded_lines():
    text = "a\n\n   \n" + "word " * 3000 + "\nlast"
    lines = list(training_sentences(text, max_chars=1000))
    assert lines[0] == "a" and lines[-1] == "last"
    assert all(0 < len(l) <= 1000 and "\n" not in l for l in lines)
    assert "".join(lines[1:-1]) == ("word " * 3000)


def _rows(n: int, start: int = 0, shard: int | None = None) -> pa.RecordBatch:
    ids = [f"doc{start + i:04d}" for i in range(n)]
    toks = [[7] * (1 + (start + i) % 5) + [2] for i in range(n)]
    cols = {"id": ids, "source": ["web"] * n, "tokens": toks, "n_tokens": [len(t) for t in toks]}
    fields = list(token_arrow_schema())
    if shard is not None:
        cols["shard"] = [shard] * n
        fields.append(pa.field("shard", pa.int32()))
    return pa.RecordBatch.from_pydict(cols, schema=pa.schema(fields))


def test_shards_are_deterministic_with_row_groups_cut_by_counts(tmp_path, monkeypatch):
    monkeypatch.setattr(tk, "ROW_GROUP_DOCS", 7)
    paths = []
    for run, sizes in enumerate([(5, 9, 6), (20,)]):   # the same rows in different batches
        w = ShardWriter(str(tmp_path / f"s{run}.parquet"))
        start = 0
        for n in sizes:
            w.add(pa.Table.from_batches([_rows(n, start)]))
            start += n
        facts = w.close()
        paths.append(facts["path"])
        assert facts["documents"] == 20 and facts == {"path": facts["path"], **shard_facts(facts["path"])}
    assert Path(paths[0]).read_bytes() == Path(paths[1]).read_bytes()
    pf = pq.ParquetFile(paths[0])
    assert [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)] == [7, 7, 6]
    assert pf.schema_arrow == token_arrow_schema() and not list(tmp_path.glob("*.tmp"))


def test_partition_writer_splits_by_shard(tmp_path):
    batches = [_rows(3, 0, shard=0), _rows(2, 3, shard=0), _rows(4, 5, shard=2)]
    facts = [b.to_pylist()[0] for b in write_shards_partition(str(tmp_path))(iter(batches))]
    assert [(f["shard"], f["documents"]) for f in facts] == [(0, 5), (2, 4)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-00000.parquet", "part-00002.parquet"]
    table = pq.read_table(tmp_path / "part-00002.parquet")
    assert table.column_names == ["id", "source", "tokens", "n_tokens"] and table.num_rows == 4


def _cfg(tmp_path, tokenize):
    (tmp_path / "a.warc.gz").write_bytes(b"")
    return {"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "tokenize": tokenize}


def test_config_section(tmp_path):
    (tmp_path / "tok.model").write_bytes(b"x")
    cfg = parse_config(_cfg(tmp_path, {"vocab_size": 4000, "model_type": "unigram", "tokenizer": "tok.model",
                                       "special_tokens": ["<eod>", "<code>"], "shards_per_source": 8}),
                       base=tmp_path)
    tc = cfg.tokenize
    assert tc.vocab_size == 4000 and tc.tokenizer == str((tmp_path / "tok.model").resolve())
    assert tc.user_symbols() == ["<code>"]
    assert parse_config(_cfg(tmp_path, {"tokenizer": None}), base=tmp_path).tokenize.tokenizer == ""


@pytest.mark.parametrize("section, key", [
    ({"vocab_size": 100}, "tokenize.vocab_size"),
    ({"vocab_size": "4k"}, "tokenize.vocab_size"),
    ({"model_type": "wordpiece"}, "tokenize.model_type"),
    ({"tokenizer": "missing.model"}, "tokenize.tokenizer"),
    ({"special_tokens": ["<a b>"]}, "tokenize.special_tokens"),
    ({"special_tokens": ["<pad>"]}, "tokenize.special_tokens"),
    ({"shards_per_source": 0}, "tokenize.shards_per_source"),
    ({"character_coverage": 1.5}, "tokenize.character_coverage"),
    ({"vocab": 4000}, "tokenize.vocab"),
])
def test_config_errors_name_the_key(tmp_path, section, key):
    with pytest.raises(ConfigError) as err:
        parse_config(_cfg(tmp_path, section), base=tmp_path)
    assert str(err.value).startswith(key + ":"), str(err.value)
