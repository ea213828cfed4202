"""Data telemetry of a step's global batch, decoded samples, and the TensorBoard copy of the metrics.

The batch of optimizer step t is samples [d*G, (d+1)*G) of the data order, d = t - 1 + the data shift of
rollbacks (0 without), so everything here is read from the index and the token cache, for the whole global
batch, on rank 0 alone: no collective, and the same numbers under any data/tensor/pipeline layout.

Fields (added to the ``metrics.jsonl`` row of every ``log.every``-th step; prefixes make the report chart
each group together):

  doc_tokens_mean / _p50 / _p90 / _max  full length in tokens of the documents the batch's sequences cut from
  docs_per_batch                        distinct document passes in the batch (a document split across two
                                        sequences counts once; the same document from two epochs twice)
  dup_seq_rate                          1 - distinct sequences / sequences (sha256 of each sequence's tokens)
  dup_doc_rate                          1 - distinct document contents / document passes (sha256 of tokens):
                                        exact duplicates that survived dedup, or one document repeated
  share_<source>                        realized share of the tokens trained so far (updates applied)
  share_target_<source>                 the manifest's share (target_tokens / total)
  interval_share_<source>               realized share over the steps since the previous telemetry row

A run that switched manifest versions (train/data/timeline.py) reports the shares over every source of its
manifests so far (``names``): a source the current version dropped keeps its realized share and has target 0.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path

import numpy as np

from train.data.sample_index import DataOrder

DOC_HASH_CACHE = 1 << 16        # document content hashes kept between telemetry rows


def _sha(tokens: np.ndarray) -> bytes:
    """Content hash of token ids, independent of the cache's integer width."""
    return hashlib.sha256(np.ascontiguousarray(tokens, dtype="<u4").tobytes()).digest()[:16]


class BatchTelemetry:
    def __init__(self, order: DataOrder, global_batch: int, names: list[str] | None = None):
        self.order, self.G = order, global_batch
        self.names = list(names or order.names)
        self._column = np.array([self.names.index(n) for n in order.names], np.int64)   # order's source -> here
        sources = order.manifest.sources
        total = sum(s.target_tokens for s in sources.values())
        self.target = {n: (sources[n].target_tokens / total if total and n in sources else 0.0) for n in self.names}
        self._doc_hash: OrderedDict[tuple[int, int], bytes] = OrderedDict()

    def samples(self, data_step: int) -> range:
        return range(data_step * self.G, (data_step + 1) * self.G)

    def source_counts(self, data_step: int) -> np.ndarray:
        """Sequences per source in the batch (every sequence is seq_len tokens of one source)."""
        return self.counts(data_step * self.G, (data_step + 1) * self.G)

    def counts(self, a: int, b: int) -> np.ndarray:
        """Sequences per source (of ``names``) among global samples [a, b)."""
        src = self._column[self.order.source_slice(a, b)]
        return np.bincount(src, minlength=len(self.names)).astype(np.int64)

    def _content_hash(self, s: int, doc: int) -> bytes:
        key = (s, doc)
        h = self._doc_hash.get(key)
        if h is None:
            h = self._doc_hash[key] = _sha(self.order.streams[s].doc_tokens(doc))
            if len(self._doc_hash) > DOC_HASH_CACHE:
                self._doc_hash.popitem(last=False)
        return h

    def batch(self, data_step: int) -> dict:
        """Length and duplicate statistics of the documents and sequences of one global batch."""
        order = self.order
        passes: dict[tuple[int, int, int], int] = {}       # (source, epoch, document) -> length
        seqs = set()
        for g in self.samples(data_step):
            s, k = order.draw(g)
            stream = order.streams[s]
            pieces = stream.stream_pieces(stream.stream_sequence(k))
            seqs.add(_sha(stream.read([(d, a, b) for d, a, b, _ in pieces])))
            for doc, _, _, epoch in pieces:
                passes[(s, epoch, doc)] = int(stream.doc_lens[doc])
        lens = np.fromiter(passes.values(), dtype=np.float64, count=len(passes))
        contents = {self._content_hash(s, doc) for s, _, doc in passes}
        return {
            "doc_tokens_mean": float(lens.mean()), "doc_tokens_p50": float(np.percentile(lens, 50)),
            "doc_tokens_p90": float(np.percentile(lens, 90)), "doc_tokens_max": float(lens.max()),
            "docs_per_batch": len(passes),
            "dup_seq_rate": 1.0 - len(seqs) / self.G,
            "dup_doc_rate": 1.0 - len(contents) / len(passes),
        }

    def shares(self, cumulative: np.ndarray, interval: np.ndarray) -> dict:
        out = {}
        for name, n, k in zip(self.names, cumulative, interval):
            out[f"share_{name}"] = float(n / cumulative.sum()) if cumulative.sum() else None
            out[f"share_target_{name}"] = self.target[name]
            out[f"interval_share_{name}"] = float(k / interval.sum()) if interval.sum() else None
        return out


