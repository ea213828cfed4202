"""Tokenizer training and token shards: sentencepiece settings, training with progress, batch encoding.

Choices worth knowing:
- Lossless: identity normalisation, whitespace kept as written and byte fallback, so
  decode(encode(text)) == text for any text (code indentation, rare scripts, emoji). Newlines are
  never inside a training sentence (sentencepiece trains on lines), so each encodes as the byte
  piece <0x0A>.
- The end-of-document token (`eod_token`, default `<eod>`) is sentencepiece's eos piece, so
  `eos_id()` of the model names it; every document's tokens end with exactly one of it. No BOS.
  Ids: unk 0, bos 1, eos (end of document) 2, pad 3, then the `special_tokens`, then bytes and pieces.
- Reproducible: a rerun on the same sample gives a byte-identical model. The sample is fed through
  an iterator and the model written to memory (sentencepiece records input paths, the output
  prefix and the thread count in the model file, so `threads` is a setting, not the machine's count).
- Every script: character_coverage 0.9995 with byte_fallback (the defaults) is sentencepiece's advice
  for Chinese and Japanese; a character outside the coverage is spelled in byte pieces, never <unk>.
  How many tokens a language costs is measured in the same pass that encodes it: the fertility report
  (`fertility_report`: documents, characters, words as pipeline/clean/words.py counts them, tokens, tokens
  per character and per word, by the documents' `lang`).
"""
from __future__ import annotations

import io
import os
import re
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

from glassbox.contracts import BOS_ID, EOS_ID, PAD_ID, UNK_ID, sha256_bytes, sha256_file
from pipeline.tokenize.settings import TokenizeConfig

MAX_SENTENCE_CHARS = 4096   # longer lines are cut at a space; sentencepiece skips sentences over its limit


class TokenizerError(RuntimeError):
    """Training failed or a given model cannot serve (no end-of-document piece)."""


def trainer_args(cfg: TokenizeConfig) -> dict:
    """sentencepiece training settings (see the module doc for why)."""
    return dict(
        model_type=cfg.model_type, vocab_size=cfg.vocab_size, byte_fallback=cfg.byte_fallback,
        character_coverage=cfg.character_coverage, split_digits=cfg.split_digits,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        allow_whitespace_only_pieces=True, max_sentence_length=4 * MAX_SENTENCE_CHARS + 16,
        unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID, eos_piece=cfg.eod_token,
        user_defined_symbols=cfg.user_symbols(), num_threads=cfg.threads,
        input_sentence_size=0, shuffle_input_sentence=False, hard_vocab_limit=True,
    )


