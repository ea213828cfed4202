"""The data order: which packed sequence every (step, row) of a run trains on, fixed before step one.

Per source, the training documents form an endless *stream*: epoch e is every training document once, in
an order shuffled by (seed, source, e), end-of-document ids included, epochs back to back. Sequence j of
the stream is tokens [j*L, j*L + L] (L + 1 tokens: inputs and shifted targets; consecutive sequences share
one boundary token, so no token is wasted as a target). The k-th sequence *drawn* from a source is stream
sequence ``j = b*B + perm_b[k - b*B]`` with b = k // B: the stream is cut into blocks of B = epoch tokens //
L sequences and each block is shuffled, so a batch mixes distant documents while every sequence of a block
is drawn exactly once before the next block starts. A source with fractional epochs simply stops part-way.

Sources are interleaved by their planned sequence counts n_s = target_tokens // L: the i-th draw of source
s sits at key (i + 1/2) / p_s with p_s = n_s / sum n, and the index is all draws sorted by key (ties by
source). Every prefix of the index then holds each source in proportion within one sequence, and the
index of M sequences is a prefix of the index of M' > M: a run extended later trains on the same order.

Global sample g of the run -> (source, draw k) is the index; (step, row) -> g is step * global_batch + row.
Everything else (k -> stream sequence -> documents and token offsets) is a few array lookups, so
``DataOrder.locate`` traces any row back to (source, shard, row in the shard, token range) cheaply.

With validation on, each source first holds out whole documents (chosen by a seeded shuffle) for
``samples_per_source`` validation sequences; they never enter the training stream.

The run directory keeps the record (``data_order/``): ``meta.json`` (seed, L, sources, shards, held-out
documents, counts), ``index_source.npy`` / ``index_draw.npy``, and every permutation the index reaches
(``perms/``), so the order can be replayed without trusting a random generator across versions.

A run that switches to another manifest version (train/data/timeline.py) gets one such order per *segment*:
its index starts at global sample ``first_sample`` (the switch's data batch x global batch) and each source's
draws start at ``draw_offset`` (where the same stream stopped in earlier segments), so a source's documents go
on where they left off instead of starting over. Segment 0 has both at 0 and is the order above unchanged.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from train.data.manifest import Manifest, Source
from train.data.shards import ShardCache

VERSION = 1
_EPOCH, _BLOCK, _VAL = 1, 2, 3
VAL_MAX_SHARE = 0.5      # a source whose held-out documents would be more of its tokens gets no validation


def _name_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


def _permutation(seed: int, name: str, kind: int, k: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence([seed, _name_key(name), kind, k]))
    perm = rng.permutation(n)
    return perm.astype(np.int32 if n < 2**31 else np.int64)


@dataclass
class Segment:
    """A piece of one document inside a sequence."""
    source: str
    shard: int            # index in the source's shard list
    shard_path: str       # as written in the manifest
    row: int              # document row in the shard
    start: int            # token offsets within the document, [start, end)
    end: int


class SourceStream:
    """One source's documents, its held-out validation documents and its shuffled training stream."""

    def __init__(self, src: Source, cache: ShardCache, seq_len: int, seed: int, record: Path | None):
        self.src, self.name, self.cache, self.L, self.seed = src, src.name, cache, seq_len, seed
        self.record = record
        offs = [cache.open(sh.sha256)[1] for sh in src.shards]
        self.doc_lens = (np.concatenate([np.diff(o) for o in offs]) if offs else np.zeros(0, np.int64))
        self.shard_doc_start = np.concatenate([[0], np.cumsum([len(o) - 1 for o in offs])]).astype(np.int64)
        self.val_docs = np.zeros(0, np.int64)
        self.train_docs = np.arange(len(self.doc_lens), dtype=np.int64)
        self._cum: dict[int, np.ndarray] = {}
        self._perms: dict[tuple[int, int], np.ndarray] = {}
        self._epoch_tokens = None

    # -- held-out documents -----------------------------------------------------------------------------
    def hold_out(self, samples: int) -> bool:
        """Reserve documents for ``samples`` validation sequences; False when the source is too small."""
        need = samples * self.L + 1
        order = _permutation(self.seed, self.name, _VAL, 0, len(self.doc_lens))
        cum = np.cumsum(self.doc_lens[order])
        if len(cum) == 0 or cum[-1] * VAL_MAX_SHARE < need:
            return False
        n = int(np.searchsorted(cum, need)) + 1
        if n >= len(cum) or cum[n - 1] > cum[-1] * VAL_MAX_SHARE:     # whole documents overshoot the share
            return False
        self.set_val_docs(order[:n])
        return True

    def set_val_docs(self, val_docs: np.ndarray) -> None:
        self.val_docs = np.asarray(val_docs, np.int64)
        keep = np.ones(len(self.doc_lens), bool)
        keep[self.val_docs] = False
        self.train_docs = np.flatnonzero(keep).astype(np.int64)
        self._cum.clear()
        self._perms.clear()
        self._epoch_tokens = None

    # -- the stream -------------------------------------------------------------------------------------
    @property
    def epoch_tokens(self) -> int:
        if self._epoch_tokens is None:
            self._epoch_tokens = int(self.doc_lens[self.train_docs].sum())
        return self._epoch_tokens

    @property
    def block(self) -> int:
        """Sequences per shuffled block (about one epoch)."""
        return max(1, self.epoch_tokens // self.L)

    def perm(self, kind: int, k: int) -> np.ndarray:
        key = (kind, k)
        if key not in self._perms:
            f = self._perm_file(kind, k)
            if f is not None and f.is_file():
                self._perms[key] = np.load(f, mmap_mode="r")
            else:
                n = len(self.train_docs) if kind == _EPOCH else self.block
                self._perms[key] = _permutation(self.seed, self.name, kind, k, n)
        return self._perms[key]

    def _perm_file(self, kind: int, k: int) -> Path | None:
        if self.record is None:
            return None
        return self.record / "perms" / self.name / f"{'epoch' if kind == _EPOCH else 'block'}_{k:05d}.npy"

    def save_perm(self, kind: int, k: int) -> None:
        f = self._perm_file(kind, k)
        arr = np.asarray(self.perm(kind, k))
        if f.is_file():
            if not np.array_equal(np.load(f, mmap_mode="r"), arr):
                raise RuntimeError(f"{f}: the saved permutation differs from the recomputed one")
            return
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".{f.name}.{os.getpid()}.tmp.npy")
        np.save(tmp, arr)
        os.replace(tmp, f)

    def _epoch_cum(self, e: int) -> np.ndarray:
        if e not in self._cum:
            lens = self.doc_lens[self.train_docs[self.perm(_EPOCH, e)]]
            self._cum[e] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        return self._cum[e]

    def stream_sequence(self, k: int) -> int:
        """Draw k -> stream sequence j (the block shuffle)."""
        b, o = divmod(int(k), self.block)
        return b * self.block + int(self.perm(_BLOCK, b)[o])

    def _doc_location(self, doc: int) -> tuple[int, int]:
        shard = int(np.searchsorted(self.shard_doc_start, doc, side="right")) - 1
        return shard, doc - int(self.shard_doc_start[shard])

    def stream_segments(self, j: int) -> list[tuple[int, int, int]]:
        """(document, start, end) pieces of stream sequence j."""
        return [(doc, start, end) for doc, start, end, _ in self.stream_pieces(j)]

    def stream_pieces(self, j: int) -> list[tuple[int, int, int, int]]:
        """(document, start, end, epoch) pieces of stream sequence j: the epoch tells two passes over one
        document apart (telemetry counts a document repeated inside one batch as a duplicate)."""
        E = self.epoch_tokens
        pos, need, out = j * self.L, self.L + 1, []
        while need:
            e, within = divmod(pos, E)
            cum = self._epoch_cum(e)
            i = int(np.searchsorted(cum, within, side="right")) - 1
            doc = int(self.train_docs[self.perm(_EPOCH, e)[i]])
            off = within - int(cum[i])
            take = min(need, int(self.doc_lens[doc]) - off)
            out.append((doc, off, off + take, e))
            pos, need = pos + take, need - take
        return out

    def doc_tokens(self, doc: int) -> np.ndarray:
        """All token ids of document ``doc`` (end-of-document id included), memory-mapped."""
        shard, row = self._doc_location(doc)
        tokens, offsets = self.cache.open(self.src.shards[shard].sha256)
        return tokens[int(offsets[row]):int(offsets[row + 1])]

    def val_segments(self, v: int) -> list[tuple[int, int, int]]:
        """Validation sequence v: [v*L, v*L + L] of the held-out documents back to back."""
        cum = np.concatenate([[0], np.cumsum(self.doc_lens[self.val_docs])])
        pos, need, out = v * self.L, self.L + 1, []
        while need:
            i = int(np.searchsorted(cum, pos, side="right")) - 1
            doc = int(self.val_docs[i])
            off = pos - int(cum[i])
            take = min(need, int(self.doc_lens[doc]) - off)
            out.append((doc, off, off + take))
            pos, need = pos + take, need - take
        return out

    def read(self, segments: list[tuple[int, int, int]]) -> np.ndarray:
        parts = []
        for doc, start, end in segments:
            shard, row = self._doc_location(doc)
            tokens, offsets = self.cache.open(self.src.shards[shard].sha256)
            base = int(offsets[row])
            parts.append(tokens[base + start:base + end])
        return np.concatenate(parts).astype(np.int64)

    def segment_info(self, segments) -> list[Segment]:
        out = []
        for doc, start, end in segments:
            shard, row = self._doc_location(doc)
            out.append(Segment(self.name, shard, self.src.shards[shard].rel_path, row, start, end))
        return out