class SampleWriter:
    """``samples/step_<N>.txt``: the first sequences of a step's batch decoded with the manifest's tokenizer,
    document by document, with where each piece came from."""

    def __init__(self, run: Path, order: DataOrder, global_batch: int, rows: int = 2):
        self.dir = Path(run) / "samples"
        self.order, self.G, self.rows = order, global_batch, min(rows, global_batch)
        self.tokenizer_path = order.manifest.tokenizer.get("abs_path")
        self._sp = None
        self.disabled: str | None = None

    def _processor(self):
        if self._sp is None:
            import sentencepiece as spm
            self._sp = spm.SentencePieceProcessor(model_file=str(self.tokenizer_path))
        return self._sp

    def write(self, step: int, data_step: int) -> Path | None:
        if self.disabled:
            return None
        try:
            sp = self._processor()
        except (OSError, RuntimeError, ImportError) as e:
            self.disabled = f"cannot load the tokenizer {self.tokenizer_path} ({e}); no decoded samples"
            print(f"warning: {self.disabled}", flush=True)
            return None
        order, L = self.order, self.order.L
        first = data_step * self.G
        lines = [f"step {step}: data batch {data_step} (samples {first}-{first + self.G - 1} of the data order); "
                 f"the first {self.rows} of {self.G} sequences, {L + 1} tokens each (inputs and the shifted "
                 f"targets), decoded with {self.tokenizer_path}", ""]
        for r in range(self.rows):
            g = first + r
            stream, segs = order.segments(g)
            lines.append(f"=== row {r} | sample {g} | source {stream.name} ===")
            for seg, (doc, a, b) in zip(stream.segment_info(segs), segs):
                ids = [int(t) for t in stream.read([(doc, a, b)])]
                lines.append(f"--- document {order.document_id(seg)} ({seg.shard_path} row {seg.row}), "
                             f"tokens [{a}, {b}) of {int(stream.doc_lens[doc])} ---")
                lines.append(sp.decode(ids))
            lines.append("")
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / f"step_{step:08d}.txt"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("\n".join(lines), encoding="utf-8")
        tmp.replace(path)
        return path


class TensorBoardSink:
    """Every numeric field of every metrics row as a TensorBoard scalar (``train/<field>``, ``val/<field>``)
    under ``<run>/tensorboard``. ``writer``: anything with ``add_scalar``/``flush``/``close`` (tests)."""

    SKIP = {"kind", "step", "time"}

    def __init__(self, log_dir: Path, writer=None):
        if writer is None:
            from torch.utils.tensorboard import SummaryWriter
            writer = SummaryWriter(log_dir=str(log_dir))
        self.writer = writer

    def write(self, row: dict) -> None:
        kind, step = row.get("kind", "train"), int(row["step"])
        for key, value in row.items():
            if key in self.SKIP or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            self.writer.add_scalar(f"{kind}/{key}", float(value), step)
        self.writer.flush()        # the trainer leaves with os._exit: nothing may wait in a buffer

    def close(self) -> None:
        self.writer.close()
