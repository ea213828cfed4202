"""The ablation's page (ablation/report.py): self-contained (no script, link or remote source), and as headless
Chromium renders it: the verdict rows, the SVG charts drawn, and no request leaving the file."""
import json
import re

import pytest

from ablation.report import build_page, write_report
from ablation.stats import paired, spread
from browser import chromium, decode_png


def results() -> dict:
    """A results.json as ablation/run.py writes it, for three variants of two seeds (numbers made up here: the
    page is under test, not the ablation)."""
    losses = {"base": [5.00, 5.02], "null_control": [5.01, 5.00], "no_<rules>&": [5.40, 5.43]}
    seeds = {"base": [1, 2], "null_control": [3, 4], "no_<rules>&": [1, 2]}
    curve = lambda off: [[1024.0 * i, 8.0 - 3 * (1 - 0.97 ** i) + off] for i in range(1, 121)]
    variants = {}
    for k, (name, vals) in enumerate(losses.items()):
        variants[name] = {
            "overrides": {} if name != "no_<rules>&" else {"clean.rules": []}, "about": "", "seeds": seeds[name],
            "corpus": f"c{k}", "corpus_dir": f"ablations/t/corpora/c{k}",
            "kept": {"documents": 100 + k, "tokens": 200_000 + k, "sources": {"books": {"documents": 90, "tokens": 180_000},
                                                                           "spam": {"documents": 10, "tokens": 20_000 + k}}},
            "stages": [{"stage": "extract", "status": "skipped" if k else "ran"}],
            "proxies": [{"seed": s, "run": f"ablations/t/proxies/{name}-s{s}", "manifest": "m.json", "status": "trained",
                         "wall_s": 30.0, "evals": {"prose": v}, "final_train_loss": 5.1, "curve": curve(0.3 * k + 0.01 * j),
                         "epochs": {"books": {"available_tokens": 180_000, "planned_epochs": 0.6, "share": 0.9,
                                              "realized_epochs": 0.61}}}
                        for j, (s, v) in enumerate(zip(seeds[name], vals))]}
    evaluations = {"prose": {"tokens": 8192, "variants": {}}}
    for name, vals in losses.items():
        e = {"spread": spread(vals).__dict__}
        if name != "base":
            e["vs_base"] = paired(vals, losses["base"]).as_dict()
        evaluations["prose"]["variants"][name] = e
    return {"name": "t<1>", "spec": "spec.yaml", "base_config": "p.yaml", "confidence": 0.95, "tokenizer": "tok.model",
            "harness": None, "wall_s": 12.0, "variants": variants, "evaluations": evaluations,
            "proxy": {"config": "proxy.yaml", "steps": 120, "tokens_per_step": 1024, "tokens": 122880, "seq_len": 64,
                      "global_batch_size": 16, "world_size": 1, "params": 631_000}}


def test_page_is_self_contained_and_says_every_verdict():
    text = build_page(results())
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script|<link|<iframe|<img|src=|url\(|@import", text)
    assert "http://" not in text and "https://" not in text
    rows = re.findall(r'<tr class="verdict"><td class="l">prose</td><td class="l">(.*?)</td>.*?<td class="l (\w+)">(.*?)</td>',
                      text)
    assert rows == [("null_control", "noise", "within noise"), ("no_&lt;rules&gt;&amp;", "worse", "worse")]
    assert "<h1>Ablation t&lt;1&gt;</h1>" in text                  # names are escaped
    assert text.count("<polyline") == 6 and text.count("<circle") == 6
    for section in ("Verdicts", "Held-out loss per seed", "Tokens each variant kept", "Epochs per source",
                    "Training curves", "Proxies"):
        assert f"<h2>{section}</h2>" in text
    assert "ablations/t/proxies/no_&lt;rules&gt;&amp;-s2" in text and "122,880 tokens" in text


def test_a_variant_against_another_gets_its_own_row():
    res = results()
    res["evaluations"]["prose"]["variants"]["no_<rules>&"]["vs"] = {
        "null_control": paired([5.40, 5.43], [5.01, 5.00]).as_dict()}
    text = build_page(res)
    row = re.search(r'<tr class="against"><td class="l">prose</td><td class="l">(.*?)</td>.*?<td class="l (\w+)">', text)
    assert row and row.groups() == ("no_&lt;rules&gt;&amp; vs null_control", "worse")


PROBE = """<script>
window.addEventListener("load", function () {
  var svgs = document.querySelectorAll("svg"), out = [];
  for (var i = 0; i < svgs.length; i++) { var b = svgs[i].getBBox(); out.push(svgs[i].id + ":" + Math.round(b.width)); }
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = "SVG " + out.join(" ") + " VERDICTS " + document.querySelectorAll("#verdicts tr.verdict").length
    + " LINES " + document.querySelectorAll("#curves polyline").length;
  document.body.appendChild(pre);
});
</script>"""


def test_page_renders_in_headless_chromium_without_a_request(tmp_path):
    page = tmp_path / "report.html"
    write_report(results(), str(page))
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = chromium("--dump-dom", probe.as_uri(), tmp_path=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="probe">SVG (.*?) VERDICTS (\d+) LINES (\d+)</pre>', dom.stdout)
    assert m, dom.stdout[-2000:]
    widths = dict(x.split(":") for x in m.group(1).split())
    assert set(widths) == {"dots-0", "curves"} and all(int(w) > 300 for w in widths.values())
    assert (int(m.group(2)), int(m.group(3))) == (2, 6)
    # The page as shown, with Chromium's network log: the page asks for nothing remote; a copy of it that does
    # load a remote image shows that the log would see such a request.
    shot = tmp_path / "shot.png"
    img = decode_png(_render(page, tmp_path, shot, "page").read_bytes())[..., :3]
    assert img.std() > 0.05
    assert _remote_urls(tmp_path / "page.json") == []
    planted = tmp_path / "planted.html"
    planted.write_text(page.read_text().replace("</body>", '<img src="http://127.0.0.1:9/x.png"></body>'))
    _render(planted, tmp_path, tmp_path / "planted.png", "planted")
    assert _remote_urls(tmp_path / "planted.json") == ["http://127.0.0.1:9/x.png"]


def _render(page, tmp_path, shot, name):
    r = chromium(f"--screenshot={shot}", "--window-size=1100,1800", f"--log-net-log={tmp_path / (name + '.json')}",
                 page.as_uri(), tmp_path=tmp_path)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    return shot


def _remote_urls(netlog) -> list[str]:
    """Remote URLs the page asked for. Chromium's own traffic (update checks, account lookups: initiator "not an
    origin", the browser process) is not the page's and is left out; a file:// page's requests carry its opaque
    origin, "null"."""
    text = netlog.read_text()
    try:
        events = json.loads(text)["events"]
    except ValueError:                       # a log cut short at exit: close it
        events = json.loads(text.rstrip().rstrip(",") + "]}")["events"]
    return sorted({e["params"]["url"] for e in events
                   if "url" in e.get("params", {}) and "initiator" in e["params"]
                   and e["params"]["initiator"] != "not an origin"
                   and e["params"]["url"].startswith(("http:", "https:", "ws:", "wss:", "ftp:"))})
