"""Write the archive executors import the project from (`spark-submit --py-files build/pipeline.zip`):
every file of the given packages, data files included (the built-in calibration table is read as
package data), caches left out.

    python scripts/executor_zip.py OUT.zip pipeline glassbox
"""
import sys
import zipfile
from pathlib import Path


def package_files(packages: list[str]) -> list[Path]:
    return [p for d in packages for p in sorted(Path(d).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]


def write(out: str, packages: list[str]) -> int:
    files = package_files(packages)
    with zipfile.ZipFile(out, "w") as z:
        for p in files:
            z.write(p)
    return len(files)


if __name__ == "__main__":
    write(sys.argv[1], sys.argv[2:])