def training_sentences(text: str, max_chars: int = MAX_SENTENCE_CHARS) -> Iterator[str]:
    """The lines of a document as sentencepiece wants them: non-blank, no newline, bounded length."""
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        while len(line) > max_chars:
            cut = line.rfind(" ", max_chars // 2, max_chars)
            cut = cut if cut > 0 else max_chars
            yield line[:cut]
            line = line[cut:]
        if line.strip():
            yield line


# sentencepiece's log lines that tell how far training got
_PROGRESS = [
    (re.compile(r"Loaded all (\d+) sentences"), "loaded {0} sentences"),
    (re.compile(r"Alphabet size=(\d+)"), "alphabet of {0} characters"),
    (re.compile(r"Merged: freq=\d+ merges=(\d+)"), "{0} merges"),
    (re.compile(r"Completed (\d+) merge steps"), "{0} merges done"),
    (re.compile(r"Initialized (\d+) seed pieces"), "{0} seed pieces"),
    (re.compile(r"EM sub_iter=\d+ size=(\d+)"), "EM: {0} pieces"),
    (re.compile(r"Saving model"), "saving model"),
]
_ABSL_PROBLEM = re.compile(r"^[WEF]\d{4} ")  # absl warning/error/fatal lines


@contextmanager
def _sentencepiece_log(progress: Callable[[str], None], every_s: float = 2.0):
    """Route the C++ library's stderr (fd 2) through a filter: progress lines become short messages
    (the first of each kind, then at most one per `every_s`), warnings and errors pass through, the
    trainer-spec dump and per-piece chatter are dropped. Yields the last lines, for error messages."""
    tail: deque[str] = deque(maxlen=30)
    sys.stderr.flush()
    saved = os.dup(2)
    r, w = os.pipe()
    os.dup2(w, 2)
    os.close(w)
    last = {"t": 0.0, "kind": None}

    def pump():
        with os.fdopen(r, "r", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                tail.append(line.rstrip("\n"))
                if _ABSL_PROBLEM.match(line):
                    os.write(saved, line.encode("utf-8", "replace"))
                    continue
                for pattern, fmt in _PROGRESS:
                    m = pattern.search(line)
                    if m:
                        now = time.monotonic()
                        if fmt != last["kind"] or now - last["t"] >= every_s:
                            progress(fmt.format(*m.groups()))
                            last.update(t=now, kind=fmt)
                        break

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        yield tail
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)   # closes the pipe's last write end: the reader sees EOF
        reader.join(timeout=10)
        os.close(saved)


def train_tokenizer(sentences: Iterable[str], cfg: TokenizeConfig,
                    progress: Callable[[str], None] = print) -> bytes:
    """Train on `sentences` (lines, see training_sentences) and return the serialized model."""
    import sentencepiece as spm

    spm.set_random_generator_seed(cfg.seed)
    out = io.BytesIO()
    progress(f"training a {cfg.model_type} tokenizer, vocab {cfg.vocab_size}")
    t0 = time.time()
    with _sentencepiece_log(progress) as tail:
        try:
            # the log level is process-wide in sentencepiece: an earlier quiet call would mute progress
            spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=out,
                                           minloglevel=0, **trainer_args(cfg))
        except RuntimeError as e:
            msg = str(e)
            m = re.search(r"Vocabulary size (?:is )?too high \((\d+)\)\. Please set it to a value <= (\d+)", msg)
            if m:
                raise TokenizerError(f"tokenize.vocab_size: {m.group(1)} is more pieces than the sample "
                                     f"supports (at most {m.group(2)}); lower it or sample more text "
                                     "(tokenize.sample_docs, tokenize.sample_chars)") from None
            m = re.search(r"Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)", msg)
            if m:
                raise TokenizerError(
                    f"tokenize.vocab_size: {m.group(1)} pieces cannot hold the {m.group(2)} that the sample needs "
                    f"(the characters that character_coverage {cfg.character_coverage} keeps, plus the byte and "
                    "control pieces); a sample in Chinese or Japanese needs thousands: raise vocab_size, or lower "
                    "tokenize.character_coverage (characters left out are spelled in byte pieces)") from None
            raise TokenizerError(f"sentencepiece training failed: {msg}\n" + "\n".join(tail)) from None
    progress(f"tokenizer trained in {time.time() - t0:.1f}s")
    return out.getvalue()


def describe_model(model: bytes, eod_token: str) -> dict:
    """What a reader of the shards needs to know about the tokenizer (ids of the special pieces)."""
    import sentencepiece as spm

    try:
        sp = spm.SentencePieceProcessor(model_proto=model)
    except Exception as e:  # sentencepiece raises RuntimeError/OSError on bytes that are no model
        raise TokenizerError(f"tokenize.tokenizer: not a sentencepiece model ({e})") from None
    eos = sp.piece_to_id(eod_token)
    if eos == sp.unk_id() or sp.id_to_piece(eos) != eod_token:
        raise TokenizerError(f"tokenize.eod_token: the tokenizer has no piece {eod_token!r} to end documents "
                             f"with (its eos piece is {sp.id_to_piece(sp.eos_id()) if sp.eos_id() >= 0 else None!r}); "
                             "set eod_token to that piece or train a tokenizer")
    return {"sha256": sha256_bytes(model), "vocab_size": sp.get_piece_size(), "eos_id": eos,
            "eod_token": eod_token, "bos_id": sp.bos_id(), "pad_id": sp.pad_id(), "unk_id": sp.unk_id()}


def encode_batch(sp, texts: list[str], eos_id: int) -> list[list[int]]:
    """Token ids of each document followed by exactly one end-of-document id."""
    # One thread: Spark already runs a worker per core.
    return [ids + [eos_id] for ids in sp.encode([t or "" for t in texts], out_type=int, num_threads=1)]


_PROCESSORS: dict[str, object] = {}


def get_processor(sha: str, load_model: Callable[[], bytes]):
    """One sentencepiece processor per worker process and model."""
    if sha not in _PROCESSORS:
        import sentencepiece as spm

        _PROCESSORS.clear()
        _PROCESSORS[sha] = spm.SentencePieceProcessor(model_proto=load_model())
    return _PROCESSORS[sha]


def token_arrow_schema():
    import pyarrow as pa

    return pa.schema([("id", pa.string()), ("source", pa.string()),
                      ("tokens", pa.list_(pa.int32())), ("n_tokens", pa.int32())])


TOKEN_DDL = "id string, source string, tokens array<int>, n_tokens int"
# the token rows plus what the fertility report sums (never written to the shards)
TOKEN_STATS_DDL = TOKEN_DDL + ", lang string, n_chars bigint, n_words bigint"


