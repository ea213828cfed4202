"""`glassbox ablate` end to end on a planted case (ablation/): the real pipeline stages (in the local executor's
processes, as `make` runs a corpus this small), real proxy training.

Clean prose (WikiText-2 paragraphs) plus generated spam, the heuristic rules off in the base and on in the
variant (the keyword lists off in both: they catch some of the spam too): the variant must come out "better" on held-out prose; the base again with other seeds (the null
control) must come out "within noise". The ablation is killed while its proxies train, and the rerun must
reuse the finished corpora and proxies instead of rebuilding or retraining them."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ablation.planted import write_planted

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.trainer]
STEPS = 40


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    root = tmp_path_factory.mktemp("ablate")
    planted = write_planted(str(REPO / "quality_models/data/wikitext-2-valid.txt"), str(root / "planted"),
                            spam_docs=500, heldout_fraction=0.15, max_prose_docs=160)
    files = planted["files"]
    base = {"sources": {"prose": {"format": "jsonl", "paths": [files["prose-train"]]},
                        "spam": {"format": "jsonl", "paths": [files["spam"]]}},
            "clean": {"languages": ["en"], "rules": [], "safety": {"reject": []}},   # no rule, no keyword list
            "decontaminate": {"benchmarks": []},
            "tokenize": {"vocab_size": 1024, "shards_per_source": 1},
            "dedup": {"shards": 1},
            "spark": {"spark.sql.shuffle.partitions": 2, "spark.ui.enabled": False}}
    (root / "pipeline.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
    spec = {"name": "planted", "base": str(root / "pipeline.yaml"), "out": str(root / "out"),
            "variants": {"null_control": {"seeds": [4, 5, 6]}, "heuristics": {"set": {"clean.rules": None}}},
            "proxy": {"config": str(REPO / "examples/ablate/proxy.yaml"), "tokens": STEPS * 16 * 64, "parallel": 2},
            "seeds": [1, 2, 3],
            "evaluations": {"prose": {"paths": [files["prose-heldout"]], "format": "jsonl", "max_tokens": 8192}}}
    path = root / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path, root / "out"


def ablate(spec_path, **kw):
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_MASTER": "local[2]", "SPARK_LOCAL_IP": "127.0.0.1"}
    cmd = [sys.executable, "-m", "glassbox.cli", "ablate", str(spec_path)]
    if kw.pop("background", False):
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


def test_killed_ablation_resumes_and_the_controls_hold(spec):
    spec_path, out = spec
    # 1. Killed while proxies train (two at a time), once the corpora and the first proxy are finished.
    t0 = time.time()
    proc = ablate(spec_path, background=True)
    first = out / "proxies" / "base-s1"
    while not list(first.glob("checkpoints/step_*/complete.json")):
        assert proc.poll() is None, proc.stdout.read()[-4000:]
        assert time.time() - t0 < 600, "the first proxy did not finish in 10 minutes"
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGKILL)
    first_log = proc.communicate()[0]
    # small corpora are built as make builds them: in local processes, no JVM (pipeline/run/local.py)
    assert "executor: local Python processes x2, no JVM" in first_log and "spark: session" not in first_log, \
        first_log[-3000:]
    finished = {p.parent.parent.parent.name for p in (out / "proxies").glob("*/checkpoints/step_*/complete.json")}
    stamps = {n: (out / "proxies" / n / "metrics.jsonl").stat() for n in finished}
    assert "base-s1" in finished and len(finished) < 9, finished

    # 2. The rerun: no corpus rebuilt (no Spark at all), the finished proxies reused, the rest trained.
    r = ablate(spec_path)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    log = r.stdout
    assert "executor:" not in log and "spark: session" not in log
    assert log.count("finished earlier with the same config; reused") == 2
    reused = set(re.findall(r"proxy \d/9 (\S+): reused", log))
    assert reused == finished and len(re.findall(r"proxy \d/9 \S+: (?:trained|resumed) in", log)) == 9 - len(finished), log
    for n, st in stamps.items():
        again = (out / "proxies" / n / "metrics.jsonl").stat()
        assert (again.st_mtime_ns, again.st_size) == (st.st_mtime_ns, st.st_size), n

    # 3. The controls: the null control within noise, the heuristics better on held-out prose.
    res = json.loads((out / "results.json").read_text())
    prose = res["evaluations"]["prose"]["variants"]
    assert prose["null_control"]["vs_base"]["verdict"] == "within noise", prose
    assert prose["heuristics"]["vs_base"]["verdict"] == "better", prose
    assert "null_control" in log and "within noise" in log and "better" in log
    # What each variant kept: the base keeps the spam, the heuristics drop (nearly) all of it; the proxies all
    # trained on exactly the budget, the smaller corpus repeated more.
    kept = {v: res["variants"][v]["kept"]["sources"] for v in ("base", "heuristics")}
    assert kept["base"]["spam"]["documents"] >= 480 and kept["heuristics"].get("spam", {}).get("documents", 0) <= 5
    assert res["proxy"]["tokens"] == STEPS * 1024
    assert all(p["curve"][-1][0] == STEPS * 1024 for v in res["variants"].values() for p in v["proxies"])
    prose_epochs = lambda v: res["variants"][v]["proxies"][0]["epochs"]["prose"]["planned_epochs"]
    assert prose_epochs("heuristics") > prose_epochs("base")
    page = (out / "report.html").read_text()
    assert page.count('<tr class="verdict">') == 2 and "proxies/heuristics-s2" in page
