"""`glassbox train-classifier`: a fastText quality classifier for one language, from the pipeline's own inputs
or from a label file, with its model card.

    glassbox train-classifier --lang en --positives PROSE.jsonl.gz:name=textbook ... \\
        --negatives crawl/*.warc.gz DATA:part=rejected,stage=clean ... --out quality_models/mine/quality_en.ftz
    glassbox train-classifier --lang zh --labels labels.jsonl [--threshold 3] --out quality_zh.ftz

Inputs are described in quality_models/inputs.py (files, globs, DATA folders; source=, lang=, part=, name=,
license= options). Documents are cut into paragraph-sized chunks through the word layer, de-duplicated, split
into training and held-out parts by whole works (a hash of the seed and the document's group), the classes
balanced evenly across inputs (quality_models/examples.py); fastText trains on one thread with the seed, so the
same inputs give the same model, byte for byte. Writes OUT (the model), OUT.md (the card: data files with
sha256 and licences, parameters, held-out precision, recall and ROC AUC, the score distribution per input: what
the classifier prefers) and OUT.json (the same facts). `--describe` inputs are only scored, for the card.

Exit status 2 with a one-line message for a mistake in the inputs (a missing file, one class only, a label file
without usable grades); rows of a label file without a usable grade are counted in the card, never fatal.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from glassbox.contracts import sha256_file
from pipeline.models import ModelError
from pipeline.score.quality import HQ_CLASS_PREFIX, HQ_LABEL, LQ_LABEL, QualityClassifier, preprocess
from quality_models import examples as ex
from quality_models.inputs import Doc, InputError, InputSpec, parse_spec, read_input, read_labels
from quality_models.metrics import binary_metrics, summary

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class FastTextParams:
    dim: int = 32
    epoch: int = 20
    lr: float = 0.2
    word_ngrams: int = 2
    min_count: int = 2
    bucket: int = 200_000
    minn: int = 0        # character n-grams of words (0: none)
    maxn: int = 0
    # quantization: keep the `cutoff` most useful rows of the input matrix, then retrain a little
    cutoff: int = 20_000
    dsub: int = 2


# --- reading -----------------------------------------------------------------------------------------------------
def read_all(specs: list[InputSpec], skipped: Counter) -> list[Doc]:
    docs: list[Doc] = []
    for spec in specs:
        got = read_input(spec, skipped)
        if not got:
            raise InputError(f"{spec.path}: no document with text passed its filters "
                             f"({', '.join(f'{k}={v}' for k, v in spec.options.items()) or 'none'})")
        docs += got
    return docs


def keep_languages(docs: list[Doc], langs: list[str], skipped: Counter) -> list[Doc]:
    """The documents in one of `langs`; a document without a language gets lid.176's (loaded only then)."""
    unknown = [d for d in docs if not d.lang]
    if unknown:
        from pipeline.clean.langid import get_identifier

        for d, (lang, _) in zip(unknown, get_identifier().predict([d.text for d in unknown])):
            d.lang = lang
    out = []
    for d in docs:
        if d.lang in langs:
            out.append(d)
        else:
            skipped[f"{d.input}: language {d.lang}"] += 1
    return out


def split_labels(rows, threshold: float, langs: list[str], skipped: Counter) -> tuple[list[Doc], list[Doc]]:
    pos, neg = [], []
    for r in rows:
        if r.doc.lang and r.doc.lang not in langs:
            skipped[f"labels: language {r.doc.lang}"] += 1
            continue
        (pos if r.grade >= threshold else neg).append(r.doc)
    return pos, neg


# --- training ----------------------------------------------------------------------------------------------------
def fit(data: ex.Dataset, out: Path, params: FastTextParams, seed: int,
        classes: dict[str, str] | None = None) -> None:
    """Train and quantize on one thread (deterministic), write beside `out` and rename. `classes` ({input name:
    fastText label}) gives positive inputs a class of their own; the others are HQ_LABEL or LQ_LABEL."""
    import fasttext

    classes = classes or {}

    def label(e: ex.Example) -> str:
        return classes.get(e.input, HQ_LABEL) if e.label else LQ_LABEL

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="glassbox-ft-") as tmp:
        train_file = Path(tmp) / "train.txt"
        train_file.write_text("".join(f"{label(e)} {preprocess(e.text, e.lang)}\n" for e in data.train),
                              encoding="utf-8")
        try:
            model = fasttext.train_supervised(
                input=str(train_file), dim=params.dim, epoch=params.epoch, lr=params.lr,
                wordNgrams=params.word_ngrams, minCount=params.min_count, bucket=params.bucket,
                minn=params.minn, maxn=params.maxn, loss="softmax", thread=1, seed=seed, verbose=0)
        except RuntimeError as e:
            if "NaN" not in str(e):
                raise
            raise InputError(f"fastText training diverged ({e}): lower --lr (now {params.lr})") from None
        # quantized, the model shrinks about tenfold; `retrain` refits the kept rows after the cutoff
        model.quantize(input=str(train_file), qnorm=True, retrain=True, cutoff=params.cutoff,
                       dsub=params.dsub, thread=1, verbose=0)
        partial = out.with_name(out.name + ".partial")
        model.save_model(str(partial))
        os.replace(partial, out)


