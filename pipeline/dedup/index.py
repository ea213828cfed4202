"""The dedup index of a finished corpus: what a later crawl is deduplicated against (`dedup.against`).

Every dedup stage writes one beside its output, `DATA/dedup_index/`: for each kept document its id,
source, exact-key hash, LSH band keys and shingle-hash set (the same arrays the stage compared), in
Parquet, then `_index.json` last:

    {"kind": "glassbox-dedup-index", "format": 1, "documents": N,
     "settings": {"exact_key": <fingerprint>, "near": {ngram, char_ngram, num_perm, bands, rows, seed, sketch}},
     "files": [{"name", "rows", "bytes"}, ...], "against": [indexes this corpus was deduplicated against]}

A new crawl reads the old corpus's keys instead of its text: no signature of an old document is computed
again. Keys made with other settings or other code would compare nothing with nothing, silently, so the
settings are stored with the keys and a mismatch is refused before any work starts. `exact_key` and
`sketch` are fingerprints of what this code makes of a fixed set of probe texts in many scripts: a change
of normalisation (NFKC, case folding, a script folded into another) or of the shingle hashing changes them
without anyone remembering to bump a version.

An index is read from a local folder or an object store (s3://, through fsspec): a DATA folder (its
`dedup_index/`) or the index folder itself (a copy uploaded anywhere: a "named index"). A missing or
half-written index (a killed run writes `dedup_index.__writing`, never `dedup_index/`), a file missing or
cut short, or a folder that is no Glassbox corpus: each is said with what to do, before Spark starts.

Plain Python, pyarrow and numpy (no Spark): the no-Spark dedup path reads it directly.
"""
from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.dedup.exact import exact_hash
from pipeline.dedup.sketch import sketch_arrays
from pipeline.read.storage import StorageError, glob_inputs, is_url, open_input

# pyarrow.compute, pyarrow.parquet and pipeline.run.units are imported where the index is read or written:
# `glassbox config check` (a process of its own in `make clean-dedup`) opens the indexes of `against` with what
# is above only, a fifth of a second less on every incremental command (issue 42)

INDEX_DIR = "dedup_index"
MANIFEST = "_index.json"  # "_": Parquet readers (Spark, pyarrow) skip it when they read the folder
KIND = "glassbox-dedup-index"
FORMAT = 1
ROW_GROUP = 4096
NEAR_KEYS = ("ngram", "char_ngram", "num_perm", "bands", "rows", "seed")
SCHEMA = pa.schema([("id", pa.string()), ("source", pa.string()), ("exact_hash", pa.string()),
                    ("bands", pa.list_(pa.int64())), ("shingles", pa.binary())])

# What the fingerprints are made of: case, punctuation, compatibility forms, and every script the key
# units treat apart (traditional and simplified Chinese, kana, Thai, Hangul, ...).
PROBES = (
    "The Quick, Brown FOX — jumps over the lazy dog's back (again): 3.14 ﬁne ＡＢＣ１２３!",
    "Straße İstanbul ÇA VA? Ελληνικά ΚΕΦΑΛΑΙΑ, русский ТЕКСТ; עברית; العربية ١٢٣",
    "這是繁體中文的句子，電腦與軟體、資訊學習。这是简体中文的句子，电脑与软件。",
    "日本語のテキストです。カタカナとひらがな、ｶﾀｶﾅ。",
    "ภาษาไทยเขียนติดกันไม่มีช่องว่าง และภาษาลาว ພາສາລາວ",
    "한국어 문장입니다. 띄어쓰기가 있습니다.",
    "",
)


class IndexRefused(ValueError):
    """An `against` entry that cannot be used, with what to do; the config check shows it as is."""


# ---- what an index must agree on ----------------------------------------------------------------

def exact_key_fingerprint() -> str:
    """What this code's exact keys are: a hash of the exact hashes of the probe texts."""
    return hashlib.sha256("\n".join(exact_hash(p) for p in PROBES).encode()).hexdigest()[:16]


