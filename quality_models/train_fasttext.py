"""Train the fastText quality classifier that `jobs/score.py` applies (column `quality_ft`).

    python -m quality_models.train_fasttext --positives FILE [...] --negatives FILE|WARC [...] \
        --out MODEL.ftz [--card CARD.md] [--seed 0]

Positives are reference-quality prose (plain text, one paragraph per line, as in WikiText or a
Wikipedia dump turned into text; or JSONL with a `text` field). Negatives are extracted web text:
WARC files (run through the pipeline's own extractor) or JSONL(.gz) with a `text` field. Every source is
cut into paragraph-sized examples; both classes go through `pipeline.score.quality.preprocess`, the function
the scorer uses. The larger class is downsampled, 20 % of each class is held out (seeded), and the
model card reports held-out precision, recall and ROC AUC.

One model per process: with fastText 0.9.3 the first two `train_supervised` calls of a process give
bit-identical models, and the third, same data and seed, stops with "Encountered NaN" (seen here).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import json
import os
import random
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from glassbox.contracts import sha256_file
from pipeline.score.quality import HQ_LABEL, LQ_LABEL, QualityClassifier, preprocess

REPO = Path(__file__).resolve().parents[1]
DEFAULT_POSITIVES = ("quality_models/data/wikitext-2-valid.txt",)
# Web text only; examples/sample/aeb-articles.warc.gz is left out on purpose: curated news articles
# are not the low-quality class.
DEFAULT_NEGATIVES = (
    "examples/sample/resiliparse-cc-excerpt.warc.gz",
    "examples/sample/dolma-sample-0000.warc.gz",
    "examples/sample/IAH-urls-wget.warc.gz",
    "examples/sample/whirlwind.warc.gz",
    "examples/sample/jsonl/dolma-cc-documents-000.json.gz",
)
DEFAULT_OUT = "quality_models/default/quality_ft.ftz"


@dataclass(frozen=True)
class ChunkConfig:
    """How sources are cut into examples: consecutive lines are joined up to `max_words`."""
    min_words: int = 100   # a chunk is closed once it reaches this many words ...
    max_words: int = 300   # ... and never grows past this (longer lines are split)
    min_tail: int = 25     # a shorter remainder (end of a page or section) is dropped


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    holdout: float = 0.2
    dim: int = 32
    epoch: int = 20
    lr: float = 0.2
    word_ngrams: int = 2
    min_count: int = 2
    bucket: int = 200_000
    # quantization: keep the `cutoff` most useful rows of the input matrix, then retrain a little
    cutoff: int = 10_000   # 10k rows: ~0.3 MB; 50k gave 1.3 MB and the same held-out AUC, 6x slower
    dsub: int = 2
    chunk: ChunkConfig = field(default_factory=ChunkConfig)


# --- reading sources ------------------------------------------------------------------------------
_HEADING = re.compile(r"^\s*(=+)\s.*\s\1\s*$")          # WikiText's " = Title = ", " = = Section = = "
_WIKITEXT_JOINERS = ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", "."))


def undo_wikitext(line: str) -> str:
    """WikiText escapes and unknown-word tokens removed ("0 @.@ 7" -> "0.7"; "<unk>" dropped)."""
    for escaped, plain in _WIKITEXT_JOINERS:
        line = line.replace(escaped, plain)
    return line.replace("<unk>", " ")


def chunk_lines(lines, cfg: ChunkConfig = ChunkConfig()) -> list[str]:
    """Paragraph-sized examples from consecutive lines; WikiText headings end a chunk and are dropped."""
    out: list[str] = []
    buf: list[str] = []

    def flush(min_words: int) -> None:
        if len(buf) >= min_words:
            out.append(" ".join(buf))
        buf.clear()

    for line in lines:
        if _HEADING.match(line):
            flush(cfg.min_tail)
            continue
        words = undo_wikitext(line).split()
        while words:
            room = cfg.max_words - len(buf)
            buf.extend(words[:room])
            words = words[room:]
            if len(buf) >= cfg.max_words:
                flush(0)
        if len(buf) >= cfg.min_words:
            flush(0)
    flush(cfg.min_tail)
    return out


def _is_warc(path: str) -> bool:
    name = path.lower()
    return name.endswith((".warc", ".warc.gz", ".arc", ".arc.gz"))


def _is_jsonl(path: str) -> bool:
    name = path.lower()
    return name.endswith((".jsonl", ".jsonl.gz", ".json.gz", ".ndjson", ".ndjson.gz"))


def read_documents(path: str) -> list[str]:
    """The texts a source holds: extracted pages of a WARC, `text` of JSONL rows, or a whole text file."""
    if _is_warc(path):
        from pipeline.extract.html import ExtractConfig, extract_file
        return [r["text"] for r in extract_file(path, "web", "warc", ExtractConfig())
                if r["status"] == "kept" and r["text"]]
    if _is_jsonl(path):
        opener = gzip.open if path.lower().endswith(".gz") else open
        docs = []
        with opener(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    text = json.loads(line).get("text")
                except (json.JSONDecodeError, AttributeError):
                    raise SystemExit(f"{path}:{n}: not a JSON object per line") from None
                if isinstance(text, str) and text.strip():
                    docs.append(text)
        return docs
    with open(path, encoding="utf-8", errors="replace") as f:
        return [f.read()]


def examples_from(paths, cfg: ChunkConfig = ChunkConfig()) -> list[str]:
    """Paragraph-sized raw examples of every source, each document cut on its own."""
    out: list[str] = []
    for path in paths:
        for doc in read_documents(str(path)):
            out.extend(chunk_lines(doc.splitlines(), cfg))
    return out


# --- the data set -------------------------------------------------------------------------------
@dataclass
class Dataset:
    """Raw example texts (before preprocess) with labels 1 = hq, 0 = lq."""
    train: list[tuple[str, int]]
    test: list[tuple[str, int]]
    counts: dict


def _unique(examples: list[str], seen: set[str]) -> list[str]:
    """Drop examples whose preprocessed text was already seen (boilerplate repeated across pages)."""
    out = []
    for e in examples:
        key = preprocess(e)
        if key and key not in seen:
            seen.add(key)
            out.append(e)
    return out


def build_dataset(positives, negatives, cfg: TrainConfig = TrainConfig()) -> Dataset:
    """Chunk, de-duplicate, balance (downsample the larger class) and split, all seeded.

    Same files and config -> same split: tests rebuild the held-out part of the default model."""
    seen: set[str] = set()
    pos = _unique(examples_from(positives, cfg.chunk), seen)
    neg = _unique(examples_from(negatives, cfg.chunk), seen)
    counts = {"positive_examples": len(pos), "negative_examples": len(neg)}
    if not pos or not neg:
        raise SystemExit(f"need examples of both classes, got {len(pos)} positive and {len(neg)} "
                         "negative: check the input files")
    rng = random.Random(cfg.seed)
    rng.shuffle(pos)
    rng.shuffle(neg)
    n = min(len(pos), len(neg))
    pos, neg = pos[:n], neg[:n]
    n_test = max(1, round(n * cfg.holdout)) if n > 1 else 0
    train = [(t, 1) for t in pos[n_test:]] + [(t, 0) for t in neg[n_test:]]
    test = [(t, 1) for t in pos[:n_test]] + [(t, 0) for t in neg[:n_test]]
    rng.shuffle(train)
    counts.update(per_class_after_balance=n, train=len(train), held_out=len(test))
    return Dataset(train, test, counts)


def fasttext_line(text: str, label: int) -> str:
    """One line of fastText's training format; the text goes through the scorer's `preprocess`."""
    return f"{HQ_LABEL if label else LQ_LABEL} {preprocess(text)}"


# --- metrics -------------------------------------------------------------------------------------
def roc_auc(scores: list[float], labels: list[int]) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney U) formula; ties share their average rank."""
    n_pos = sum(1 for y in labels if y)
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("ROC AUC needs both classes")
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # 1-based average rank of the tie group
        i = j + 1
    rank_sum = sum(r for r, y in zip(ranks, labels) if y)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def binary_metrics(scores: list[float], labels: list[int], threshold: float = 0.5) -> dict:
    """Precision and recall of the hq class at `threshold`, accuracy, ROC AUC."""
    tp = sum(1 for s, y in zip(scores, labels) if s >= threshold and y)
    fp = sum(1 for s, y in zip(scores, labels) if s >= threshold and not y)
    fn = sum(1 for s, y in zip(scores, labels) if s < threshold and y)
    tn = len(labels) - tp - fp - fn
    return {
        "threshold": threshold,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "accuracy": (tp + tn) / len(labels) if labels else 0.0,
        "roc_auc": roc_auc(scores, labels),
        "n": len(labels),
    }


