"""The list files the clean stage reads (content-safety keywords, URL blocklists, OpenCC's character tables):
where the built-in ones live, how a line is read, and the checksums that pin them.

A list file is UTF-8 text, plain or gzipped, one entry a line; `#` starts a comment line and blank lines are
skipped. A line that cannot be read is an error naming the file and the line (`ListError`), raised while the
config is checked, before Spark starts; so is a file with no entry.

The built-in files sit in pipeline/clean/lists/ beside their NOTICE (source repository, commit, licence) and
CHECKSUMS (sha256 of every file): a file that differs from its checksum is refused, so what a run filtered with
is what the repository says (refresh them with `python -m pipeline.clean.refresh_lists`, which rewrites both).
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterator


def _unpacked(root, dest: Path) -> None:
    for item in root.iterdir():
        if item.is_dir():
            (dest / item.name).mkdir()
            _unpacked(item, dest / item.name)
        else:
            (dest / item.name).write_bytes(item.read_bytes())


def _lists_dir() -> Path:
    """The built-in lists as a folder. Under spark-submit the package is imported from build/pipeline.zip, where
    they are zip members: unpack them once per machine into a temporary folder named by their checksums."""
    here = Path(__file__).resolve().parent / "lists"
    if here.is_dir():
        return here
    root = resources.files(__package__) / "lists"
    tag = hashlib.sha256((root / "CHECKSUMS").read_bytes()).hexdigest()[:16]
    dest = Path(tempfile.gettempdir()) / f"glassbox-lists-{tag}"
    if not dest.is_dir():
        work = Path(tempfile.mkdtemp(prefix=dest.name + ".", dir=dest.parent))
        _unpacked(root, work)
        try:
            os.rename(work, dest)        # atomic: another process may have won the race, then use its copy
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
    return dest


LISTS_DIR = _lists_dir()
CHECKSUMS = LISTS_DIR / "CHECKSUMS"


class ListError(ValueError):
    """A list file that cannot be used: the message names the file (and line) and the fix."""


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of every entry line: comments and blank lines skipped."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        opener = gzip.open if gz else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                line = line.rstrip("\r\n")
                if line.strip() and not line.lstrip().startswith("#"):
                    yield n, line
    except FileNotFoundError:
        raise ListError(f"{path}: no such list file") from None
    except UnicodeDecodeError as e:
        raise ListError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); save the list as UTF-8") from None
    except (OSError, EOFError) as e:
        raise ListError(f"{path}: cannot be read ({e})") from None


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=1)
def pinned() -> dict[str, str]:
    """{path relative to lists/: sha256} from CHECKSUMS."""
    out = {}
    for n, line in read_lines(CHECKSUMS):
        digest, _, rel = line.partition("  ")
        if len(digest) != 64 or not rel:
            raise ListError(f"{CHECKSUMS}:{n}: expected '<sha256>  <path>', got {line!r}")
        out[rel] = digest
    return out


@lru_cache(maxsize=None)
def builtin(rel: str) -> Path:
    """The path of a built-in list file, checked against its pinned checksum."""
    path = LISTS_DIR / rel
    want = pinned().get(rel)
    if want is None:
        raise ListError(f"{path}: not pinned in {CHECKSUMS}; run `python -m pipeline.clean.refresh_lists checksums`")
    if not path.is_file():
        raise ListError(f"{path}: missing from the installation (pinned in {CHECKSUMS})")
    got = sha256(path)
    if got != want:
        raise ListError(f"{path}: sha256 {got[:12]}... differs from the pinned {want[:12]}... in {CHECKSUMS}; "
                        f"restore the file or refresh the lists with `python -m pipeline.clean.refresh_lists`")
    return path


def write_checksums() -> None:
    """Pin every file under lists/ (but CHECKSUMS itself) by its sha256."""
    rows = [f"{sha256(p)}  {p.relative_to(LISTS_DIR).as_posix()}" for p in sorted(LISTS_DIR.rglob("*"))
            if p.is_file() and p != CHECKSUMS and p.name != "NOTICE" and "__pycache__" not in p.parts]
    CHECKSUMS.write_text("# sha256 of every built-in list file; written by `python -m pipeline.clean.refresh_lists`\n"
                         + "\n".join(rows) + "\n", encoding="utf-8")
    pinned.cache_clear()
    builtin.cache_clear()
