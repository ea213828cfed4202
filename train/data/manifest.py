"""The mixture manifest: the contract between the corpus half and the trainer.

``<data>/manifests/<name>.json`` is written by ``jobs/mix.py``; this is the trainer's own small reader
(``train/`` never imports ``pipeline/``). It checks the fields the trainer relies on, recomputes the
``content_hash`` (sha256 of the canonical JSON without that key) and resolves every path relative to the
manifest file's directory. Shard bytes are checked against their sha256 in ``train/data/shards.py``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from glassbox.contracts import manifest_content_hash, sha256_bytes


class ManifestError(ValueError):
    """The manifest is missing, malformed, or no longer matches its shards; says what to rebuild."""


REBUILD = "rebuild the manifest (make mix) from the current shards"


@dataclass
class Shard:
    path: Path            # absolute
    rel_path: str         # as written in the manifest
    sha256: str
    documents: int
    tokens: int


@dataclass
class Source:
    name: str
    weight: float
    target_tokens: int
    epochs: float
    available_tokens: int
    available_documents: int
    shards: list[Shard]


@dataclass
class Manifest:
    path: Path
    raw: dict
    name: str
    seed: int
    max_seq_len: int
    total_tokens: int
    tokenizer: dict       # as in the manifest, plus "abs_path"
    content_hash: str
    file_sha256: str
    sources: dict[str, Source]   # sorted by name

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer["vocab_size"])

    @property
    def eos_id(self) -> int:
        return int(self.tokenizer["eos_id"])




def _get(obj: dict, key: str, where: str, types: type | tuple) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ManifestError(f"{where}.{key}: missing; {REBUILD}")
    value = obj[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise ManifestError(f"{where}.{key}: expected a number, got {value!r}")
    if not isinstance(value, types):
        raise ManifestError(f"{where}.{key}: unexpected type {type(value).__name__} ({value!r}); {REBUILD}")
    return value


def read_manifest(path: str | Path) -> Manifest:
    p = Path(path).resolve()
    if not p.is_file():
        raise ManifestError(f"{path}: no such manifest; build it with `make mix` (or pass MANIFEST=...)")
    data = p.read_bytes()
    try:
        raw = json.loads(data)
    except json.JSONDecodeError as e:
        raise ManifestError(f"{path}: not valid JSON ({e}); {REBUILD}") from None
    where = p.name
    name = _get(raw, "name", where, str)
    expected = _get(raw, "content_hash", where, str)
    actual = manifest_content_hash(raw)
    if actual != expected:
        raise ManifestError(f"{path}: content_hash {expected[:12]}... does not match its content "
                            f"({actual[:12]}...): the manifest was edited after it was written; {REBUILD}")
    tok = dict(_get(raw, "tokenizer", where, dict))
    for key in ("path", "sha256"):
        _get(tok, key, f"{where}.tokenizer", str)
    for key in ("vocab_size", "eos_id"):
        _get(tok, key, f"{where}.tokenizer", int)
    tok["abs_path"] = str((p.parent / tok["path"]).resolve())
    sources: dict[str, Source] = {}
    raw_sources = _get(raw, "sources", where, dict)
    if not raw_sources:
        raise ManifestError(f"{where}.sources: empty; {REBUILD}")
    for sname in sorted(raw_sources):
        s = raw_sources[sname]
        sw = f"{where}.sources.{sname}"
        shards = []
        for i, sh in enumerate(_get(s, "shards", sw, list)):
            shw = f"{sw}.shards[{i}]"
            rel = _get(sh, "path", shw, str)
            shards.append(Shard(path=(p.parent / rel).resolve(), rel_path=rel,
                                sha256=_get(sh, "sha256", shw, str),
                                documents=_get(sh, "documents", shw, int), tokens=_get(sh, "tokens", shw, int)))
        sources[sname] = Source(name=sname, weight=float(_get(s, "weight", sw, (int, float))),
                                target_tokens=_get(s, "target_tokens", sw, int),
                                epochs=float(_get(s, "epochs", sw, (int, float))),
                                available_tokens=_get(s, "available_tokens", sw, int),
                                available_documents=_get(s, "available_documents", sw, int),
                                shards=shards)
        if s.get("target_tokens", 0) > 0 and not shards:
            raise ManifestError(f"{sw}.shards: empty but target_tokens > 0; {REBUILD}")
    return Manifest(path=p, raw=raw, name=name, seed=_get(raw, "seed", where, int),
                    max_seq_len=_get(raw, "max_seq_len", where, int),
                    total_tokens=_get(raw, "total_tokens", where, int), tokenizer=tok,
                    content_hash=expected, file_sha256=sha256_bytes(data), sources=sources)