# --- training ------------------------------------------------------------------------------------
def train(positives, negatives, out: str | os.PathLike, cfg: TrainConfig = TrainConfig(),
          card: str | os.PathLike | None = None) -> dict:
    """Train, quantize and save the model to `out`, write the card; returns the card's facts."""
    import fasttext

    t0 = time.perf_counter()
    data = build_dataset(positives, negatives, cfg)
    t_data = time.perf_counter() - t0
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="glassbox-ft-") as tmp:
        train_file = Path(tmp) / "train.txt"
        train_file.write_text("".join(fasttext_line(t, y) + "\n" for t, y in data.train),
                              encoding="utf-8")
        t1 = time.perf_counter()
        try:
            model = fasttext.train_supervised(
                input=str(train_file), dim=cfg.dim, epoch=cfg.epoch, lr=cfg.lr,
                wordNgrams=cfg.word_ngrams, minCount=cfg.min_count, bucket=cfg.bucket,
                loss="softmax", thread=1, seed=cfg.seed, verbose=0)
        except RuntimeError as e:
            if "NaN" not in str(e):
                raise
            raise SystemExit(f"fastText training diverged ({e}): lower --lr (now {cfg.lr}) and "
                             "train in a fresh process") from None
        # Quantized, the model shrinks ~10x; `retrain` refits the kept rows after the cutoff.
        model.quantize(input=str(train_file), qnorm=True, retrain=True, cutoff=cfg.cutoff,
                       dsub=cfg.dsub, thread=1, verbose=0)
        t_train = time.perf_counter() - t1
        # Write beside the target, then rename: a reader never sees half a model.
        partial = out.with_name(out.name + ".partial")
        model.save_model(str(partial))
        os.replace(partial, out)

    clf = QualityClassifier(out)  # score the held-out part exactly as the scoring job will
    scores = clf.predict_proba([t for t, _ in data.test])
    labels = [y for _, y in data.test]
    metrics = binary_metrics([s if s is not None else 0.0 for s in scores], labels)
    train_scores = clf.predict_proba([t for t, _ in data.train])
    train_metrics = binary_metrics([s if s is not None else 0.0 for s in train_scores],
                                   [y for _, y in data.train])
    import fasttext as _ft
    facts = {
        "model": _display(out),
        "model_bytes": out.stat().st_size,
        "model_sha256": sha256_file(out),
        "positives": [{"path": _display(p), "sha256": sha256_file(p)} for p in positives],
        "negatives": [{"path": _display(p), "sha256": sha256_file(p)} for p in negatives],
        "counts": data.counts,
        "config": asdict(cfg),
        "held_out": metrics,
        "train_fit": train_metrics,
        "seconds": {"read_and_split": round(t_data, 2), "train_and_quantize": round(t_train, 2)},
        "date": _dt.date.today().isoformat(),
        "fasttext_version": getattr(_ft, "__version__", None) or _dist_version("fasttext"),
        "vocabulary_words": len(clf.load().get_words()),
    }
    if card is not None:
        Path(card).parent.mkdir(parents=True, exist_ok=True)
        Path(card).write_text(render_card(facts), encoding="utf-8")
    return facts


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def _display(path) -> str:
    """A path as the card shows it: relative to the working directory or repo, else the file name."""
    p = Path(path).resolve()
    for base in (Path.cwd().resolve(), REPO):
        try:
            return p.relative_to(base).as_posix()
        except ValueError:
            pass
    return p.name


