"""`make pretrain` refusing a run: the trainer's own message and a non-zero status, without torchrun's
ChildFailedError traceback (train/launch.py)."""
import os
import subprocess

import pytest

from tests.conftest import REPO
from train_fixtures import make_dataset


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("launch") / "data", total_tokens=20_000, max_seq_len=32)


def make_pretrain(manifest, run, *extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    return subprocess.run(["make", "--no-print-directory", "pretrain", "CONFIG=train/configs/tiny.yaml",
                           f"MANIFEST={manifest}", f"RUN={run}", *extra], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env={**env, "OMP_NUM_THREADS": "1"})


@pytest.mark.parametrize("case", ["steps0", "bad_manifest", "changed_shard"])
@pytest.mark.trainer
def test_refused_run_shows_the_message_not_a_traceback(manifest, tmp_path, case):
    if case == "steps0":
        r = make_pretrain(manifest, tmp_path / "run", "STEPS=0")
        message = "error: --steps: must be >= 1, got 0"
    elif case == "bad_manifest":
        bad = tmp_path / "bad.json"
        bad.write_text('{"name": "x"}')
        r = make_pretrain(bad, tmp_path / "run", "STEPS=1")
        message = "rebuild the manifest"
    else:
        data = manifest.parent.parent
        copy = tmp_path / "data"
        subprocess.run(["cp", "-r", str(data), str(copy)], check=True)
        shard = sorted((copy / "tokenized").rglob("*.parquet"))[0]
        raw = bytearray(shard.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        shard.write_bytes(bytes(raw))
        r = make_pretrain(copy / "manifests" / manifest.name, tmp_path / "run", "STEPS=1")
        message = shard.name
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert message in out, out[-3000:]
    assert "launch: rank 0 exited with status 2" in r.stderr, out[-3000:]
    assert "Traceback" not in out and "ChildFailedError" not in out, out[-3000:]