def sketch_fingerprint(near) -> str:
    """What this code's shingle hashes and band keys are under `near`'s settings, on the probe texts."""
    fp = sketch_arrays(list(PROBES), near.ngram, near.num_perm, near.bands, near.rows, near.seed, near.char_ngram)
    h = hashlib.sha256(fp.values.astype("<u8").tobytes())
    h.update(fp.offsets.astype("<i8").tobytes())
    h.update(fp.keys.astype("<i8").tobytes())
    return h.hexdigest()[:16]


def key_settings(dedup_cfg) -> dict:
    """The settings an index is made with, and must be read with: the exact key always, the MinHash keys
    when near dedup is on."""
    near = dedup_cfg.near
    return {"exact_key": exact_key_fingerprint(),
            "near": ({**{k: getattr(near, k) for k in NEAR_KEYS}, "sketch": sketch_fingerprint(near)}
                     if near.enabled else None)}


def refusal(have: dict, want: dict) -> str | None:
    """Why an index made with `have` cannot serve a run that wants `want` (None: it can)."""
    if have.get("exact_key") != want["exact_key"]:
        return ("was built by a version of the code that normalises text differently for its exact keys (index "
                f"{have.get('exact_key')}, this code {want['exact_key']})")
    if want["near"] is None:
        return None
    near = have.get("near")
    if near is None:
        return "holds no MinHash keys: its corpus ran with dedup.near.enabled: false"
    diff = [k for k in NEAR_KEYS if near.get(k) != want["near"][k]]
    if diff:
        return ("was built with " + ", ".join(f"dedup.near.{k} {near.get(k)}" for k in diff) + " (this config: "
                + ", ".join(f"{want['near'][k]}" for k in diff) + ")")
    if near.get("sketch") != want["near"]["sketch"]:
        return ("was built by a version of the code whose shingle hashes or MinHash differ (index "
                f"{near.get('sketch')}, this code {want['near']['sketch']})")
    return None


# ---- finding and checking an index --------------------------------------------------------------

@dataclasses.dataclass
class IndexRef:
    where: str       # the index folder: a local path or a URL
    manifest: dict
    digest: str      # sha256 of _index.json: a rebuilt index is another index

    @property
    def files(self) -> list[str]:
        return [f"{self.where}/{f['name']}" for f in self.manifest["files"]]


def _join(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}"


def _listing(folder: str, name: str) -> dict[str, int]:
    """name -> size of the files of `folder` that `name` (a file name or a pattern) matches, local or in a
    store. The folder is taken as written: `/corpora/cc[2024-10]` is a name, not a character class."""
    return {os.path.basename(f.path): f.size for f in glob_inputs(_join(glob.escape(folder), name), Path("/"))}


def _read_json(path: str) -> bytes:
    with open_input(path) as fh:
        return fh.read()


def resolve(entry: str, base: Path) -> str:
    """An `against` entry as written -> an absolute path or a URL."""
    if is_url(entry):
        return entry.rstrip("/")
    p = Path(entry[len("file://"):] if entry.startswith("file://") else entry).expanduser()
    return str((p if p.is_absolute() else base / p).resolve())


def _fix(where: str) -> str:
    return (f"run `make clean-dedup CONFIG=<its config> DATA={where}` again (only the stages that did not finish "
            "run, and its dedup stage writes the index)")


def open_index(where: str, want: dict) -> IndexRef:
    """The index of a DATA folder (its dedup_index/) or an index folder, checked against the settings
    this run compares with (`key_settings`). Raises IndexRefused saying what is wrong and what to do."""
    try:
        return _open(where, want)
    except StorageError as e:
        raise IndexRefused(str(e)) from None


