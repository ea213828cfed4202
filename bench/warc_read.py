"""Benchmark: the WARC reader (pipeline.read.warc.iter_records) against the floor of decompressing the same
files, and optionally against the reader of another git revision.

    python bench/warc_read.py [--against REV] [--rounds N] [WARC ...]

Default files: the bundled sample's crawls (examples/sample/*.warc.gz) and ../shared/data/warc/real. Each
round reads every file whole, interleaving the readers so that the machine's noise falls on all of them alike;
the best round of each counts. Prints MB/s of compressed input, the reader's time over the floor (zlib alone,
member by member), and with --against REV the time of this reader over REV's (git show REV:pipeline/read/warc.py,
loaded from build/). Timed here, not in the tests: wall-clock limits fail on a loaded machine.
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import subprocess
import sys
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.read import warc  # noqa: E402

MAX = 5_000_000


def floor(data: bytes) -> int:
    """Decompress every gzip member in 64 KiB reads, nothing else: what any reader must at least do."""
    n, view, d = 0, memoryview(data), zlib.decompressobj(31)
    for i in range(0, len(data), 1 << 16):
        chunk = view[i:i + (1 << 16)]
        while chunk:
            n += len(d.decompress(chunk))
            chunk, d = (d.unused_data, zlib.decompressobj(31)) if d.eof else (b"", d)
    return n


def reader_at(rev: str):
    """The reader module as it was at a git revision."""
    src = subprocess.run(["git", "show", f"{rev}:pipeline/read/warc.py"], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout
    path = REPO / "build" / "bench" / f"warc_{rev.replace('/', '_')}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"warc_{rev}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def read_all(mod, data: bytes) -> int:
    return sum(1 for _ in mod.iter_records(io.BytesIO(data), max_payload_bytes=MAX))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--against", metavar="REV", help="also time the reader of this git revision")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    files = a.files or sorted((REPO / "examples" / "sample").glob("*.warc.gz"))
    if not a.files:
        names = {f.name for f in files}
        files += sorted(f for f in (REPO.parent / "shared" / "data" / "warc" / "real").glob("*.warc.gz")
                        if f.name not in names)
    blobs = [f.read_bytes() for f in files]
    size = sum(map(len, blobs))
    runs = {"floor": lambda b: floor(b), "reader": lambda b: read_all(warc, b)}
    if a.against:
        old = reader_at(a.against)
        runs[a.against] = lambda b: read_all(old, b)
        assert all(read_all(old, b) == read_all(warc, b) for b in blobs), "the two readers disagree"
    best = {k: float("inf") for k in runs}
    for _ in range(a.rounds):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            for b in blobs:
                fn(b)
            best[name] = min(best[name], time.perf_counter() - t0)
    print(f"{len(files)} files, {size / 1e6:.2f} MB compressed, best of {a.rounds} rounds")
    for name, t in best.items():
        print(f"  {name:>12}: {t * 1000:8.1f} ms  {size / t / 1e6:6.1f} MB/s")
    print(f"reader / floor: {best['reader'] / best['floor']:.2f}")
    if a.against:
        print(f"reader / {a.against}: {best['reader'] / best[a.against]:.3f}")


if __name__ == "__main__":
    main()
