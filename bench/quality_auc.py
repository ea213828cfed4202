"""Benchmark: held-out ROC AUC of the quality classifiers, old against new, per language; and of the Chinese KenLM
model (prose against spam), before against after.

    python bench/quality_auc.py [--pages ../shared/data/extraction] [--kenlm-before DIR --kenlm-after DIR]

Positives: prose of the works each default classifier held out of its training (the same hash of seed and group as
quality_models/examples.py; its card's inputs). Negatives: web pages the classifiers never saw at all, the halves
of the web excerpts kept for the ablations (examples/ablate/web/), in the classifier's language (lid.176); with
--pages, also the crawled pages of that folder (English: ../shared/data/extraction, never trained on). Scored as
paragraph-sized chunks (the training chunking) and as whole documents (as the score stage reads them). The previous
default (quality_models/previous/quality_ft.ftz) is scored through the preprocessing it was trained with (lower
case, punctuation split off, whitespace words); on Chinese it was never applied by the pipeline (no score).
KenLM: perplexity (lower is more prose-like) of held-out Chinese prose documents against Chinese spam pages (the
sample's Common Crawl excerpt and the Common Crawl pages of the ablation half) and against all the unseen web.
Results in build/bench/quality_auc.json.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.score.quality import QualityClassifier  # noqa: E402
from quality_models import examples as ex  # noqa: E402
from quality_models.inputs import Doc, parse_spec, read_input  # noqa: E402
from quality_models.metrics import roc_auc  # noqa: E402
from quality_models.train import keep_languages  # noqa: E402

PREVIOUS = REPO / "quality_models" / "previous" / "quality_ft.ftz"
UNSEEN_WEB = sorted(glob.glob(str(REPO / "examples" / "ablate" / "web" / "*.jsonl.gz")))
SPAM_WARC = REPO / "examples" / "sample" / "resiliparse-cc-excerpt.warc.gz"
_MARK = re.compile(r"([^\w\s])")


def legacy_preprocess(text: str) -> str:
    """What the scorer did before per-language models (the previous default was trained on it)."""
    return " ".join(_MARK.sub(r" \1 ", text.lower()).split())


def previous_scores(texts: list[str]) -> list[float]:
    model = QualityClassifier(PREVIOUS).load()
    labels, probs = model.predict([legacy_preprocess(t[:20_000]) or " " for t in texts], k=2)
    return [dict(zip(lab, p)).get("__label__hq", 0.0) for lab, p in zip(labels, probs)]


def heldout_prose(lang: str) -> list[Doc]:
    facts = json.loads((REPO / "quality_models" / "default" / f"quality_{lang}.json").read_text())
    return [d for arg in facts["inputs"]["positives"] for d in read_input(parse_spec(str(REPO / arg)), Counter())
            if ex.held_out(d.group, facts["seed"], facts["holdout"])]


def pages(root: Path) -> list[Doc]:
    from pipeline.extract.html import extract_html
    from pipeline.extract.settings import ExtractConfig

    out = []
    for p in sorted(root.rglob("*.html.gz")) + sorted(root.rglob("source.html")):
        html = (gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()).decode("utf-8", "replace")
        text = extract_html(html, None, ExtractConfig())
        if text:
            out.append(Doc(text, str(p), "pages", file=str(p)))
    return out


def aucs(pos: list[Doc], neg: list[Doc], lang: str) -> dict:
    cfg = ex.ChunkConfig()
    pc, nc = ex.examples(pos, 1, cfg, set()), ex.examples(neg, 0, cfg, set())
    new = QualityClassifier(REPO / "quality_models" / "default" / f"quality_{lang}.ftz")
    out = {"chunks": [len(pc), len(nc)], "documents": [len(pos), len(neg)]}
    for unit, items in (("chunk", pc + nc), ("document", pos + neg)):
        labels = [1] * (len(pc) if unit == "chunk" else len(pos)) + [0] * (len(nc) if unit == "chunk" else len(neg))
        texts = [e.text for e in items]
        out[f"new_{unit}_auc"] = round(roc_auc([s or 0.0 for s in new.predict_proba(texts, [lang] * len(texts))],
                                               labels), 3)
        out[f"previous_{unit}_auc"] = round(roc_auc(previous_scores(texts), labels), 3)
    return out


def kenlm_aucs(before: Path, after: Path, prose: list[Doc], web: list[Doc], spam: list[str]) -> dict:
    from pipeline.score.perplexity import PerplexityScorer

    out = {}
    for name, folder in (("before", before), ("after", after)):
        scorer = PerplexityScorer(str(folder), "zh")
        p = scorer.score_batch([d.text for d in prose])
        for neg_name, neg in (("spam", spam), ("web", [d.text for d in web])):
            n = scorer.score_batch(neg)
            pairs = [(-x, 1) for x in p if x] + [(-x, 0) for x in n if x]
            out[f"{name}_vs_{neg_name}_auc"] = round(roc_auc([s for s, _ in pairs], [y for _, y in pairs]), 3)
        out[f"{name}_model_bytes"] = (folder / "zh.klm").stat().st_size
    out["documents"] = {"prose": len(prose), "spam": len(spam), "web": len(web)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=Path, help="crawled pages never trained on (../shared/data/extraction)")
    ap.add_argument("--kenlm-before", type=Path)
    ap.add_argument("--kenlm-after", type=Path, default=REPO / "quality_models" / "default")
    args = ap.parse_args()
    web_all = [d for f in UNSEEN_WEB for d in read_input(parse_spec(f), Counter())]
    result = {}
    for lang in ("en", "zh"):
        prose = heldout_prose(lang)
        web = keep_languages([Doc(d.text, d.group, d.input, None, file=d.file) for d in web_all], [lang], Counter())
        result[lang] = {"unseen_web": aucs(prose, web, lang)}
        if args.pages and lang == "en":
            result[lang]["pages"] = aucs(prose, keep_languages(pages(args.pages), [lang], Counter()), lang)
        if lang == "zh" and args.kenlm_before:
            from quality_models.train_kenlm import extract_web_texts, keep_language
            spam = keep_language(extract_web_texts(SPAM_WARC), "zh") + \
                [d.text for d in web if "flagdata-cc-zh" in (d.file or "") or "cc2019" in (d.file or "")]
            result["zh_kenlm"] = kenlm_aucs(args.kenlm_before, args.kenlm_after, prose, web, spam)
    out = REPO / "build" / "bench" / "quality_auc.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
