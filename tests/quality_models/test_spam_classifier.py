"""The spam classifier (quality_models/spam_classifier.py): trained on the dev split only, labels checked."""
import pytest

from quality_models import spam_classifier as sc
from quality_models import spam_pages as sp


def test_training_set_reads_the_dev_split_only():
    pages = sp.load(web_pages=None)
    pos, neg = sc.training_set(pages, 1.0, 0)
    assert all(p["split"] == "dev" for p in pos + neg)
    real = [p for p in pos if p["source"] != "synthetic"]
    assert real and len(pos) - len(real) <= len(real)          # synthetic never outnumber the real positives
    held = {ln.split("\t")[0] for ln in sp.LABELS.with_name("lexicon_provenance.tsv").read_text(
        encoding="utf-8").splitlines() if ln and not ln.startswith("#") and ln.split("\t")[2] == "page:held_out"}
    assert held and not held & set(sp.brand_terms())
    assert all(p["label"] == "ok" for p in neg)


_TRAIN = """
import random, sys, fasttext
path = sys.argv[1]
words = "energy light chemical plant cell river mountain history science theory water method".split()
rng = random.Random(0)
lines = []
for _ in range(400):
    ws = rng.sample(words, 6)
    lines += ["__label__hq " + " ".join(w.capitalize() for w in ws), "__label__lq " + " ".join(ws)]
rng.shuffle(lines)
open(path + ".txt", "w", encoding="utf-8").write("\\n".join(lines) + "\\n")
fasttext.train_supervised(input=path + ".txt", epoch=20, lr=0.1, dim=8, wordNgrams=2, bucket=100_000,
                          loss="softmax", minCount=1, thread=1, seed=0, verbose=0).save_model(path)
"""


def test_a_model_without_the_spam_labels_is_refused(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "q.bin"
    # a fresh process: fastText 0.9.3 can train a small set to NaN after another model was trained in the process
    r = subprocess.run([sys.executable, "-c", _TRAIN, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with pytest.raises(ValueError, match=r"q\.bin: has the labels .*__label__hq.*a spam classifier has __label__spam"):
        sc.Model(path)