def score_examples(clf: QualityClassifier, items: list) -> list[float]:
    scores = clf.predict_proba([e.text for e in items], [e.lang for e in items])
    return [s if s is not None else 0.0 for s in scores]


def by_input(items: list, scores: list[float]) -> dict[str, dict]:
    groups: dict[str, list[float]] = defaultdict(list)
    labels: dict[str, int] = {}
    for e, s in zip(items, scores):
        groups[e.input].append(s)
        labels[e.input] = e.label
    return {name: {"label": labels[name], **summary(v)} for name, v in sorted(groups.items())}


def display(path) -> str:
    """A path as the card shows it: relative to the working directory or the repository, else its name (no
    path of the machine that trained it)."""
    p = Path(path).resolve()
    for base in (Path.cwd().resolve(), REPO):
        try:
            return p.relative_to(base).as_posix()
        except ValueError:
            pass
    return p.name


def shown(arg: str) -> str:
    """An input as the card shows it: its path made relative (display), its options as given."""
    spec = parse_spec(arg)
    opts = ",".join(f"{k}={v}" for k, v in spec.options.items())
    return display(spec.path) + (f":{opts}" if opts else "")


def files_table(docs: list[Doc], role: str, used: dict[str, int]) -> list[dict]:
    per_file: dict[str, dict] = {}
    for d in docs:
        f = per_file.setdefault(d.file, {"role": role, "input": d.input, "path": display(d.file),
                                         "sha256": sha256_file(d.file), "licenses": set(), "documents": 0})
        f["documents"] += 1
        if d.license:
            f["licenses"].add(d.license)
    rows = []
    for f in per_file.values():
        f["licenses"] = sorted(f["licenses"]) or ["not stated"]
        f["chunks_trained"] = used.get(f["input"], 0)
        rows.append(f)
    return sorted(rows, key=lambda r: (r["role"], r["input"], r["path"]))


def input_weights(args: list[str]) -> dict[str, float]:
    """{input name: weight} of the inputs given `weight=` (a share of the balanced class: an input of weight 2 gives
    twice the chunks of an input of weight 1, while both last)."""
    out = {}
    for arg in args:
        spec = parse_spec(arg)
        if "weight" in spec.options:
            try:
                w = float(spec.options["weight"])
            except ValueError:
                w = -1.0
            if not w > 0:
                raise InputError(f"{arg}: weight={spec.options['weight']} is not a positive number")
            out[spec.name] = w
    return out


def positive_classes(positives: list[str], negatives: list[str]) -> dict[str, str]:
    """{input name: fastText label} of the positives given `class=NAME` (label `__label__hq_NAME`). Positives of
    different kinds (prose, instruction answers) as classes of their own: the score is 1 - P(web), and the web
    need not lie on one side of a single line between it and a blend of both kinds (docs/quality.md)."""
    for arg in negatives:
        if "class" in parse_spec(arg).options:
            raise InputError(f"{arg}: class= names a kind of positive; the negatives are one class")
    out = {}
    for arg in positives:
        spec = parse_spec(arg)
        name = spec.options.get("class")
        if name is None:
            continue
        if not re.fullmatch(r"[a-z0-9]+", name):
            raise InputError(f"{arg}: class={name!r} must be lower-case letters and digits (it becomes the label "
                             f"{HQ_CLASS_PREFIX}<class>)")
        out[spec.name] = HQ_CLASS_PREFIX + name
    return out


