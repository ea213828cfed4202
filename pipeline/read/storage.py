"""Input paths as URLs: local files, or objects in a store that fsspec reads (s3://, gs://, ...).

The config check globs patterns here on the driver (a listing, never the bytes); the executors open
each file here and stream it with ranged reads, so nothing is downloaded whole to one machine.
Credentials and endpoint come from the standard variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_ENDPOINT_URL, AWS_REGION; GOOGLE_APPLICATION_CREDENTIALS), read by the
store's own client (botocore for s3fs), so a cluster passes them to executors as environment.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from pipeline.rows import local_path

# Object stores read through fsspec, and the package that implements each (installed on demand).
STORE_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs"}
# Schemes we do not read from Python (yet); Spark's own connectors would have to do it.
UNSUPPORTED = ("hdfs://", "abfs://", "abfss://", "wasbs://")
READ_BLOCK = 8 << 20  # ranged reads of this size, read ahead as the reader streams


class StorageError(OSError):
    """A path or store that cannot be listed or read, said in words a user can act on."""


@dataclass(frozen=True)
class InputFile:
    path: str      # absolute local path, or a URL (s3://bucket/key)
    size: int
    version: str   # mtime (local) or ETag (object store): a changed file gets a new fingerprint


def is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower()


def _fs(url: str):
    """The fsspec filesystem of a URL; s3a:// (Spark's name) is read as s3://."""
    scheme = _scheme(url)
    if url.startswith(UNSUPPORTED) or scheme not in STORE_PACKAGES:
        raise StorageError(f"{url}: {scheme}:// is not read by the pipeline; use a local or shared path, "
                           f"or an object store ({', '.join(sorted(set(STORE_PACKAGES)))}://)")
    try:
        import fsspec
        fs = fsspec.filesystem("s3" if scheme == "s3a" else scheme)
    except ImportError:
        pkg = STORE_PACKAGES[scheme]
        raise StorageError(f"{url}: reading {scheme}:// needs the {pkg} package; install the release "
                           f"that matches the installed fsspec (pip install {pkg}==<fsspec's version>) "
                           "in the environment the executors run") from None
    return fs


def _strip(url: str) -> str:
    return url.split("://", 1)[1]


def _explain(url: str, e: Exception) -> str:
    """Turn a store client's error into what to fix."""
    text = f"{type(e).__name__}: {e}"
    low = text.lower()
    bucket = _strip(url).split("/", 1)[0]
    if "nosuchbucket" in low or "bucket does not exist" in low or "specified bucket does not exist" in low:
        return f"{url}: bucket {bucket!r} does not exist (check the name, the region and AWS_ENDPOINT_URL)"
    if any(k in low for k in ("invalidaccesskeyid", "signaturedoesnotmatch", "nocredentials",
                              "unable to locate credentials", "invalidtoken", "expiredtoken",
                              "access key id you provided", "signature we calculated does not match",
                              "security token included in the request is invalid")):
        return (f"{url}: the store refused the credentials ({text[:200]}); set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones)")
    if "accessdenied" in low or "forbidden" in low or isinstance(e, PermissionError):
        return f"{url}: access denied ({text[:200]}); the credentials cannot list or read this bucket"
    if "could not connect" in low or "connect" in low and "endpoint" in low:
        return f"{url}: cannot reach the store ({text[:200]}); check AWS_ENDPOINT_URL and the network"
    return f"{url}: cannot list ({text[:300]})"


def glob_inputs(pattern: str, base: Path) -> list[InputFile]:
    """Every file a pattern matches, sorted; raises StorageError when the store cannot be read."""
    if is_url(pattern):
        fs = _fs(pattern)
        scheme = _scheme(pattern)
        scheme = "s3" if scheme == "s3a" else scheme
        try:
            if any(c in pattern for c in "*?["):
                found = fs.glob(_strip(pattern), detail=True)
            else:
                info = fs.info(_strip(pattern))
                found = {info["name"]: info}
            if not found:  # an empty listing of a missing bucket is not an error in every client
                fs.ls(_strip(pattern).split("/", 1)[0])
        except FileNotFoundError as e:
            if any(c in pattern for c in "*?[") or "bucket" in str(e).lower():
                raise StorageError(_explain(pattern, e)) from None
            return []
        except StorageError:
            raise
        except Exception as e:  # botocore and aiohttp raise many types; the message says which
            raise StorageError(_explain(pattern, e)) from None
        out = []
        for name, info in sorted(found.items()):
            if info.get("type") not in ("file", None):
                continue
            version = str(info.get("ETag") or info.get("etag") or info.get("LastModified") or info.get("mtime") or "")
            out.append(InputFile(f"{scheme}://{name}", int(info.get("size") or 0), version))
        return out
    pattern = pattern[len("file://"):] if pattern.startswith("file://") else pattern
    p = Path(pattern).expanduser()
    full = p if p.is_absolute() else base / p
    out = []
    for m in sorted(glob.glob(str(full), recursive=True)):
        path = Path(m)
        if path.is_file():
            st = path.stat()
            out.append(InputFile(str(path.resolve()), st.st_size, str(st.st_mtime_ns)))
    return out


def open_input(path: str):
    """A seekable binary file over a local path or a URL (streamed with ranged reads)."""
    if is_url(path):
        return _fs(path).open(_strip(path), "rb", block_size=READ_BLOCK, cache_type="readahead")
    return open(local_path(path), "rb")


def basename(path: str) -> str:
    return os.path.basename(local_path(path).rstrip("/"))
