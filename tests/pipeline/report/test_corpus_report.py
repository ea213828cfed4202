"""pipeline.report.corpus_report: DATA/report.html over a real `make clean-dedup` of the bundled sample (counts equal to
the stats and the Parquet, every reason, score distributions with cut-offs, samples per reason, rendered in
headless Chromium), and duplicate clusters and lineage on a small hand-built corpus folder."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from browser import chromium, decode_png, embedded_images
from pipeline.report.corpus_report import duplicate_clusters, language_funnel, main, source_funnel, write_report

REPO = Path(__file__).resolve().parents[3]


def _rows(folder: Path) -> list[dict]:
    return ds.dataset(str(folder), format="parquet", partitioning="hive").to_table().to_pylist()


def _table_rows(text: str, ident: str) -> list[list[str]]:
    body = re.search(rf'<table id="{ident}">(.*?)</table>', text, re.S).group(1)
    return [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", body)[1:]]


@pytest.mark.slow
def test_report_of_the_sample_corpus(sample_local_run, tmp_path):
    data, proc = sample_local_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = write_report(data, out=tmp_path / "report.html")
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and not re.search(r"<script|<link|src=\"(?!data:)", text)
    stats = {s: json.loads((data / "stats" / f"{s}.json").read_text()) for s in ("extract", "clean", "score", "dedup")}
    # The stage funnel is the stats; the per-source funnel counts the Parquet and adds up to it.
    stage_rows = {r[0]: [int(x.replace(",", "")) for x in r[1:5]] for r in _table_rows(text, "stage-funnel")}
    for s, st in stats.items():
        assert stage_rows[s] == [st["records_in"], st["records_out"], sum(st["rejected"].values()),
                                 sum(st["unreadable"].values())]
    per = source_funnel(data, stats)
    for s, st in stats.items():
        part = per.filter(per["stage"] == s)
        assert part["records_out"].sum() == st["records_out"] and part["records_in"].sum() == st["records_in"]
    kept = _rows(data / "dedup")
    for src in {r["source"] for r in kept}:
        assert per.filter((per["stage"] == "dedup") & (per["source"] == src))["records_out"].item() == \
            sum(r["source"] == src for r in kept)
    # Per language (the bilingual sample: English and Chinese): the same totals, and the page's table is it.
    langs = language_funnel(data, stats)
    for s in ("clean", "score", "dedup"):
        part = langs.filter(langs["stage"] == s)
        assert part["records_out"].sum() == stats[s]["records_out"], (s, part)
        assert part["records_in"].sum() == stats[s]["records_in"], (s, part)
    zh_kept = sum(r["lang"] == "zh" for r in kept)
    assert zh_kept >= 40 and langs.filter((langs["stage"] == "dedup") & (langs["lang"] == "zh"))["records_out"].item() \
        == zh_kept
    page_langs = {(r[0], r[1]): int(r[3].replace(",", "")) for r in _table_rows(text, "language-funnel")}
    assert page_langs[("dedup", "zh")] == zh_kept and page_langs[("dedup", "en")] == sum(r["lang"] == "en" for r in kept)
    # Every reason of every stage, with its total.
    reasons = {(r[0], r[1]): int(r[3].replace(",", "")) for r in _table_rows(text, "reasons")}
    for s, st in stats.items():
        for reason, n in {**st["rejected"], **st["unreadable"]}.items():
            assert reasons[(s, reason)] == n
    # Scores: percentiles and the bucket cut-offs of stats/score.json are on the page.
    cut = stats["score"]["extra"]["ppl_bucket_cutoffs"]["en"]
    assert f"{cut['head_max']:,.4g}" in text and f"{cut['middle_max']:,.4g}" in text
    assert 'id="score-percentiles"' in text and 'id="bucket-counts"' in text
    # Duplicate clusters: the sample recrawls articles, so exact duplicates form clusters of 2.
    clusters = {(r[0], int(r[1])): int(r[2]) for r in _table_rows(text, "clusters")}
    assert clusters.get(("exact_duplicate", 2)) == stats["dedup"]["rejected"]["exact_duplicate"]
    # Samples: up to 3 documents per reason, the first by id, with their text where they had some.
    heads = re.findall(r'<h3 class="sample-reason">(.*?): (.*?)</h3>', text)
    assert set(heads) == set(reasons)
    lang = sorted((r["id"], bool(r["text"])) for r in _rows(data / "rejected" / "stage=clean")
                  if r["reason"] == "lang_not_allowed")
    block = text.split('<h3 class="sample-reason">clean: lang_not_allowed</h3>')[1].split("<h3")[0]
    assert re.findall(r'<div class="sample"><div><code>([0-9a-f]+)</code>', block) == [i for i, _ in lang[:3]]
    assert block.count('<pre class="doc">') == sum(has for _, has in lang[:3])
    assert block.count("(no text: dropped before extraction)") == sum(not has for _, has in lang[:3])
    # Drawn: the funnel and the score histograms, real images.
    imgs = dict(embedded_images(text))
    assert set(imgs) == {"funnel", "scores"}
    # In a browser: both images decode, the page is not blank.
    shot = tmp_path / "shot.png"
    r = chromium(f"--screenshot={shot}", "--window-size=1200,2400", page.as_uri(), tmp_path=tmp_path)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    img = decode_png(shot.read_bytes())[..., :3]
    assert img.shape[:2] == (2400, 1200) and img.std() > 0.05
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", "<script>window.addEventListener('load', function () {"
                                  "var p = document.createElement('pre'); p.id = 'probe'; p.textContent = "
                                  "Array.from(document.images).map(function (i) { return i.id + ':' + "
                                  "i.naturalWidth; }).join(' '); document.body.appendChild(p); });</script></body>"))
    dom = chromium("--dump-dom", probe.as_uri(), tmp_path=tmp_path)
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout)
    assert m and all(int(x.split(":")[1]) > 500 for x in m.group(1).split()), dom.stdout[-1000:]


def _write(folder: Path, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-00000.parquet")


def test_duplicate_clusters_and_manifest_lineage(tmp_path):
    """A hand-built corpus folder: dedup kept 3 documents and removed 5 near duplicates of two of them (a
    cluster of 4 and one of 3) and one exact duplicate; two manifest versions, the second re-weighted."""
    data = tmp_path / "corpus"
    kept = [{"id": f"k{i}", "source": "web", "text": f"kept {i}"} for i in range(3)]
    removed = ([{"id": f"n{i}", "source": "web", "status": "rejected", "reason": "near_duplicate", "detail": None,
                 "duplicate_of": "k0", "text": f"near {i}"} for i in range(3)]
               + [{"id": f"m{i}", "source": "web", "status": "rejected", "reason": "near_duplicate", "detail": None,
                   "duplicate_of": "k1", "text": f"near {i}"} for i in range(2)]
               + [{"id": "x0", "source": "web", "status": "rejected", "reason": "exact_duplicate", "detail": None,
                   "duplicate_of": "k2", "text": "kept 2"}])
    _write(data / "dedup", kept)
    _write(data / "rejected" / "stage=dedup", removed)
    (data / "stats").mkdir()
    (data / "stats" / "dedup.json").write_text(json.dumps({
        "stage": "dedup", "records_in": 9, "records_out": 3, "rejected": {"near_duplicate": 5, "exact_duplicate": 1},
        "unreadable": {}, "wall_s": 1.0}))
    (data / "manifests").mkdir()
    base = {"name": "mix", "version": 1, "parent": None, "content_hash": "a" * 64, "total_tokens": 1000,
            "sources": {"web": {"weight": 1.0, "epochs": 1.5}}}
    v2 = dict(base, version=2, parent="a" * 64, content_hash="b" * 64,
              reweight={"run": {"path": "runs/r", "step": 40}, "reference": None})
    (data / "manifests" / "mix.json").write_text(json.dumps(base))
    (data / "manifests" / "mix.v2.json").write_text(json.dumps(v2))
    got = {(r["reason"], r["size"]): r["clusters"] for r in duplicate_clusters(data).iter_rows(named=True)}
    assert got == {("near_duplicate", 4): 1, ("near_duplicate", 3): 1, ("exact_duplicate", 2): 1}
    assert main([str(data)]) == 0
    text = (data / "report.html").read_text()
    lineage = _table_rows(text, "manifests")
    assert [r[:4] for r in lineage] == [["mix.json", "1", "a" * 12, ""], ["mix.v2.json", "2", "b" * 12, "a" * 12]]
    assert "re-weighted from runs/r at step 40" in lineage[1][-1]
    assert 'id="scores-none"' in text and "(no text" not in text


def test_errors_name_the_fix(tmp_path):
    p = subprocess.run([sys.executable, "-m", "pipeline.report.corpus_report", str(tmp_path / "none")], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "make clean-dedup" in p.stderr
    p = subprocess.run([sys.executable, "-m", "pipeline.report.corpus_report", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no stats" in p.stderr


def test_make_corpus_report_command_line():
    p = subprocess.run(["make", "-n", "--no-print-directory", "corpus-report", "DATA=data/x"], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "glassbox corpus-report data/x" in p.stdout
    # The demo ends with the re-weighted version of its mixture and the corpus report.
    p = subprocess.run(["make", "-n", "--no-print-directory", "demo"], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    reweight = re.search(r"jobs/mix\.py --mix mixes/sample\.yaml --data data/sample .*--reweight-from runs/sample", out)
    assert reweight, out
    assert reweight.start() < out.index("glassbox corpus-report data/sample")
    assert "pretrain TRAIN_CONFIG=train/configs/tiny.yaml RUN=runs/sample" in out