def train(args) -> dict:
    skipped: Counter = Counter()
    langs = args.lang
    pos_docs = keep_languages(read_all([parse_spec(s) for s in args.positives], skipped), langs, skipped)
    neg_docs = keep_languages(read_all([parse_spec(s) for s in args.negatives], skipped), langs, skipped)
    label_rows = 0
    if args.labels:
        rows = read_labels(args.labels, skipped)
        label_rows = len(rows)
        if not rows:
            raise InputError(f"--labels {args.labels}: no row with a grade in [0, 5] and text "
                             f"({', '.join(f'{k}: {v}' for k, v in sorted(skipped.items())) or 'empty file'})")
        lp, ln = split_labels(rows, args.threshold, langs, skipped)
        if not lp or not ln:
            side = "at or above" if lp else "below"
            raise InputError(f"--labels {args.labels}: all {len(lp) + len(ln)} graded rows in {', '.join(langs)} are "
                             f"{side} --threshold {args.threshold:g}, one class only; move the threshold or "
                             "annotate more documents (or add --positives/--negatives)")
        pos_docs, neg_docs = pos_docs + lp, neg_docs + ln
    if not pos_docs or not neg_docs:
        raise InputError(f"need positives and negatives in {', '.join(langs)}: got {len(pos_docs)} positive and "
                         f"{len(neg_docs)} negative documents (give --positives and --negatives, or --labels)")
    chunking = ex.ChunkConfig(min_words=args.min_words, max_words=args.max_words)
    weights = input_weights(args.positives + args.negatives)
    classes = positive_classes(args.positives, args.negatives)
    data = ex.build(pos_docs, neg_docs, args.seed, args.holdout, chunking, args.balance == "oversample", weights)
    if not data.held_out_balanced:
        raise InputError("no held-out chunk of one class: give more documents or a larger --holdout")
    params = FastTextParams(dim=args.dim, epoch=args.epoch, lr=args.lr, word_ngrams=args.word_ngrams,
                            min_count=args.min_count, bucket=args.bucket, minn=args.minn, maxn=args.maxn,
                            cutoff=args.cutoff)
    out = Path(args.out)
    fit(data, out, params, args.seed, classes)

    clf = QualityClassifier(out)   # scored exactly as the score stage will
    bal = data.held_out_balanced
    held = binary_metrics(score_examples(clf, bal), [e.label for e in bal])
    fit_metrics = binary_metrics(score_examples(clf, data.train), [e.label for e in data.train])
    all_scores = score_examples(clf, data.held_out)
    described = {}
    if args.describe:
        desc_docs = keep_languages(read_all([parse_spec(s) for s in args.describe], skipped), langs, skipped)
        items = ex.examples(desc_docs, -1, chunking, set())
        described = by_input(items, score_examples(clf, items))
    used = Counter(e.input for e in data.train)
    return {
        "inputs": {k: [shown(x) for x in getattr(args, k)] for k in ("positives", "negatives", "describe")},
        "model": display(out), "model_bytes": out.stat().st_size, "model_sha256": sha256_file(out),
        "languages": langs, "vocabulary_words": len(clf.load().get_words()),
        "fasttext_version": _version("fasttext"), "seed": args.seed, "holdout": args.holdout,
        "params": asdict(params), "chunking": asdict(chunking), "positive_classes": classes,
        "labels": ({"file": display(args.labels), "sha256": sha256_file(args.labels), "threshold": args.threshold,
                    "rows_with_grade": label_rows} if args.labels else None),
        "files": files_table(pos_docs, "positive", used) + files_table(neg_docs, "negative", used),
        "counts": data.counts, "held_out": held, "train_fit": fit_metrics,
        "held_out_by_input": by_input(data.held_out, all_scores), "described": described,
        "skipped": dict(sorted(skipped.items())), "about": args.about or [],
    }


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="glassbox train-classifier", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="inputs: PATH[:key=value,...], keys name, source, lang, license, part "
                                        "(kept|rejected, for a DATA folder), stage, reason, field, weight, "
                                        "class (a positive kind as its own class)")
    ap.add_argument("--lang", nargs="+", required=True, metavar="LANG",
                    help="the language(s) the model is for (lid.176 codes); other documents are left out")
    ap.add_argument("--positives", nargs="*", default=[], metavar="INPUT", help="reference-quality documents")
    ap.add_argument("--negatives", nargs="*", default=[], metavar="INPUT", help="web text, or what a stage rejected")
    ap.add_argument("--labels", metavar="FILE", help="graded documents (JSONL, `glassbox annotate`'s output)")
    ap.add_argument("--threshold", type=float, default=3.0,
                    help="a labelled document is positive when its grade is at least this (default 3)")
    ap.add_argument("--describe", nargs="*", default=[], metavar="INPUT",
                    help="inputs only scored, for the card's table (e.g. a kind left out of training)")
    ap.add_argument("--out", required=True, help="model file to write (.ftz); the card beside it (.md, .json)")
    ap.add_argument("--about", action="append", metavar="TEXT", help="a line for the card's notes (repeatable)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--holdout", type=float, default=0.2, help="fraction of works held out (default 0.2)")
    ap.add_argument("--balance", choices=("downsample", "oversample"), default="downsample",
                    help="equal classes by cutting the larger (default) or repeating the smaller")
    ap.add_argument("--min-words", type=int, default=ex.ChunkConfig.min_words)
    ap.add_argument("--max-words", type=int, default=ex.ChunkConfig.max_words)
    d = FastTextParams()
    for name in ("dim", "epoch", "word_ngrams", "min_count", "bucket", "minn", "maxn", "cutoff"):
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(d, name))
    ap.add_argument("--lr", type=float, default=d.lr)
    return ap


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if not 0 < args.holdout < 1:
        ap.error(f"--holdout must be between 0 and 1, got {args.holdout}")
    if not args.labels and not (args.positives and args.negatives):
        ap.error("give --positives and --negatives, or --labels")
    try:
        facts = train(args)
    except (InputError, ModelError) as e:
        print(f"train-classifier error: {e}", file=sys.stderr)
        return 2
    from quality_models.card import render

    out = Path(args.out)
    card = out.with_suffix(".md")
    card.write_text(render(facts), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(facts, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    m, c = facts["held_out"], facts["counts"]
    print(f"wrote {facts['model']} ({facts['model_bytes']:,} bytes), {display(card)}: {c['train_per_class']} "
          f"chunks per class trained, {m['n']} held out; held-out precision {m['precision']:.3f} recall "
          f"{m['recall']:.3f} ROC AUC {m['roc_auc']:.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
