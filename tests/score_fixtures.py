"""Classifiers a user brings, made in the test (no hub): a fastText model with DCLM's labels (__label__hq /
__label__cc) and tiny randomly initialised BERT sequence-classification models with a WordPiece tokenizer built
from a vocabulary file written here. Seconds to build on a CPU."""
from __future__ import annotations

import json
from pathlib import Path

# The fastText model tells case apart: high quality is written in capitals, common crawl the same words lower-case,
# so a preparation that lower-cases (Glassbox's) reads every document as common crawl, DCLM's (case kept) does not.
WORDS = ("energy light chemical plant cell river mountain history science theory water method result "
         "question answer study report").split()
HQ_TEXT = "Energy Light Chemical Plant Cell River Mountain History Science Theory Water Method"
CC_TEXT = "energy light chemical plant cell river mountain history science theory water method"


_TRAIN = """
import random, sys
import fasttext
path, seed, words = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
rng = random.Random(seed)
lines = []
for _ in range(400):
    ws = rng.sample(words, 6)
    lines.append("__label__hq " + " ".join(w.capitalize() for w in ws))
    lines.append("__label__cc " + " ".join(ws))
rng.shuffle(lines)
train = path + ".train.txt"
open(train, "w", encoding="utf-8").write("\\n".join(lines) + "\\n")
model = fasttext.train_supervised(input=train, epoch=20, lr=0.1, dim=8, wordNgrams=2, bucket=100_000, loss="softmax",
                                  minCount=1, thread=1, seed=seed, verbose=0)
model.save_model(path)
"""


def train_fasttext_hq_cc(path: Path, seed: int = 0) -> Path:
    """A fastText .bin with the labels __label__hq and __label__cc, trained on one thread in a fresh process:
    fastText 0.9.3 trained this small, separable set to NaN when a model had been trained earlier in the same
    process, and a test worker may have trained one."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _TRAIN, str(path), str(seed), " ".join(WORDS)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and path.is_file(), r.stderr
    path.with_name(path.name + ".train.txt").unlink()
    return path


def _vocab() -> list[str]:
    """WordPiece pieces: the special tokens, every ASCII letter, digit and mark alone and as a continuation, and
    the 1,500 commonest words of the bundled WikiText-2 text, so that real English pages tokenize into words, not
    one [UNK] after another."""
    import re
    import string
    from collections import Counter

    text = (Path(__file__).resolve().parents[1] / "quality_models" / "data" / "wikitext-2-valid.txt").read_text(
        encoding="utf-8").lower()
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    words = [w for w, _ in Counter(re.findall(r"[a-z]+", text)).most_common(1500)]
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars), *WORDS, *words]
    return list(dict.fromkeys(pieces))


VOCAB = _vocab()


def build_tiny_bert(out: Path, *, num_labels: int = 1, labels: list[str] | None = None, head: bool = True,
                    max_position: int = 64, tokenizer_max: int | None = 64, seed: int = 0) -> Path:
    """A 2-layer, 32-wide BERT saved with save_pretrained into `out`: a regression head (num_labels 1), a
    classification head over `labels`, or with head=False a plain BertModel (no head). tokenizer_max None leaves
    the tokenizer's model_max_length unset."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    vocab = out.parent / f"{out.name}-vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    kw = {"model_max_length": tokenizer_max} if tokenizer_max else {}
    # transformers 5 takes the WordPiece vocabulary as `vocab` (a file or a dict); vocab_file is silently ignored
    BertTokenizerFast(vocab=str(vocab), do_lower_case=True, **kw).save_pretrained(out)
    if labels:
        num_labels = len(labels)
    extra = {"id2label": dict(enumerate(labels)), "label2id": {x: i for i, x in enumerate(labels)}} if labels else {}
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=max_position, num_labels=num_labels,
                        initializer_range=0.3,   # scores spread apart (the default 0.02 gives about one value)
                        problem_type="regression" if num_labels == 1 else "single_label_classification", **extra)
    torch.manual_seed(seed)
    (BertForSequenceClassification(config) if head else BertModel(config)).save_pretrained(out)
    return out


def drop_max_positions(folder: Path) -> None:
    """config.json without max_position_embeddings (a model that states no maximum length)."""
    cfg = json.loads((folder / "config.json").read_text())
    cfg.pop("max_position_embeddings")
    (folder / "config.json").write_text(json.dumps(cfg))


def reference_scores(folder: Path, texts: list[str], max_length: int) -> list[list[float]]:
    """The model's logits per text, one text at a time, straight from transformers: what batching must match."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).eval()
    out = []
    with torch.inference_mode():
        for t in texts:
            enc = tok([t], truncation=True, max_length=max_length, return_tensors="pt")
            out.append(model(**enc).logits[0].float().tolist())
    return out