def render_card(f: dict) -> str:
    c, m, cnt = f["config"], f["held_out"], f["counts"]
    files = "\n".join(f"| {kind} | `{e['path']}` | `{e['sha256']}` |"
                      for kind in ("positives", "negatives") for e in f[kind])
    return f"""# Model card: fastText quality classifier (`{Path(f['model']).name}`)

Scores how much a document reads like the reference text: `quality_ft` = P(`{HQ_LABEL}`), computed by
`pipeline/score/quality.py` and written by `jobs/score.py`. Rebuilt by `make quality-models`
(`python -m quality_models.train_fasttext`).

- Trained: {f['date']}, fastText {f['fasttext_version']}, seed {c['seed']}, one thread (deterministic).
- Model: `{f['model']}`, {f['model_bytes']:,} bytes, sha256 `{f['model_sha256']}`,
  {f['vocabulary_words']:,} words in its vocabulary.

## Training data

| class | file | sha256 |
|---|---|---|
{files}

Positives (`{HQ_LABEL}`) are reference prose; negatives (`{LQ_LABEL}`) are web text extracted by the
pipeline's own extractor. Each source is cut into paragraph-sized examples of
{c['chunk']['min_words']}–{c['chunk']['max_words']} words (consecutive lines joined; WikiText escapes
undone, `<unk>` and ` = heading = ` lines dropped; remainders under {c['chunk']['min_tail']} words
dropped), de-duplicated after preprocessing, and the larger class is downsampled at random.

| | examples |
|---|---|
| positive, after de-duplication | {cnt['positive_examples']} |
| negative, after de-duplication | {cnt['negative_examples']} |
| per class after balancing | {cnt['per_class_after_balance']} |
| training | {cnt['train']} |
| held out ({c['holdout']:.0%} of each class) | {cnt['held_out']} |

Every example passes through `pipeline.score.quality.preprocess` (lower-case, punctuation split into
tokens, whitespace and newlines collapsed), the same function the scorer applies.

## Parameters

`train_supervised(dim={c['dim']}, epoch={c['epoch']}, lr={c['lr']}, wordNgrams={c['word_ngrams']},
minCount={c['min_count']}, bucket={c['bucket']}, loss=softmax, thread=1, seed={c['seed']})`, then
`quantize(qnorm=True, retrain=True, cutoff={c['cutoff']}, dsub={c['dsub']})`.

## Held-out metrics

On the {m['n']} held-out examples (balanced), `{HQ_LABEL}` at threshold {m['threshold']}:

| precision | recall | accuracy | ROC AUC |
|---|---|---|---|
| {m['precision']:.3f} | {m['recall']:.3f} | {m['accuracy']:.3f} | {m['roc_auc']:.3f} |

On the training examples: accuracy {f['train_fit']['accuracy']:.3f}, ROC AUC
{f['train_fit']['roc_auc']:.3f}.

## Intended use and limits

- A ranking signal for English web documents in a pretraining corpus: keep the signal as a column and
  choose a threshold after looking at its distribution (`stats/score.json`); nothing is dropped by
  default.
- English only. The scoring job gives documents in other languages a null score; a score computed on
  other languages would mean nothing.
- It learns "resembles the positives", nothing more: with encyclopedic positives it favors
  encyclopedic register and penalizes forums, fiction, dialogue, code and lists, whatever their value.
- Trained on few examples, so its held-out numbers are noisy and it has seen only a few hundred web
  pages; retrain on your own reference data (`--positives`, e.g. a Wikipedia dump as text or JSONL)
  and crawl (`--negatives`) before relying on it.
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m quality_models.train_fasttext",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--positives", nargs="+", default=list(DEFAULT_POSITIVES), metavar="FILE",
                    help="reference text: plain text or JSONL(.gz) with `text` (default: bundled WikiText-2)")
    ap.add_argument("--negatives", nargs="+", default=list(DEFAULT_NEGATIVES), metavar="FILE",
                    help="web text: WARC(.gz) or JSONL(.gz) with `text` (default: the bundled sample)")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"model file to write (default {DEFAULT_OUT})")
    ap.add_argument("--card", help="model card to write (default: the model path with .md)")
    ap.add_argument("--seed", type=int, default=0)
    d = TrainConfig()
    ap.add_argument("--dim", type=int, default=d.dim)
    ap.add_argument("--epoch", type=int, default=d.epoch)
    ap.add_argument("--lr", type=float, default=d.lr)
    ap.add_argument("--word-ngrams", type=int, default=d.word_ngrams)
    ap.add_argument("--min-count", type=int, default=d.min_count)
    ap.add_argument("--bucket", type=int, default=d.bucket)
    ap.add_argument("--cutoff", type=int, default=d.cutoff)
    args = ap.parse_args(argv)
    for p in args.positives + args.negatives:
        if not Path(p).is_file():
            ap.error(f"input file not found: {p}")
    cfg = TrainConfig(seed=args.seed, dim=args.dim, epoch=args.epoch, lr=args.lr,
                      word_ngrams=args.word_ngrams, min_count=args.min_count, bucket=args.bucket,
                      cutoff=args.cutoff)
    card = args.card or str(Path(args.out).with_suffix(".md"))
    facts = train(args.positives, args.negatives, args.out, cfg, card=card)
    m = facts["held_out"]
    print(f"wrote {facts['model']} ({facts['model_bytes']:,} bytes) and {_display(card)}: "
          f"{facts['counts']['train']} train / {facts['counts']['held_out']} held-out examples, "
          f"held-out precision {m['precision']:.3f} recall {m['recall']:.3f} AUC {m['roc_auc']:.3f}, "
          f"trained in {facts['seconds']['train_and_quantize']:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
