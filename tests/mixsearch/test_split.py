"""A source split into buckets of a score column, each bucket a domain (mixsearch/split.py): the spec's bad input named
before any proxy trains, the buckets' token shards (every document of the source in exactly one, the shards written
once), and a tiny swarm over the buckets through fit, verify and the manifest's next version."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mixsearch_fixtures import make_data, spec_text
from train_fixtures import REPO

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}


def add_scores(files: dict) -> dict:
    """DATA/decontaminated/ as the score stage leaves it, for the tiny corpus: every document's id, source, a numeric
    score (quality_en: the document's token count scaled, so the buckets differ in length) and a string bucket
    column; gamma's first document unscored (another language)."""
    tok = Path(files["data"]) / "tokenized"
    counts = json.loads((tok / "counts.json").read_text())
    ids, srcs, score, bucket = [], [], [], []
    for s, v in counts["sources"].items():
        for k, sh in enumerate(v["shards"]):
            t = pq.read_table(tok / sh["path"], columns=["id", "n_tokens"])
            for j, (i, n) in enumerate(zip(t.column("id").to_pylist(), t.column("n_tokens").to_pylist())):
                ids.append(i)
                srcs.append(s)
                unscored = s == "gamma" and k == 0 and j == 0
                score.append(None if unscored else n / 1000.0)
                bucket.append(None if unscored else ("long" if n > 60 else "short"))
    out = Path(files["data"]) / "decontaminated"
    out.mkdir(exist_ok=True)
    pq.write_table(pa.table({"id": ids, "source": srcs, "text": ["x"] * len(ids),
                             "quality_en": pa.array(score, pa.float64()), "quality_en_bucket": bucket}),
                   out / "part-00000.parquet")
    return counts


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    files = make_data(root)
    counts = add_scores(files)
    return {"root": root, "files": files, "counts": counts}


def spec_with(corpus, name: str, split, n: int = 4, domains=("alpha", "beta", "gamma"), **extra) -> Path:
    raw = json.loads(spec_text(name, corpus["files"], corpus["root"] / name, n=n, domains=list(domains)))
    raw["split"] = split
    raw.update(extra)
    path = corpus["root"] / f"{name}.yaml"
    path.write_text(json.dumps(raw))
    return path


def check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "glassbox.cli", "mix-search", str(path), "--check"], cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("split, says", [
    ({"delta": {"column": "quality_en", "quantiles": 3}}, "split.delta: no source 'delta'"),
    ({"beta": {"column": "quality_xx", "quantiles": 3}}, "split.beta.column: no column 'quality_xx'"),
    ({"beta": {"column": "quality_en", "edges": [0.09, 0.05]}}, "split.beta.edges: must increase strictly"),
    ({"beta": {"column": "quality_en", "edges": [10.0, 20.0]}}, "split.beta: bucket beta@q2 has no tokens"),
    ({"beta": {"column": "quality_en"}}, "split.beta: a numeric column is cut at edges"),
    ({"beta": {"column": "quality_en", "quantiles": 1}}, "split.beta.quantiles: 1 bucket(s)"),
    ({"beta": {"column": "quality_en", "quantiles": [0.5, 0.2]}}, "split.beta.quantiles: must increase strictly"),
    ({"beta": {"column": "quality_en", "quantiles": 2, "names": ["a", "b", "c"]}}, "split.beta.names: 1 cut points"),
    ({"beta": {"column": "quality_en_bucket", "quantiles": 2}}, "is a string (bucket) column"),
    ({"gamma": {"column": "quality_en", "quantiles": 2}}, "split.gamma.unscored: 1 document(s) of 'gamma'"),
    ({"gamma": {"column": "quality_en", "quantiles": 2, "unscored": "q9"}}, "split.gamma.unscored: 'q9' is neither"),
    ({"beta": {"column": "quality_en", "quantiles": 2, "form": "decontaminated"}}, "split.beta.form"),
])
def test_bad_split_input_is_named_before_any_proxy_trains(corpus, split, says):
    r = check(spec_with(corpus, "bad", split))
    assert r.returncode == 2 and says in r.stderr, r.stderr + r.stdout
    assert "Traceback" not in r.stderr and not (corpus["root"] / "bad").exists()


