"""``python -m train.record.trace RUN --step N``: the documents of a step's batch, from the record alone.

The shared 2-process run of ``tests/watch_fixtures.py`` logged (``data.log_consumed``) a CRC of the tokens
each rank actually fed the model, micro-batch by micro-batch. The trace's pieces, read back from the Parquet
token shards by (shard, row, token range), must rebuild exactly those micro-batches; and every document's
url and quality signals must be the ones written to the corpus's ``decontaminated/`` shards for its id.
"""
import json
import shutil
import subprocess
import sys
import zlib

import numpy as np
import pyarrow.parquet as pq
import pytest

from train.record.trace import main as trace_main
from watch_fixtures import REPO, SIGNALS, shared_run

G, MB, DP = 8, 2, 2


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    manifest, run, _ = shared_run(tmp_path_factory.getbasetemp())
    return manifest, run


class Done:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def _cli(*args, capsys=None):
    """``python -m train.record.trace ARGS``: in this process when capsys is given (fast), else a real subprocess."""
    if capsys is None:
        return subprocess.run([sys.executable, "-m", "train.record.trace", *map(str, args)], cwd=REPO, capture_output=True,
                              text=True, timeout=300)
    rc = trace_main([str(a) for a in args])
    out = capsys.readouterr()
    return Done(rc, out.out, out.err)


@pytest.mark.trainer
def test_trace_rebuilds_what_each_rank_was_fed(shared):
    manifest, run = shared
    step = 6
    r = _cli(run, "--step", step, "--json")                           # the real command line
    assert r.returncode == 0, r.stderr
    t = json.loads(r.stdout)
    assert t["data_step"] == step - 1 and t["samples"] == [(step - 1) * G, step * G]
    assert t["trained"] and t["update_skipped"] is False and t["signals_from"].endswith("decontaminated")
    # Rebuild the 8 sequences from the Parquet shards (the manifest's shard paths, not the token cache).
    data = manifest.parent
    seqs = {g: {} for g in range(*t["samples"])}
    for d in t["documents"]:
        tokens = pq.read_table((data / d["shard"]).resolve(), columns=["tokens"]).column("tokens")[d["row"]].as_py()
        assert len(tokens) == d["doc_tokens"]
        for g, a, b, at in d["pieces"]:
            seqs[g][at] = tokens[a:b]
    rebuilt = {}
    for g, parts in seqs.items():
        seq = [tok for at in sorted(parts) for tok in parts[at]]
        assert len(seq) == 33 and sorted(parts) == [0] + list(np.cumsum([len(parts[a]) for a in sorted(parts)])[:-1])
        rebuilt[g] = np.asarray(seq, np.int64)
    fed = [json.loads(x) for dp in range(DP) for x in (run / "consumed" / f"dp{dp}.jsonl").read_text().splitlines()]
    mine = [x for x in fed if x["step"] == step - 1]
    assert len(mine) == DP * (G // (MB * DP))
    for x in mine:
        assert x["crc32"] == zlib.crc32(np.stack([rebuilt[g] for g in x["samples"]]).tobytes())
    assert sorted(g for x in mine for g in x["samples"]) == list(range(*t["samples"]))
    # Provenance and signals joined on id from decontaminated/.
    for d in t["documents"]:
        want = SIGNALS[d["id"]]
        assert {k: d[k] for k in want} == want, d["id"]
        assert d["rows"] == sorted({g - t["samples"][0] for g, *_ in d["pieces"]})
    assert any(d["source"] == "boiler" and d["url"] is None for d in t["documents"])


@pytest.mark.trainer
def test_trace_table_and_errors(shared, capsys):
    manifest, run = shared
    r = _cli(run, "--step", 3)                                        # the real command line, once
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{run} step 3: data batch 2 (samples 16-23")
    t = json.loads(_cli(run, "--step", 3, "--json", capsys=capsys).stdout)
    for d in t["documents"]:
        assert any(d["id"] in line and d["source"] in line for line in lines)
        if d["url"]:
            assert any(d["url"] in line for line in lines)
    r = _cli(run, "--step", 10_000, capsys=capsys)
    assert r.returncode == 2 and "data order holds" in r.stderr
    r = _cli(run.parent / "nope", "--step", 1, capsys=capsys)
    assert r.returncode == 2 and "no such run directory" in r.stderr



@pytest.mark.trainer
def test_trace_of_a_step_not_logged_yet(shared, tmp_path, capsys):
    """A run killed at step 4 (its record copied, metrics cut there): step 6 is traced from the order alone."""
    _, run = shared
    cut = tmp_path / "cut"
    cut.mkdir()
    for name in ("config.json", "run.json"):
        shutil.copy(run / name, cut / name)
    shutil.copytree(run / "data_order", cut / "data_order")
    rows = [x for x in (run / "metrics.jsonl").read_text().splitlines() if json.loads(x)["step"] <= 4]
    (cut / "metrics.jsonl").write_text("\n".join(rows) + "\n")
    r = _cli(cut, "--step", 6, capsys=capsys)
    assert r.returncode == 0 and "no metrics row for step 6 (last logged 4)" in r.stdout
    assert json.loads(_cli(cut, "--step", 6, "--json", capsys=capsys).stdout)["documents"] == \
        json.loads(_cli(run, "--step", 6, "--json", capsys=capsys).stdout)["documents"]