def blend(counts: list[int], n_samples: int, chunk: float = 4e6) -> tuple[np.ndarray, np.ndarray]:
    """First ``n_samples`` of the interleaving of sources with ``counts`` planned sequences.

    The i-th draw of source s has key (2i + 1) * N / (2 n_s); the order is by (key, s). Keys are
    produced in chunks of key range, so memory stays bounded and the result is the same for any chunk.
    """
    total = sum(counts)
    active = [s for s, n in enumerate(counts) if n > 0]
    if not active:
        raise ValueError("no source has a planned sequence")
    # Keys in [0, K) hold at least K - len(counts)/2 draws, so one chunk of n + len + 2 suffices when small.
    chunk = min(chunk, float(n_samples + len(counts) + 2))
    srcs, draws = [], []
    have, lo = 0, 0.0
    while have < n_samples:
        hi = lo + chunk
        ks, ss, ii = [], [], []
        for s in active:
            scale = total / (2.0 * counts[s])
            i0 = max(0, int(math.floor(lo / (2 * scale) - 1)))
            i1 = int(math.ceil(hi / (2 * scale))) + 2
            i = np.arange(i0, i1, dtype=np.int64)
            key = (2 * i + 1).astype(np.float64) * scale
            sel = (key >= lo) & (key < hi)
            ks.append(key[sel]); ii.append(i[sel]); ss.append(np.full(int(sel.sum()), s, np.uint16))
        key, s_arr, i_arr = np.concatenate(ks), np.concatenate(ss), np.concatenate(ii)
        order = np.lexsort((s_arr, key))
        srcs.append(s_arr[order]); draws.append(i_arr[order])
        have += len(order)
        lo = hi
    return np.concatenate(srcs)[:n_samples], np.concatenate(draws)[:n_samples]


