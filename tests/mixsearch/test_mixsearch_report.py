"""The mixture search's page (mixsearch/report.py) from a real fit of a synthetic swarm and verify figures summarised
by mixsearch.verify.summarize, rendered in headless Chromium: the weight bars, a predicted-vs-measured chart per
target with a point per proxy and the proposal's, the verdict table; nothing requested from anywhere."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

from browser import chromium
from test_fit import AVAILABLE, BUDGET, MAX_EPOCHS, write_swarm

from mixsearch.fit import run_fit
from mixsearch.report import write_report
from mixsearch.verify import summarize

PROBE = """<script>
addEventListener("load", () => {
  const pre = document.createElement("pre"); pre.id = "probe";
  const svgs = [...document.querySelectorAll("svg")].map(s => s.id + ":" + Math.round(s.getBoundingClientRect().width)
      + ":" + s.querySelectorAll("circle").length + ":" + s.querySelectorAll("rect").length);
  pre.textContent = "SVG " + svgs.join(" ") + " VERDICTS " + document.querySelectorAll("#verdicts tr").length;
  document.body.appendChild(pre);
});
</script>"""


def test_the_page_shows_weights_predictions_and_verdicts(tmp_path):
    out = tmp_path / "search"
    swarm = out / "swarm.jsonl"
    out.mkdir()
    write_swarm(swarm)
    (tmp_path / "a.json").write_text(json.dumps(AVAILABLE))
    prop = run_fit(str(swarm), str(out / "fit"), available=str(tmp_path / "a.json"), budget=BUDGET,
                   max_epochs=MAX_EPOCHS, min_weight=0.02)
    targets = sorted(prop["predicted"])
    measured = {"natural": {t: [1.50, 1.52, 1.49] for t in targets},
                "doremi": {t: [1.48, 1.51, 1.50] for t in targets},
                "proposal": {t: [1.40, 1.42, 1.41] for t in targets}}
    ver = summarize(measured, targets, [1, 2, 3], 0.95, prop["predicted"])
    assert ver["comparisons"]["proposal - natural"][targets[0]]["verdict"] == "better"
    assert ver["comparisons"]["doremi - natural"]["mean"]["verdict"] == "noise"
    ver.update(tokens=163840, mixtures={"natural": prop["natural"], "proposal": prop["weights"],
                                        "doremi": prop["natural"], "doremi_search": prop["natural"]})
    (out / "verify").mkdir()
    (out / "verify" / "results.json").write_text(json.dumps(ver))
    (out / "swarm.json").write_text(json.dumps({"swarm": {"n": 15, "concentration": 4, "seed": 0},
                                                "domains": sorted(AVAILABLE), "tokens": 163840, "steps": 160,
                                                "targets": {t: "digest" for t in targets}}))
    page = write_report(SimpleNamespace(name="synthetic", out_dir=str(out)))
    text = open(page, encoding="utf-8").read()
    assert "http" not in text.replace("http://www.w3.org", "")
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE + "</body>"))
    dom = chromium("--dump-dom", probe.as_uri(), tmp_path=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="probe">SVG (.*?) VERDICTS (\d+)</pre>', dom.stdout)
    assert m, dom.stdout[-2000:]
    charts = {s.split(":")[0]: [int(x) for x in s.split(":")[1:]] for s in m.group(1).split()}
    assert set(charts) == {"weights", "scatter-0", "scatter-1"}
    assert charts["weights"][0] > 500 and charts["weights"][2] >= 9          # 3 domains x 3 mixtures of bars
    assert charts["scatter-0"][1] == 16 and charts["scatter-1"][1] == 16     # 15 proxies and the proposal
    assert int(m.group(2)) == 1 + 3 * (len(targets) + 1)                     # header + 3 comparisons x (targets, mean)
