"""The fastText quality classifier: the shipped default model, its errors, and its training script."""
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from glassbox.contracts import sha256_file
from pipeline.score import quality
from pipeline.models import ModelError, check_fasttext_file, require_file
from pipeline.score.quality import HQ_LABEL, QualityClassifier, default_model_path, get_classifier, preprocess
from quality_models import train_fasttext as tf

REPO = Path(__file__).resolve().parents[3]
DEFAULT_MODEL = REPO / "quality_models" / "default" / "quality_ft.ftz"
DEFAULT_CARD = REPO / "quality_models" / "default" / "quality_ft.md"


@pytest.fixture(scope="module")
def heldout():
    """The 20 % the default model never saw, rebuilt exactly as the training script split it."""
    data = tf.build_dataset([REPO / p for p in tf.DEFAULT_POSITIVES],
                            [REPO / p for p in tf.DEFAULT_NEGATIVES], tf.TrainConfig())
    return data


def test_default_model_loads():
    assert DEFAULT_MODEL.is_file(), "the default model is missing: run `make quality-models`"
    check_fasttext_file(DEFAULT_MODEL)
    clf = get_classifier(DEFAULT_MODEL)
    assert clf is get_classifier(DEFAULT_MODEL)  # one load per process
    assert set(clf.load().get_labels()) == {HQ_LABEL, "__label__lq"}
    assert DEFAULT_MODEL.stat().st_size < 2_000_000


def test_default_path_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv("GLASSBOX_QUALITY_MODEL", raising=False)
    assert default_model_path() == DEFAULT_MODEL
    monkeypatch.setenv("GLASSBOX_QUALITY_MODEL", str(tmp_path / "m.ftz"))
    assert default_model_path() == tmp_path / "m.ftz"


def test_card_describes_the_shipped_files():
    card = DEFAULT_CARD.read_text(encoding="utf-8")
    for rel in tf.DEFAULT_POSITIVES + tf.DEFAULT_NEGATIVES:
        assert f"`{rel}` | `{sha256_file(REPO / rel)}`" in card, f"{rel} changed since training"
    assert sha256_file(DEFAULT_MODEL) in card
    for word in ("precision", "recall", "ROC AUC", "English only", "fastText 0.9.3"):
        assert word in card


def test_separates_heldout_reference_from_web_text(heldout):
    train_texts = {preprocess(t) for t, _ in heldout.train}
    assert not any(preprocess(t) in train_texts for t, _ in heldout.test)
    labels = [y for _, y in heldout.test]
    assert 30 <= labels.count(1) == labels.count(0)
    scores = get_classifier(DEFAULT_MODEL).predict_proba([t for t, _ in heldout.test])
    m = tf.binary_metrics(scores, labels)
    assert m["roc_auc"] >= 0.9, m
    assert m["recall"] >= 0.8 and m["precision"] >= 0.7, m


def test_obvious_spam_ranks_below_encyclopedic_prose():
    spam = ("BEST PRICE!!! Buy cheap followers now, click here, free shipping, casino bonus, "
            "limited offer, subscribe today. Home | About | Contact | Login | Cart (0)")
    prose = ("The river rises in the northern hills and flows south for about 200 kilometres "
             "before it joins the sea. The town on its banks was founded in the 12th century and "
             "became the seat of the county in 1450.")
    p_spam, p_prose = get_classifier(DEFAULT_MODEL).predict_proba([spam, prose])
    assert p_spam < 0.5 < p_prose


def test_empty_text_is_none_and_order_is_kept():
    clf = get_classifier(DEFAULT_MODEL)
    out = clf.predict_proba(["", "   \n\t", None, "A plain sentence about a city.", ""])
    assert out[0] is None and out[1] is None and out[2] is None and out[4] is None
    assert 0.0 <= out[3] <= 1.0
    assert clf.predict_proba([]) == []


def test_missing_model_names_file_and_make_target(tmp_path):
    missing = tmp_path / "nope" / "quality_ft.ftz"
    with pytest.raises(ModelError) as e:
        QualityClassifier(missing).predict_proba(["some text"])
    assert str(missing) in str(e.value) and "make quality-models" in str(e.value)
    with pytest.raises(ModelError):
        get_classifier(missing)
    with pytest.raises(ModelError, match="make quality-models"):
        require_file(missing, "KenLM model")
    assert isinstance(e.value, RuntimeError)


@pytest.mark.parametrize("content", [b"", b"not a model\n", b"\x00" * 4096])
def test_corrupt_model_is_a_model_error(tmp_path, content):
    bad = tmp_path / "quality_ft.ftz"
    bad.write_bytes(content)
    with pytest.raises(ModelError, match="corrupt") as e:
        QualityClassifier(bad).predict_proba(["some text"])
    assert str(bad) in str(e.value)


