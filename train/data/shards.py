"""Flat, memory-mappable token arrays per shard, cached by the shard's sha256.

A token shard (Parquet: ``id``, ``source``, ``tokens`` list<int32> ending with one end-of-document id,
``n_tokens``) is read once into

    <cache>/<sha256>.tokens.u16.npy   (u32 when the vocabulary needs it)   all documents back to back
    <cache>/<sha256>.offsets.npy      int64, documents + 1 entries           document d = [o[d], o[d+1])

Keyed by content, the cache is shared by every run and manifest over the same shards, and a shard that
changed can never be served from a stale cache. Verification hashes the file and compares with the
manifest; ``verify: stamp`` skips rehashing a file whose (size, mtime) is the one recorded when it was last
hashed, ``always`` rehashes every start.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from glassbox.contracts import sha256_file
from train.data.manifest import REBUILD, ManifestError, Shard


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.uint32)


def _atomic_json(path: Path, obj) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
    os.replace(tmp, path)


class ShardCache:
    def __init__(self, cache_dir: str | Path, vocab_size: int, eos_id: int):
        self.dir = Path(cache_dir)
        self.vocab_size, self.eos_id = vocab_size, eos_id
        self.dtype = token_dtype(vocab_size)
        self._open: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def tokens_path(self, sha: str) -> Path:
        suffix = "u16" if self.dtype == np.uint16 else "u32"
        return self.dir / f"{sha}.tokens.{suffix}.npy"

    def offsets_path(self, sha: str) -> Path:
        return self.dir / f"{sha}.offsets.npy"

    def _stamp_path(self, sha: str) -> Path:
        return self.dir / f"{sha}.stamp.json"

    # -- verification ---------------------------------------------------------------------------------
    def verify(self, shard: Shard, mode: str = "stamp") -> None:
        """Raise ManifestError naming the file when its bytes are not the manifest's."""
        if not shard.path.is_file():
            raise ManifestError(f"shard {shard.path} (manifest path {shard.rel_path}) is missing; {REBUILD}")
        st = shard.path.stat()
        stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
        stamps = {}
        sp = self._stamp_path(shard.sha256)
        if sp.is_file():
            try:
                stamps = json.loads(sp.read_text())
            except ValueError:
                stamps = {}
        if mode == "stamp" and stamps.get(str(shard.path)) == stamp:
            return
        actual = sha256_file(shard.path)
        if actual != shard.sha256:
            raise ManifestError(f"shard {shard.path} changed: its sha256 is {actual}, the manifest says "
                                f"{shard.sha256}; the manifest must be rebuilt (make mix) from the current "
                                "shards, or the shard restored")
        self.dir.mkdir(parents=True, exist_ok=True)
        stamps[str(shard.path)] = stamp
        _atomic_json(sp, stamps)

    # -- building -------------------------------------------------------------------------------------
    def ensure(self, shard: Shard) -> None:
        """Build the flat arrays of a (verified) shard unless they are cached."""
        if self.tokens_path(shard.sha256).is_file() and self.offsets_path(shard.sha256).is_file():
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        pf = pq.ParquetFile(shard.path)
        names = set(pf.schema_arrow.names)
        if not {"tokens", "n_tokens"} <= names:
            raise ManifestError(f"shard {shard.path}: columns tokens and n_tokens are required, found "
                                f"{sorted(names)}")
        tmp_tok = self.dir / f".{shard.sha256}.{os.getpid()}.tokens.npy"
        out = np.lib.format.open_memmap(tmp_tok, mode="w+", dtype=self.dtype, shape=(shard.tokens,))
        offsets = np.zeros(shard.documents + 1, dtype=np.int64)
        pos = doc = 0
        for batch in pf.iter_batches(columns=["tokens", "n_tokens"], batch_size=8192):
            col = batch.column("tokens")
            if col.null_count:
                raise ManifestError(f"shard {shard.path}: null token lists")
            lengths = pc.list_value_length(col).to_numpy().astype(np.int64)
            if not np.array_equal(lengths, batch.column("n_tokens").to_numpy().astype(np.int64)):
                raise ManifestError(f"shard {shard.path}: n_tokens disagrees with len(tokens)")
            values = pc.list_flatten(col).to_numpy()
            n, k = len(values), len(lengths)
            if pos + n > shard.tokens or doc + k > shard.documents:
                raise ManifestError(f"shard {shard.path}: more tokens or documents than the manifest's "
                                    f"{shard.tokens} / {shard.documents}; {REBUILD}")
            if n and (values.min() < 0 or values.max() >= self.vocab_size):
                raise ManifestError(f"shard {shard.path}: token ids outside [0, {self.vocab_size}) "
                                    "(tokenizer mismatch?)")
            out[pos:pos + n] = values
            offsets[doc + 1:doc + k + 1] = pos + np.cumsum(lengths)
            pos, doc = pos + n, doc + k
        if pos != shard.tokens or doc != shard.documents:
            raise ManifestError(f"shard {shard.path}: {doc} documents / {pos} tokens, the manifest says "
                                f"{shard.documents} / {shard.tokens}; {REBUILD}")
        if doc and (np.diff(offsets) < 1).any():
            raise ManifestError(f"shard {shard.path}: empty documents (each needs at least its end id)")
        if doc and not (out[offsets[1:] - 1] == self.eos_id).all():
            raise ManifestError(f"shard {shard.path}: a document does not end with eos_id {self.eos_id}")
        out.flush()
        del out
        tmp_off = self.dir / f".{shard.sha256}.{os.getpid()}.offsets.npy"
        np.save(tmp_off, offsets)
        os.replace(tmp_off, self.offsets_path(shard.sha256))
        os.replace(tmp_tok, self.tokens_path(shard.sha256))

    # -- reading --------------------------------------------------------------------------------------
    def open(self, sha: str) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, offsets), memory-mapped."""
        if sha not in self._open:
            self._open[sha] = (np.load(self.tokens_path(sha), mmap_mode="r"),
                               np.load(self.offsets_path(sha), mmap_mode="r"))
        return self._open[sha]