def tokenize_partition(load_model: Callable[[], bytes], sha: str, eos_id: int, fertility: bool = False):
    """mapInArrow function: (id, source, text) in, (id, source, tokens, n_tokens) out; with `fertility`,
    (id, source, text, lang) in and TOKEN_STATS_DDL out (each document's characters and words too)."""
    import pyarrow as pa

    schema = token_arrow_schema()
    if fertility:
        schema = pa.schema(list(schema) + [pa.field("lang", pa.string()), pa.field("n_chars", pa.int64()),
                                           pa.field("n_words", pa.int64())])

    def run(batches):
        sp = get_processor(sha, load_model)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            texts = batch.column("text").to_pylist()
            ids = encode_batch(sp, texts, eos_id)
            arrays = [batch.column("id"), batch.column("source"), pa.array(ids, pa.list_(pa.int32())),
                      pa.array([len(x) for x in ids], pa.int32())]
            if fertility:
                langs = batch.column("lang").to_pylist()
                n_chars, n_words = document_lengths(texts, langs)
                arrays += [pa.array(langs, pa.string()), pa.array(n_chars, pa.int64()),
                           pa.array(n_words, pa.int64())]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    return run


# --- fertility per language ----------------------------------------------------------------------
# Summed per language where the documents are encoded (per shard, in the shard writer), then on the
# driver: no second read of the corpus. `tokens` are a document's text tokens: the one end-of-document
# id each document gets is not counted, so a short document's fertility is its text's.
FERTILITY_FIELDS = ("documents", "chars", "words", "tokens")
NO_LANG = "und"     # documents without a language (a corpus that never went through the clean stage)


def document_lengths(texts: list, langs: list) -> tuple[list[int], list[int]]:
    """(characters, words) of each document; words as the heuristics count them (pipeline/clean/words.py)."""
    from pipeline.clean.words import words

    chars = [len(t or "") for t in texts]
    n_words = [len(words(t, lang)) if t else 0 for t, lang in zip(texts, langs)]
    return chars, n_words


def add_fertility(totals: dict, langs, n_chars, n_words, n_tokens) -> dict:
    """Add documents to `totals` ({lang: {documents, chars, words, tokens}}); n_tokens include the
    end-of-document id, which is not counted. Returns totals."""
    for lang, c, w, t in zip(langs, n_chars, n_words, n_tokens):
        row = totals.get(lang or NO_LANG)
        if row is None:
            row = totals[lang or NO_LANG] = dict.fromkeys(FERTILITY_FIELDS, 0)
        row["documents"] += 1
        row["chars"] += int(c)
        row["words"] += int(w)
        row["tokens"] += max(int(t) - 1, 0)
    return totals


def merge_fertility(parts: Iterable[dict]) -> dict:
    """Sum per-language totals (of shards, of sources)."""
    out: dict = {}
    for part in parts:
        for lang, row in part.items():
            acc = out.setdefault(lang, dict.fromkeys(FERTILITY_FIELDS, 0))
            for k in FERTILITY_FIELDS:
                acc[k] += int(row.get(k, 0))
    return out


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def fertility_report(totals: dict) -> list[dict]:
    """One row per language, most tokens first, then "*" for all: documents, chars, words, tokens,
    tokens_per_char, tokens_per_word (None where there are no characters / words)."""
    rows = [{"lang": lang, **{k: int(v[k]) for k in FERTILITY_FIELDS}}
            for lang, v in sorted(totals.items(), key=lambda kv: (-kv[1]["tokens"], kv[0]))]
    if rows:
        rows.append({"lang": "*", **{k: sum(r[k] for r in rows) for k in FERTILITY_FIELDS}})
    for r in rows:
        r["tokens_per_char"] = _ratio(r["tokens"], r["chars"])
        r["tokens_per_word"] = _ratio(r["tokens"], r["words"])
    return rows


def format_fertility(rows: list[dict]) -> str:
    """The report as a small fixed-width table (what `make tokenize` prints)."""
    def num(x, fmt):
        return "-" if x is None else format(x, fmt)

    head = f"  {'lang':<6} {'docs':>9} {'chars':>13} {'words':>12} {'tokens':>12} {'tok/char':>9} {'tok/word':>9}"
    lines = [head]
    for r in rows:
        lines.append(f"  {r['lang']:<6} {r['documents']:>9,} {r['chars']:>13,} {r['words']:>12,} {r['tokens']:>12,} "
                     f"{num(r['tokens_per_char'], '.3f'):>9} {num(r['tokens_per_word'], '.2f'):>9}")
    return "\n".join(lines)


