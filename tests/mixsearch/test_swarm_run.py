"""glassbox mix-search on a tiny real corpus (tests/mixsearch/mixsearch_fixtures.py): a swarm of real proxies killed while it
trains and run again (no finished proxy trains twice; one row per proxy), the fit and report from its file; mixture
reuse with a third source (the searched pair frozen as one virtual domain); and the verify step's verdicts."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mixsearch_fixtures import make_data, spec_text
from train.record.trace import read_jsonl
from train_fixtures import REPO

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}


def cli(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "glassbox.cli", "mix-search", *map(str, args)], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, **kw)


rows = read_jsonl   # swarm.jsonl, a line cut short by a kill skipped


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """A two-domain swarm of 3 proxies, killed after its first row and run again to the end."""
    root = tmp_path_factory.mktemp("mixsearch")
    files = make_data(root)
    spec = root / "spec.yaml"
    out = root / "out"
    spec.write_text(spec_text("tiny", files, out, n=3, domains=["alpha", "beta"]))
    swarm = out / "swarm.jsonl"
    p = cli(spec, "--no-verify")
    deadline = time.time() + 300
    while not rows(swarm) and time.time() < deadline and p.poll() is None:
        time.sleep(0.5)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    before = {r["run"]: r for r in rows(swarm)}
    assert 1 <= len(before) < 3, "the swarm must be killed part-way"
    stamps = {r: (out / "proxies" / r / "checkpoints").stat().st_mtime_ns for r in before}
    p = cli(spec, "--no-verify")
    log, _ = p.communicate(timeout=600)
    assert p.returncode == 0, log[-3000:]
    return {"root": root, "files": files, "spec": spec, "out": out, "before": before, "stamps": stamps, "log": log}


@pytest.mark.trainer
def test_a_killed_swarm_continues_and_never_trains_a_finished_proxy_again(searched):
    out, before = searched["out"], searched["before"]
    after = rows(out / "swarm.jsonl")
    assert sorted(r["run"] for r in after) == ["p000", "p001", "p002"]          # one row per proxy, none twice
    for r in after:
        assert set(r) >= {"run", "weights", "tokens", "seed", "losses"} and set(r["weights"]) == {"alpha", "beta"}
        assert abs(sum(r["weights"].values()) - 1) < 1e-6 and r["tokens"] == 2048 and 0 < r["losses"]["wiki"] < 10
        if r["run"] in before:
            assert r == before[r["run"]]
    for run, stamp in searched["stamps"].items():                                # not trained again
        assert (out / "proxies" / run / "checkpoints").stat().st_mtime_ns == stamp
    assert f"{len(before)} in {out / 'swarm.jsonl'} already, {3 - len(before)} to go" in searched["log"]
    prop = json.loads((out / "fit" / "proposal.json").read_text())
    assert set(prop["weights"]) == {"alpha", "beta"} and abs(sum(prop["weights"].values()) - 1) < 1e-9
    assert prop["fit"]["kind"] in ("loglinear", "linear") and "wiki" in prop["predicted"]
    assert prop["constraints"]["budget"] == 2048 and (out / "report.html").is_file()
    # the fit again from the file alone, as anyone's swarm
    r = subprocess.run([sys.executable, "-m", "glassbox.cli", "mix-search", "fit", str(out / "swarm.jsonl"), "--out",
                        str(searched["root"] / "refit")], cwd=REPO, env=ENV, capture_output=True, text=True)
    assert r.returncode == 0 and "proposal.json" in r.stdout, r.stderr


@pytest.mark.trainer
def test_reuse_searches_a_frozen_virtual_domain_and_the_new_source(searched):
    """A third source added to the searched pair: the pair's proposal frozen as one domain, 3 proxies over
    {frozen, gamma} where a full search over three domains would need at least 4 (Olmix: about 15)."""
    root, files = searched["root"], searched["files"]
    frozen = {"name": "searched", "from": str(searched["out"] / "fit" / "proposal.json")}
    spec = root / "reuse.yaml"
    spec.write_text(spec_text("reuse", files, root / "reuse", n=3, domains=["alpha", "beta", "gamma"], frozen=frozen))
    p = cli(spec, "--no-verify")
    log, _ = p.communicate(timeout=600)
    assert p.returncode == 0, log[-3000:]
    old = json.loads((searched["out"] / "fit" / "proposal.json").read_text())["weights"]
    got = rows(root / "reuse" / "swarm.jsonl")
    assert len(got) == 3 and all(set(r["weights"]) == {"searched", "gamma"} for r in got)
    man = json.loads((root / "reuse" / "manifests" / "swarm-p000.json").read_text())["sources"]
    if old["alpha"] > 0 and old["beta"] > 0:            # the frozen pair keeps its proportions inside every mixture
        assert man["alpha"]["weight"] / man["beta"]["weight"] == pytest.approx(old["alpha"] / old["beta"], rel=1e-3)
    prop = json.loads((root / "reuse" / "fit" / "proposal.json").read_text())
    assert set(prop["weights"]) == {"searched", "gamma"}
    assert set(prop["sources"]) == {"alpha", "beta", "gamma"}
    assert sum(prop["sources"].values()) == pytest.approx(1.0)


@pytest.mark.trainer
@pytest.mark.slow
def test_verify_trains_three_arms_on_paired_seeds(searched):
    p = cli("verify", searched["spec"])
    log, _ = p.communicate(timeout=900)
    assert p.returncode == 0, log[-3000:]
    res = json.loads((searched["out"] / "verify" / "results.json").read_text())
    assert res["seeds"] == [1, 2] and set(res["mixtures"]) >= {"natural", "doremi", "proposal"}
    for comp in ("proposal - natural", "proposal - doremi", "doremi - natural"):
        v = res["comparisons"][comp]["wiki"]
        assert v["verdict"] in ("better", "worse", "noise") and v["low"] <= v["diff"] <= v["high"]
    c = res["predicted_vs_measured"]["wiki"]
    assert c["low"] <= c["measured"] <= c["high"] and c["predicted"] > 0
    assert set(res["doremi_evidence"]["val_bpb"]) == {"alpha", "beta"}
    page = (searched["out"] / "report.html").read_text()
    assert 'id="verdicts"' in page and "DoReMi step" in page and "proposed" in page
