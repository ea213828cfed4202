"""glassbox report (train/record/report.py): one self-contained HTML page (curves, telemetry, diagnosis; --compare), loss_curve.png
beside it, and the page as headless Chromium renders it (Debian's chromium, installed by `make setup`)."""
import base64
import dataclasses
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from browser import chromium, decode_png, embedded_images
from record_fixtures import VOCAB, noisy, rows_from, trend, write_run
from train.record.report import build_report

REPO = __import__("pathlib").Path(__file__).resolve().parents[3]
N = 300


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two run directories: a full one (config.json, run.json, validation per source, telemetry, a spike)
    whose name needs escaping, and a bare one holding nothing but metrics.jsonl."""
    root = tmp_path_factory.mktemp("runs")
    base, lr = trend(N, warmup=15)
    y = noisy(base, 0.01, 0)
    y[200] *= 1.7
    t = np.arange(N)
    extra = {"share_web": 0.6 + 0.03 * np.sin(t / 9), "share_code": 0.4 - 0.03 * np.sin(t / 9),
             "data_dup_rate": 0.01 + 0.002 * np.cos(t / 13), "data_len_mean": 180 + 5 * np.sin(t / 17),
             "share_a&b<c>": np.full(N, 0.01)}
    rows = rows_from(y, lr, val=base + 0.05, val_every=20, sources=("web", "code", "books"), extra=extra)
    rows[5]["share_web"] = None                     # gaps in telemetry are skipped, not drawn as zeros
    full = write_run(root / "run<b>&one", rows, torn=True)
    (full / "run.json").write_text(json.dumps({
        "manifest": {"path": "data/sample/manifests/sample.json", "name": "sample", "content_hash": "ab" * 32},
        "invocations": [{"code": {"git_commit": "0123456789abcdef", "git_dirty": False}, "start_step": 0}]}))
    b2, lr2 = trend(200, warmup=10, floor=2.3)
    bare = write_run(root / "other", rows_from(noisy(b2, 0.01, 1), lr2, val=b2 + 0.06, val_every=25,
                                               tokens_per_step=6000), vocab_size=None)
    return full, bare


@pytest.fixture(scope="module")
def page(runs, tmp_path_factory):
    full, bare = runs
    out = build_report(full, compare=bare)
    return out, out.read_text()


def _imgs(text):
    return embedded_images(text)


@pytest.mark.trainer
def test_report_page_is_self_contained_with_every_section(runs, page):
    full, bare = runs
    out, text = page
    assert out == full / "report.html"
    assert text.startswith("<!DOCTYPE html>")
    # Nothing loaded from elsewhere: no scripts, stylesheets links, or http(s) sources.
    assert not re.search(r"<script|<link|<iframe|src=\"(?!data:)|url\(", text)
    assert "http://" not in text and "https://" not in text
    ids = {i for i, _ in _imgs(text)}
    assert ids == {"loss", "optimizer", "throughput", "val_sources", "telemetry", "compare-img"}
    for _, b64 in _imgs(text):
        img = decode_png(base64.b64decode(b64))
        assert img.shape[0] > 200 and img.shape[1] > 500 and img.std() > 0.02
    for section in ("Summary", "Diagnosis", "Loss", "Learning rate and gradient norm", "Throughput",
                    "Validation loss per source", "Telemetry", "Comparison (aligned by tokens)"):
        assert f">{section}</h2>" in text
    # Run summary from config.json and run.json.
    assert "n_layers 2, d_model 64" in text and "ab" * 32 in text and "0123456789abcdef" in text
    assert "300 (steps 1 to 300)" in text and "unreadable lines skipped" in text
    # The diagnosis table, with the injected spike.
    table = re.search(r'<table id="diagnosis-table">(.*?)</table>', text, re.S).group(1)
    assert table.count('<tr class="finding">') == 1 and ">spike<" in table and ">201<" in table
    # Telemetry: grouped by prefix, the odd field name escaped.
    assert "data_*" in text and "share_*" in text
    assert "share_a&amp;b&lt;c&gt;" in text and "share_a&b<c>" not in text
    # Text from the record is escaped: the run's name holds < and &.
    assert "run&lt;b&gt;&amp;one" in text and "run<b>" not in text
    # The compared run: its name, its own (empty) diagnosis.
    assert "other" in text and 'id="compare-diagnosis-none"' in text


@pytest.mark.trainer
def test_loss_curve_png_beside_the_report(runs, page):
    full, _ = runs
    png = (full / "loss_curve.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    img = decode_png(png)
    assert img.shape[1] >= 1000 and img.std() > 0.05
    assert dict(_imgs(page[1]))["loss"] == base64.b64encode(png).decode()


@pytest.mark.trainer
def test_report_from_metrics_alone_without_compare(runs, tmp_path):
    _, bare = runs
    d = tmp_path / "bare"
    shutil.copytree(bare, d)
    out = build_report(d, out=tmp_path / "elsewhere" / "page.html")
    text = out.read_text()
    assert out.is_file() and (d / "loss_curve.png").is_file() and not (d / "report.html").exists()
    assert {i for i, _ in _imgs(text)} == {"loss", "optimizer", "throughput"}
    assert 'id="telemetry-none"' in text and 'id="val_sources-none"' in text and 'id="compare"' not in text
    assert 'id="diagnosis-none"' in text and ">model<" not in text


@pytest.mark.trainer
def test_report_cli_and_errors(runs, tmp_path):
    full, bare = runs
    out = tmp_path / "r.html"
    p = subprocess.run([sys.executable, "-m", "train.record.report", str(bare), "--compare", str(full), "--out", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert out.is_file() and 'id="compare"' in out.read_text()
    p = subprocess.run([sys.executable, "-m", "train.record.report", str(tmp_path / "missing")], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no such run directory" in p.stderr


def test_make_report_command_line():
    p = subprocess.run(["make", "-n", "--no-print-directory", "report", "RUN=runs/x", "COMPARE=runs/y"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "glassbox report runs/x --compare runs/y" in p.stdout
    p = subprocess.run(["make", "-n", "--no-print-directory", "report", "RUN=runs/x"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert re.search(r"glassbox report runs/x\s*$", p.stdout, re.M)


def test_summary_and_diagnosis_read_the_runs_plan(tmp_path):
    """One reader of config.json (train/plan.py): the summary's shape and parameter count are the plan's model,
    and the diagnosis takes the run's own spike rule from the plan's train section."""
    from types import SimpleNamespace

    from train.config import load_config
    from train.plan import resolve
    from train.record.diagnose import DiagnoseConfig, assess_run, with_run_spike_settings
    from train.record.formats import read_run
    from train.record.report import _fmt_count, summary

    cfg = load_config(REPO / "train" / "configs" / "tiny.yaml", ["train.spike_window=20", "train.spike_loss_z=4.5"])
    plan = resolve(cfg, SimpleNamespace(max_seq_len=64, vocab_size=VOCAB, eos_id=0), None)
    run = write_run(tmp_path / "r", rows_from(*trend(60)))
    (run / "config.json").write_text(json.dumps(plan.to_json()))
    rec = read_run(run)
    assert rec.plan == dataclasses.replace(plan, stop=None, horizon=None)
    got = dict(summary(rec, []))
    assert got["parameters"] == _fmt_count(plan.model.num_params()) and f"d_model {plan.model.d_model}" in got["model"]
    judged = with_run_spike_settings(DiagnoseConfig(), rec.plan.section("train"))
    assert (judged.spike_window, judged.spike_z) == (20, 4.5) != (DiagnoseConfig().spike_window, DiagnoseConfig().spike_z)
    assert assess_run(rec).findings is not None
    # Without a run of its own (another trainer's rows) the diagnosis keeps its own settings.
    assert with_run_spike_settings(DiagnoseConfig(), None) == DiagnoseConfig()


# ------------------------------------------------------------------------------------ in a browser

PROBE = """<script>
window.addEventListener("load", function () {
  var out = [];
  for (var i = 0; i < document.images.length; i++) {
    var im = document.images[i];
    out.push(im.id + ":" + im.naturalWidth + "x" + im.naturalHeight + ":" + (im.complete ? 1 : 0));
  }
  var rows = document.querySelectorAll("#diagnosis-table tr.finding").length;
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = "IMAGES " + out.join(" ") + " FINDINGS " + rows + " WIDTH " + document.body.scrollWidth;
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.trainer
def test_page_renders_in_headlesschromium(page, tmp_path):
    out, text = page
    # The DOM after load: every image decoded (natural size > 0) and the diagnosis table there. The probe
    # script goes into a copy: the report itself has no scripts.
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE + "</body>"))
    dom = chromium("--dump-dom", probe.as_uri(), tmp_path=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="probe">IMAGES (.*?) FINDINGS (\d+) WIDTH (\d+)</pre>', dom.stdout)
    assert m, dom.stdout[-2000:]
    images = dict(x.split(":", 1) for x in m.group(1).split())
    assert set(images) == {"loss", "optimizer", "throughput", "val_sources", "telemetry", "compare-img"}
    for ident, size in images.items():
        w, h = map(int, size.split(":")[0].split("x"))
        assert w >= 500 and h >= 200 and size.endswith(":1"), (ident, size)
    assert int(m.group(2)) == 1 and 'id="diagnosis-table"' in dom.stdout
    # A screenshot of the page itself: a real image, not blank, with the charts' colours in it.
    shot = tmp_path / "shot.png"
    r = chromium(f"--screenshot={shot}", "--window-size=1200,2000", out.as_uri(), tmp_path=tmp_path)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    img = decode_png(shot.read_bytes())[..., :3]
    assert img.shape[:2] == (2000, 1200)
    assert img.std() > 0.05                                   # not a blank page
    blue = (np.abs(img[..., 0] - 31 / 255) < 0.08) & (np.abs(img[..., 1] - 119 / 255) < 0.08) \
        & (np.abs(img[..., 2] - 180 / 255) < 0.08)            # matplotlib's first colour: the loss curve
    assert blue.sum() > 500, blue.sum()