def test_truncated_model_fails_fast(tmp_path):
    """fastText's own loader spins on a truncated file (memory growing); ours must refuse it."""
    data = DEFAULT_MODEL.read_bytes()
    for n in (200, len(data) // 2, len(data) - 1):
        cut = tmp_path / f"cut{n}.ftz"
        cut.write_bytes(data[:n])
        with pytest.raises(ModelError, match="corrupt"):
            check_fasttext_file(cut)
    longer = tmp_path / "longer.ftz"
    longer.write_bytes(data + b"\0")
    with pytest.raises(ModelError, match="unexpected bytes"):
        check_fasttext_file(longer)
    # and through the public entry point, in a child process so a regression cannot hang the suite
    code = ("import sys; from pipeline.score.quality import QualityClassifier, ModelError\n"
            "try: QualityClassifier(sys.argv[1]).predict_proba(['x'])\n"
            "except ModelError as e: print('ModelError', e); sys.exit(0)\n"
            "sys.exit(1)")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / f"cut{len(data) // 2}.ftz")],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "ModelError" in r.stdout, r.stdout + r.stderr


def test_preprocess_is_shared_by_training_and_scoring():
    assert tf.preprocess is quality.preprocess
    text = "The Lobster,\nknown as  H. gammarus; is BLUE.\n\n"
    assert preprocess(text) == "the lobster , known as h . gammarus ; is blue ."
    assert preprocess("word , word") == preprocess("word, word")  # tokenized and raw text agree
    assert tf.fasttext_line(text, 1) == HQ_LABEL + " " + preprocess(text)
    assert tf.fasttext_line(text, 0) == "__label__lq " + preprocess(text)
    assert "\n" not in tf.fasttext_line("a\nb\r\nc", 1)
    assert preprocess("") == "" and preprocess(" \n ") == ""


def test_chunking_undoes_wikitext():
    lines = [" = Title = ", " ", " The price rose 1 @,@ 000 @-@ fold to 0 @.@ 7 <unk> units . " * 20,
             " = = Section = = ", " short tail . ", " " + "word " * 650]
    chunks = tf.chunk_lines(lines, tf.ChunkConfig(min_words=100, max_words=300, min_tail=25))
    assert all("@" not in c and "<unk>" not in c and "=" not in c for c in chunks)
    assert "1,000-fold to 0.7 units" in chunks[0]
    # the 160-word paragraph (closed by the heading); then 3 + 650 words -> 300 + 300 + 53 (a tail
    # of at least min_tail words is kept)
    assert [len(c.split()) for c in chunks] == [160, 300, 300, 53]
    assert chunks[1].startswith("short tail .")


def test_roc_auc_rank_formula():
    assert tf.roc_auc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert tf.roc_auc([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1]) == 0.0
    assert tf.roc_auc([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1]) == 0.5
    # one tie across classes: pairs (pos, neg) = 4, wins 3 + half a tie
    assert tf.roc_auc([0.3, 0.6, 0.6, 0.9], [0, 0, 1, 1]) == pytest.approx(3.5 / 4)
    m = tf.binary_metrics([0.9, 0.6, 0.4, 0.2], [1, 0, 1, 0])
    assert m["precision"] == 0.5 and m["recall"] == 0.5


def test_tiny_training_run_end_to_end(tmp_path):
    pos = tmp_path / "reference.txt"
    lines = (REPO / tf.DEFAULT_POSITIVES[0]).read_text(encoding="utf-8").splitlines()
    pos.write_text("\n".join(lines[:400]) + "\n", encoding="utf-8")
    neg = tmp_path / "web.jsonl.gz"
    src = REPO / "examples/sample/jsonl/dolma-cc-documents-000.json.gz"
    with gzip.open(src, "rt", encoding="utf-8") as f, gzip.open(neg, "wt", encoding="utf-8") as g:
        for line in f:
            g.write(json.dumps({"text": json.loads(line)["text"]}) + "\n")
    out = tmp_path / "model" / "q.ftz"
    r = subprocess.run([sys.executable, "-m", "quality_models.train_fasttext", "--positives", str(pos),
                        "--negatives", str(neg), "--out", str(out), "--seed", "1", "--epoch", "5",
                        "--bucket", "20000", "--cutoff", "500"],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "held-out precision" in r.stderr
    check_fasttext_file(out)
    card = out.with_suffix(".md").read_text(encoding="utf-8")
    assert sha256_file(pos) in card and sha256_file(neg) in card and "ROC AUC" in card
    assert str(tmp_path) not in card  # no machine paths in a card
    scores = QualityClassifier(out).predict_proba(["A sentence.", ""])
    assert scores[1] is None and 0.0 <= scores[0] <= 1.0


def test_training_refuses_missing_inputs(tmp_path):
    with pytest.raises(SystemExit):
        tf.main(["--positives", str(tmp_path / "none.txt"), "--out", str(tmp_path / "m.ftz")])
