"""The house's layers as code: the import contracts of pyproject.toml ([tool.importlinter]) hold, checked by
import-linter with imports inside functions included; and the check is not one that cannot fail: a copy of
the project with imports planted against two contracts breaks exactly those."""
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

PACKAGES = ("glassbox", "pipeline", "train", "jobs", "quality_models", "ablation", "mixsearch")


def _not_python(folder: str, names: list[str]) -> list[str]:
    """copytree's ignore: only the Python files (and the folders holding them) are copied."""
    return [n for n in names if n == "__pycache__" or (Path(folder, n).is_file() and not n.endswith(".py"))]


def _lint(root: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(exe), "--no-cache", "--no-logo"], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": str(exe.parent)}, timeout=300)


def test_the_layer_contracts_hold():
    out = _lint(REPO)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout and "No circular imports between sibling modules KEPT" in out.stdout


def test_a_planted_import_breaks_its_contract(tmp_path):
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=_not_python)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    load = tmp_path / "train" / "record" / "load.py"
    load.write_text(load.read_text() + "\n\ndef _planted():\n    import torch  # noqa: F401\n")
    local = tmp_path / "pipeline" / "dedup" / "local.py"
    local.write_text(local.read_text() + "\n\ndef _planted():\n    from pipeline.dedup import near  # noqa: F401\n")
    out = _lint(tmp_path)
    assert out.returncode != 0, out.stdout[-4000:]
    broken = [line for line in out.stdout.splitlines() if line.rstrip().endswith("BROKEN")]
    assert len(broken) == 2, out.stdout[-4000:]
    assert "train.record.load -> torch" in out.stdout
    assert "pipeline.dedup.local -> pipeline.dedup.near" in out.stdout