def _open(where: str, want: dict) -> IndexRef:
    if not is_url(where) and not os.path.isdir(where):
        raise IndexRefused(f"{where}: no such folder; name a DATA folder written by `make clean-dedup` "
                           "(or its dedup_index/ folder)")
    if _listing(where, MANIFEST):
        folder = where
    elif _listing(_join(where, INDEX_DIR), MANIFEST):
        folder = _join(where, INDEX_DIR)
    elif _listing(_join(where, INDEX_DIR), "*") or _listing(_join(where, INDEX_DIR) + ".__writing", "*"):
        raise IndexRefused(f"{where}: its dedup index is half-written (no {INDEX_DIR}/{MANIFEST}: the run that "
                           f"wrote it was stopped before the end); {_fix(where)}")
    elif _listing(_join(where, "stats"), "*.json") or _listing(_join(where, "_state"), "*.json"):
        raise IndexRefused(f"{where}: a Glassbox corpus without a dedup index (its dedup stage has not finished, "
                           f"or it was built before dedup indexes existed); {_fix(where)}")
    else:
        raise IndexRefused(f"{where}: not a Glassbox corpus (no {INDEX_DIR}/{MANIFEST}, no stats/); name a DATA "
                           f"folder written by `make clean-dedup`, or a folder holding a dedup index's {MANIFEST}")
    raw = _read_json(_join(folder, MANIFEST))
    try:
        manifest = json.loads(raw)
    except ValueError as e:
        raise IndexRefused(f"{_join(folder, MANIFEST)}: not JSON ({e}); {_fix(where)}") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise IndexRefused(f"{_join(folder, MANIFEST)}: not a Glassbox dedup index (kind {KIND!r} expected)")
    if manifest.get("format") != FORMAT:
        raise IndexRefused(f"{_join(folder, MANIFEST)}: index format {manifest.get('format')}, this code reads "
                           f"format {FORMAT}; {_fix(where)}")
    have = _listing(folder, "*.parquet")
    for f in manifest["files"]:
        if have.get(f["name"]) != f["bytes"]:
            state = "is missing" if f["name"] not in have else f"holds {have[f['name']]} bytes, not {f['bytes']}"
            raise IndexRefused(f"{_join(folder, f['name'])} {state}: the index is incomplete (a copy cut short?); "
                               f"copy it again whole, or {_fix(where)}")
    why = refusal(manifest.get("settings") or {}, want)
    if why:
        raise IndexRefused(f"{folder} {why}: its keys cannot be compared with this run's. Deduplicate with the "
                           "settings it was built with, or rebuild it with these: set them in its config and run "
                           f"`make clean-dedup CONFIG=<its config> DATA={where}` (its dedup stage runs again, with "
                           "this code, and writes the index)")
    return IndexRef(folder, manifest, hashlib.sha256(raw).hexdigest()[:24])


# ---- writing -------------------------------------------------------------------------------------

def index_rows(ids: list[str], sources: list, hashes: list[str], bands: list | None, shingles: list | None
               ) -> pa.Table:
    n = len(ids)
    return pa.table({"id": pa.array(ids, pa.string()), "source": pa.array(sources, pa.string()),
                     "exact_hash": pa.array(hashes, pa.string()),
                     "bands": pa.array(bands, pa.list_(pa.int64())) if bands is not None else pa.nulls(n, pa.list_(pa.int64())),
                     "shingles": pa.array(shingles, pa.binary()) if shingles is not None else pa.nulls(n, pa.binary())},
                    schema=SCHEMA)


def write_parts(folder: str, parts: list[tuple[str, pa.Table]]) -> None:
    """The index's Parquet files into `folder` (a side folder, made here), small row groups, rows as given."""
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    for name, table in parts:
        pq.write_table(table.cast(SCHEMA), os.path.join(folder, name), compression="zstd", row_group_size=ROW_GROUP)