class DataOrder:
    """The run's sample index over packed sequences, its streams and its validation sets."""

    def __init__(self, manifest: Manifest, cache: ShardCache, seq_len: int, record: Path | None = None):
        self.manifest, self.cache, self.L = manifest, cache, seq_len
        self.seed = manifest.seed
        self.record = Path(record) if record is not None else None
        self.names = list(manifest.sources)          # sorted by name; index_source refers to this order
        self.streams = [SourceStream(manifest.sources[n], cache, seq_len, self.seed, self.record)
                        for n in self.names]
        self.planned = [manifest.sources[n].target_tokens // seq_len for n in self.names]
        self.val_sources: list[int] = []
        self.val_samples = 0
        self.index_source = np.zeros(0, np.uint16)
        self.index_draw = np.zeros(0, np.int64)
        self.warnings: list[str] = []
        self._ids: dict[str, list[str]] = {}
        # A later segment of a run (train/data/timeline.py): global sample first_sample is local sample 0, and
        # source s's local draw k is its stream's draw k + draw_offset[s].
        self.first_sample = 0
        self.draw_offset = np.zeros(len(self.names), np.int64)

    # -- building ---------------------------------------------------------------------------------------
    def hold_out(self, samples_per_source: int, only: set[int] | None = None) -> None:
        """Hold out validation documents of every source (of the sources ``only``, when given)."""
        self.val_samples = samples_per_source
        for s, stream in enumerate(self.streams):
            if only is not None and s not in only:
                continue
            if samples_per_source and stream.hold_out(samples_per_source):
                self.val_sources.append(s)
            elif samples_per_source:
                self.warnings.append(f"source {stream.name}: too small to hold out {samples_per_source} "
                                     f"validation sequences (> {VAL_MAX_SHARE:.0%} of its tokens); no val_loss")
        self.val_sources.sort()

    def build(self, n_samples: int) -> None:
        """The index up to global sample ``n_samples`` (from ``first_sample``)."""
        for s, n in enumerate(self.planned):
            if n == 0 and self.manifest.sources[self.names[s]].target_tokens > 0:
                self.warnings.append(f"source {self.names[s]}: target_tokens below one sequence of "
                                     f"{self.L}; it gets no training sequences")
        planned_total = sum(self.planned)
        if n_samples > planned_total:
            self.warnings.append(
                f"the run needs {n_samples} sequences, the manifest plans {planned_total} "
                f"({self.manifest.total_tokens} tokens): sources repeat beyond their planned epochs "
                "in the same proportions")
        self.index_source, self.index_draw = blend(self.planned, n_samples - self.first_sample)
        if self.draw_offset.any():
            self.index_draw = self.index_draw + self.draw_offset[self.index_source]

    @property
    def n_samples(self) -> int:
        """The global sample the index reaches (exclusive)."""
        return self.first_sample + len(self.index_source)

    def source_slice(self, a: int, b: int) -> np.ndarray:
        """Source indices of global samples [a, b)."""
        return np.asarray(self.index_source[a - self.first_sample:b - self.first_sample], np.int64)

    def draw(self, g: int) -> tuple[int, int]:
        """(source index, draw) of global sample g."""
        i = int(g) - self.first_sample
        if i < 0:
            raise IndexError(f"sample {g} precedes this data order, which starts at sample {self.first_sample}")
        return int(self.index_source[i]), int(self.index_draw[i])

    # -- record -----------------------------------------------------------------------------------------
    def meta(self) -> dict:
        srcs = []
        for s, stream in enumerate(self.streams):
            drawn = int((self.index_source == s).sum())
            srcs.append({
                "name": stream.name, "planned_sequences": self.planned[s],
                "share": self.planned[s] / max(1, sum(self.planned)),
                "drawn_sequences": drawn, "documents": int(len(stream.doc_lens)),
                "train_documents": int(len(stream.train_docs)), "epoch_tokens": stream.epoch_tokens,
                "block_sequences": stream.block, "val_documents": stream.val_docs.tolist(),
                "shards": [{"path": sh.rel_path, "sha256": sh.sha256, "documents": sh.documents,
                            "tokens": sh.tokens} for sh in stream.src.shards],
            })
            if self.first_sample:
                srcs[-1]["draw_offset"] = int(self.draw_offset[s])
        meta = {"version": VERSION, "seed": self.seed, "seq_len": self.L, "n_samples": self.n_samples,
                "manifest_content_hash": self.manifest.content_hash, "val_samples_per_source": self.val_samples,
                "val_sources": [self.names[s] for s in self.val_sources], "sources": srcs,
                "warnings": self.warnings}
        if self.first_sample:
            meta["first_sample"] = self.first_sample
        return meta

    def save(self) -> None:
        """Write the record; when one exists, it must be a prefix of this order (same run, extended)."""
        rec = self.record
        rec.mkdir(parents=True, exist_ok=True)
        if (rec / "meta.json").is_file():
            old_src = np.load(rec / "index_source.npy")
            old_draw = np.load(rec / "index_draw.npy")
            local = len(self.index_source)
            n = min(len(old_src), local)
            if not (np.array_equal(old_src[:n], self.index_source[:n])
                    and np.array_equal(old_draw[:n], self.index_draw[:n])):
                raise RuntimeError(f"{rec}: the recorded data order differs from the one rebuilt now; "
                                   "the run cannot continue on this data (start a new RUN)")
            if n == local and len(old_src) >= local:
                self.index_source, self.index_draw = old_src, old_draw
        # Every permutation the index reaches (from the first block a later segment's offset reaches).
        for s, stream in enumerate(self.streams):
            draws = self.index_draw[self.index_source == s]
            if len(draws) == 0:
                continue
            first_block, last_block = int(draws.min()) // stream.block, int(draws.max()) // stream.block
            for b in range(first_block, last_block + 1):
                stream.save_perm(_BLOCK, b)
            last_seq = (last_block + 1) * stream.block - 1
            last_epoch = (last_seq * self.L + self.L) // stream.epoch_tokens
            for e in range(first_block * stream.block * self.L // stream.epoch_tokens, last_epoch + 1):
                stream.save_perm(_EPOCH, e)
        for name, arr in (("index_source.npy", self.index_source), ("index_draw.npy", self.index_draw)):
            tmp = rec / f".{name}.{os.getpid()}.tmp.npy"
            np.save(tmp, arr)
            os.replace(tmp, rec / name)
        tmp = rec / f".meta.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(self.meta(), indent=1))
        os.replace(tmp, rec / "meta.json")

    @classmethod
    def load(cls, manifest: Manifest, cache: ShardCache, record: Path) -> "DataOrder":
        meta = json.loads((Path(record) / "meta.json").read_text())
        order = cls(manifest, cache, meta["seq_len"], record)
        if meta["manifest_content_hash"] != manifest.content_hash:
            raise RuntimeError(f"{record}: recorded for manifest {meta['manifest_content_hash'][:12]}..., "
                               f"not {manifest.content_hash[:12]}...")
        order.val_samples = meta["val_samples_per_source"]
        order.first_sample = int(meta.get("first_sample", 0))
        for s, info in enumerate(meta["sources"]):
            order.streams[s].set_val_docs(np.asarray(info["val_documents"], np.int64))
            order.draw_offset[s] = int(info.get("draw_offset", 0))
        order.val_sources = [order.names.index(n) for n in meta["val_sources"]]
        order.index_source = np.load(Path(record) / "index_source.npy", mmap_mode="r")
        order.index_draw = np.load(Path(record) / "index_draw.npy", mmap_mode="r")
        order.warnings = meta.get("warnings", [])
        return order

    # -- reading ----------------------------------------------------------------------------------------
    def segments(self, g: int) -> tuple[SourceStream, list[tuple[int, int, int]]]:
        s, k = self.draw(g)
        stream = self.streams[s]
        return stream, stream.stream_segments(stream.stream_sequence(k))

    def sample(self, g: int) -> np.ndarray:
        """Global sample g as L + 1 token ids."""
        stream, segs = self.segments(g)
        return stream.read(segs)

    def val_sample(self, s: int, v: int) -> np.ndarray:
        stream = self.streams[s]
        return stream.read(stream.val_segments(v))

    def locate(self, step: int, row: int, global_batch: int) -> list[Segment]:
        """Where (step, row) of the run came from: (source, shard, document row, token range) pieces."""
        stream, segs = self.segments(step * global_batch + row)
        return stream.segment_info(segs)

    def document_id(self, seg: Segment) -> str:
        """The ``id`` column of a segment's document (reads the shard's id column once)."""
        shard = self.manifest.sources[seg.source].shards[seg.shard]
        if shard.sha256 not in self._ids:
            import pyarrow.parquet as pq
            self._ids[shard.sha256] = pq.read_table(shard.path, columns=["id"]).column("id").to_pylist()
        return self._ids[shard.sha256][seg.row]

    def documents(self, samples) -> list[dict]:
        """The documents behind global samples, one entry per document in first-seen order: source, id,
        shard (manifest path), row, its length in tokens, and ``pieces``: [sample, start, end, at] for every
        token range [start, end) of the document that a sample holds at offset ``at`` of its L + 1 tokens."""
        out: dict[tuple[str, int], dict] = {}
        for g in samples:
            stream, segs = self.segments(int(g))
            at = 0
            for seg, (doc, start, end) in zip(stream.segment_info(segs), segs):
                entry = out.get((seg.source, doc))
                if entry is None:
                    entry = out[(seg.source, doc)] = {
                        "source": seg.source, "id": self.document_id(seg), "shard": seg.shard_path, "row": seg.row,
                        "doc_tokens": int(stream.doc_lens[doc]), "pieces": []}
                entry["pieces"].append([int(g), int(start), int(end), at])
                at += end - start
        return list(out.values())