def shard_facts(path: str) -> dict:
    """sha256, documents and tokens of one token shard (run where the file is readable)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    tokens = 0
    for i in range(pf.num_row_groups):
        col = pf.read_row_group(i, columns=["n_tokens"]).column("n_tokens")
        tokens += int(pc.sum(col).as_py() or 0)
    return {"sha256": sha256_file(path), "documents": pf.metadata.num_rows, "tokens": tokens}


# --- writing shards ------------------------------------------------------------------------------
# Shards are written with pyarrow, not Spark's writer: parquet-mr lists a column's encodings in a
# hash-set order that changes from one JVM to the next, so its files are not byte-identical across
# reruns. Row groups are cut by document and token counts only, so the layout depends on the rows alone.
ROW_GROUP_DOCS = 65_536
ROW_GROUP_TOKENS = 1 << 23          # 32 MB of token ids
SHARD_DDL = "shard int, path string, sha256 string, documents bigint, tokens bigint, fertility string"


def pc_sum(column) -> int:
    import pyarrow.compute as pc

    return pc.sum(column).as_py() or 0


def shard_name(i: int) -> str:
    return f"part-{i:05d}.parquet"


class ShardWriter:
    """One token shard: rows arrive sorted, row groups are cut deterministically, the file appears
    under its final name only when complete (a retried task overwrites it whole)."""

    def __init__(self, path: str):
        import pyarrow.parquet as pq

        self.path = path
        self.tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        self.writer = pq.ParquetWriter(self.tmp, token_arrow_schema(), compression="zstd")
        self.pending = []
        self.documents = 0
        self.tokens = 0

    def add(self, table) -> None:
        import numpy as np
        import pyarrow as pa

        self.pending.append(table)
        buf = pa.concat_tables(self.pending)
        while buf.num_rows:
            cum = np.cumsum(buf.column("n_tokens").to_numpy(zero_copy_only=False).astype(np.int64))
            full = np.flatnonzero(cum >= ROW_GROUP_TOKENS)
            cut = min(int(full[0]) + 1 if len(full) else buf.num_rows + 1, ROW_GROUP_DOCS)
            if cut > buf.num_rows:
                break  # not a full row group yet
            self._write(buf.slice(0, cut))
            buf = buf.slice(cut)
        self.pending = [buf]

    def _write(self, table) -> None:
        if table.num_rows:
            # One chunk per column: pyarrow's page layout would otherwise follow the input batches.
            self.writer.write_table(table.combine_chunks(), row_group_size=table.num_rows)
            self.documents += table.num_rows
            self.tokens += int(pc_sum(table.column("n_tokens")))

    def close(self) -> dict:
        import pyarrow as pa

        if self.pending:
            self._write(pa.concat_tables(self.pending))
        self.writer.close()
        os.replace(self.tmp, self.path)
        return {"path": self.path, "sha256": sha256_file(self.path), "documents": self.documents,
                "tokens": self.tokens}


def write_empty_shard(path: str) -> dict:
    return ShardWriter(path).close()


def write_shards_partition(dest_dir: str):
    """mapInArrow function: token rows with a `shard` column, sorted by (shard, id), in; each shard
    written to <dest_dir>/part-NNNNN.parquet; one row of facts per shard out (SHARD_DDL). Rows that
    carry the fertility columns (TOKEN_STATS_DDL) are summed per language into the facts' `fertility`
    (JSON); the shards hold the token columns only."""
    import json

    import numpy as np
    import pyarrow as pa

    columns = token_arrow_schema().names

    def facts_batch(shard: int, facts: dict, fertility: dict):
        return pa.RecordBatch.from_pylist([{"shard": shard, **facts, "fertility": json.dumps(fertility)}],
                                          schema=pa.schema(
            [("shard", pa.int32()), ("path", pa.string()), ("sha256", pa.string()),
             ("documents", pa.int64()), ("tokens", pa.int64()), ("fertility", pa.string())]))

    def run(batches):
        writer, current, fertility = None, None, {}
        for batch in batches:
            if batch.num_rows == 0:
                continue
            shards = batch.column("shard").to_numpy(zero_copy_only=False)
            cuts = [0, *(np.flatnonzero(np.diff(shards)) + 1).tolist(), batch.num_rows]
            with_stats = "n_words" in batch.schema.names
            for a, b in zip(cuts, cuts[1:]):
                shard = int(shards[a])
                if shard != current:
                    if writer is not None:
                        yield facts_batch(current, writer.close(), fertility)
                    writer = ShardWriter(os.path.join(dest_dir, shard_name(shard)))
                    current, fertility = shard, {}
                part = batch.slice(a, b - a)
                writer.add(pa.Table.from_batches([part.select(columns)]))
                if with_stats:
                    add_fertility(fertility, *(part.column(c).to_pylist()
                                               for c in ("lang", "n_chars", "n_words", "n_tokens")))
        if writer is not None:
            yield facts_batch(current, writer.close(), fertility)
    return run