def finish(tmp: str, data_dir: str, settings: dict, against: list[IndexRef]) -> dict:
    """_index.json for the Parquet files in `tmp` (written by either dedup path), then `tmp` swapped in as
    DATA/dedup_index. The manifest comes last: an index without one is a half-written index."""
    import pyarrow.parquet as pq

    from pipeline.run.units import replace_dir, write_json_atomic

    files = []
    for name in sorted(os.listdir(tmp)):
        if name.endswith(".parquet") and not name.startswith(("_", ".")):
            path = os.path.join(tmp, name)
            files.append({"name": name, "rows": pq.read_metadata(path).num_rows, "bytes": os.path.getsize(path)})
        elif not name.startswith("."):
            os.remove(os.path.join(tmp, name))  # Spark's _SUCCESS and checksums are not part of the index
    manifest = {"kind": KIND, "format": FORMAT, "documents": sum(f["rows"] for f in files), "settings": settings,
                "files": files, "against": [{"where": r.where, "digest": r.digest} for r in against],
                "written_at": time.time()}
    write_json_atomic(os.path.join(tmp, MANIFEST), manifest)
    replace_dir(tmp, os.path.join(data_dir, INDEX_DIR))
    return manifest


def writing_dir(data_dir: str) -> str:
    return os.path.join(data_dir, INDEX_DIR + ".__writing")


# ---- reading what a new crawl needs ----------------------------------------------------------------

def _any_in(lists: pa.ChunkedArray | pa.Array, keys: np.ndarray) -> np.ndarray:
    """Per row of a list<int64> column: whether any of its values is in `keys` (sorted, unique)."""
    import pyarrow.compute as pc

    arr = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    out = np.zeros(len(arr), dtype=bool)
    if len(arr) == 0 or len(keys) == 0:
        return out
    values = pc.list_flatten(arr).to_numpy(zero_copy_only=False)
    parents = pc.list_parent_indices(arr).to_numpy(zero_copy_only=False)
    hit = np.isin(values, keys, assume_unique=False)
    out[parents[hit]] = True
    return out


def read_matching(indexes: list[IndexRef], ids: set[str], hashes: set[str], keys: np.ndarray,
                  with_sketches: bool) -> pa.Table:
    """The rows of the old corpora a new crawl can meet: same id, same exact hash, or a band key in common
    (`keys`: the new documents' band keys). Reads every file's id, hash and band columns, and the shingle
    sets of the matching rows only; one file at a time. Adds `_index` (the position in `indexes`)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    keys = np.unique(np.asarray(keys, dtype=np.int64))
    id_set, hash_set = pa.array(sorted(ids), pa.string()), pa.array(sorted(hashes), pa.string())
    parts = []
    for k, ref in enumerate(indexes):
        for path in ref.files:
            with open_input(path) as fh:
                pf = pq.ParquetFile(fh)
                head = pf.read(columns=["id", "exact_hash", "bands"])
                mask = (pc.is_in(head.column("id"), value_set=id_set).to_numpy(zero_copy_only=False)
                        | pc.is_in(head.column("exact_hash"), value_set=hash_set).to_numpy(zero_copy_only=False))
                if with_sketches:
                    mask |= _any_in(head.column("bands"), keys)
                if not mask.any():
                    continue
                rest = pf.read(columns=["source", "shingles"] if with_sketches else ["source"])
                take = pa.array(np.flatnonzero(mask), pa.int64())
                cols = {"id": head.column("id").take(take), "source": rest.column("source").take(take),
                        "exact_hash": head.column("exact_hash").take(take),
                        "bands": head.column("bands").take(take),
                        "shingles": (rest.column("shingles").take(take) if with_sketches
                                     else pa.nulls(len(take), pa.binary()))}
                part = pa.table(cols).cast(SCHEMA)  # Spark names a list's items "element", pyarrow "item"
                parts.append(part.append_column("_index", pa.array(np.full(len(take), k, np.int32))))
    if not parts:
        return pa.table({**{f.name: pa.array([], f.type) for f in SCHEMA}, "_index": pa.array([], pa.int32())})
    return pa.concat_tables(parts)