def test_quantile_buckets_hold_every_document_once_and_are_written_once(corpus, tmp_path):
    from mixsearch.manifests import search_counts
    from mixsearch.spec import load_spec

    spec = load_spec(str(spec_with(corpus, "shards", {"beta": {"column": "quality_en", "quantiles": 3},
                                                      "gamma": {"column": "quality_en_bucket", "unscored": "own"}})))
    assert spec.domains == ["alpha", "beta@q1", "beta@q2", "beta@q3", "gamma@long", "gamma@short", "gamma@unscored"]
    merged = search_counts(spec)
    src = corpus["counts"]["sources"]
    tok = Path(corpus["files"]["data"]) / "tokenized"
    assert "beta" not in merged["sources"] and merged["sources"]["alpha"] == src["alpha"]
    for s, names in (("beta", ["q1", "q2", "q3"]), ("gamma", ["long", "short", "unscored"])):
        orig = pq.read_table([tok / sh["path"] for sh in src[s]["shards"]][0])
        for sh in src[s]["shards"][1:]:
            orig = pa.concat_tables([orig, pq.read_table(tok / sh["path"])])
        got, per = [], {}
        for n in names:
            b = merged["sources"][f"{s}@{n}"]
            assert b["tokens"] > 0 and b["tokens"] == sum(x["tokens"] for x in b["shards"])
            for sh in b["shards"]:
                t = pq.read_table(tok / sh["path"])
                assert t.schema == orig.schema and t.num_rows == sh["documents"]
                got += list(zip(t.column("id").to_pylist(), t.column("tokens").to_pylist()))
                per[n] = per.get(n, []) + t.column("n_tokens").to_pylist()
        assert sorted(got) == sorted(zip(orig.column("id").to_pylist(), orig.column("tokens").to_pylist()))
        assert sum(b["tokens"] for k, b in merged["sources"].items() if k.startswith(s + "@")) == src[s]["tokens"]
    # quantiles of the documents: nearly equal counts, and the score (here the length) ordered across buckets
    counts = [merged["sources"][f"beta@q{i}"]["documents"] for i in (1, 2, 3)]
    assert max(counts) - min(counts) <= 2
    beta = {n: [len(x) for sh in merged["sources"][f"beta@{n}"]["shards"]
                for x in pq.read_table(tok / sh["path"]).column("tokens").to_pylist()] for n in ("q1", "q2", "q3")}
    assert max(beta["q1"]) <= min(beta["q2"]) and max(beta["q2"]) <= min(beta["q3"])
    rec = json.loads((Path(spec.out_dir) / "split" / "split.json").read_text())
    assert rec["sources"]["beta"]["rule"]["column"] == "quality_en" and len(rec["sources"]["beta"]["rule"]["edges"]) == 2
    first = {p: p.stat().st_mtime_ns for p in (Path(spec.out_dir) / "split").rglob("*.parquet")}
    assert search_counts(load_spec(spec.path)) == merged                            # a rerun finds them, writes nothing
    assert {p: p.stat().st_mtime_ns for p in (Path(spec.out_dir) / "split").rglob("*.parquet")} == first


def _base_manifest(corpus) -> Path:
    """mixes/tiny.yaml and its base manifest in DATA/manifests (what make mix writes), for the fit's next version."""
    from pipeline.mix.mixture import build_manifest, load_mix, write_manifest

    mixes = corpus["root"] / "mixes"
    mixes.mkdir(exist_ok=True)
    (mixes / "tiny.yaml").write_text("dataset_mix: {alpha: 0.3, beta: 0.4, gamma: 0.3}\nmax_seq_len: 32\n"
                                     "total_tokens: 4096\n")
    data = Path(corpus["files"]["data"])
    man = build_manifest(load_mix(mixes / "tiny.yaml"), corpus["counts"], str(data / "tokenized"),
                         str(data / "manifests"))
    write_manifest(man, str(data / "manifests" / "tiny.json"))
    return mixes / "tiny.yaml"


@pytest.mark.trainer
@pytest.mark.slow
def test_a_swarm_over_quality_buckets_fits_verifies_and_writes_the_manifest(corpus):
    """beta split in two by quality_en: 4 proxies over {alpha, beta@q1, beta@q2}, the fit, verify (the DoReMi step
    reads each bucket's validation bits per byte) and the manifest's next version naming the bucket shards."""
    mix = _base_manifest(corpus)
    spec = spec_with(corpus, "buckets", {"beta": {"column": "quality_en", "quantiles": 2}}, n=4,
                     domains=("alpha", "beta"), fit={"mix": str(mix), "budget": 4096, "min_weight": 0.1})
    r = subprocess.run([sys.executable, "-m", "glassbox.cli", "mix-search", str(spec)], cwd=REPO, env=ENV,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    out = corpus["root"] / "buckets"
    rows = [json.loads(x) for x in (out / "swarm.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(set(x["weights"]) == {"alpha", "beta@q1", "beta@q2"} for x in rows)
    man = json.loads((out / "manifests" / "swarm-p000.json").read_text())
    assert set(man["sources"]) == {"alpha", "beta@q1", "beta@q2"}
    for sh in man["sources"]["beta@q1"]["shards"]:
        assert (out / "manifests" / sh["path"]).resolve().parent == (out / "split" / "beta@q1").resolve()
    prop = json.loads((out / "fit" / "proposal.json").read_text())
    assert set(prop["weights"]) == {"alpha", "beta@q1", "beta@q2"}
    res = json.loads((out / "verify" / "results.json").read_text())
    assert set(res["doremi_evidence"]["val_bpb"]) == {"alpha", "beta@q1", "beta@q2"}
    assert set(res["mixtures"]["doremi"]) == {"alpha", "beta@q1", "beta@q2"}
    nxt = json.loads(Path(prop["manifest"]["path"]).read_text())
    assert nxt["version"] == 2 and set(nxt["sources"]) == {"alpha", "beta@q1", "beta@q2"}
    man_dir = Path(prop["manifest"]["path"]).parent
    for src in ("beta@q1", "beta@q2"):
        for sh in nxt["sources"][src]["shards"]:
            assert (man_dir / sh["path"]).is_file()
