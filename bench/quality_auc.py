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

    python bench/quality_auc.py --candidates prose=M1.ftz instruct=M2.ftz both=M3.ftz [--split decide|report|all]

English candidates against each other (issue 37): positives are the prose of the works every candidate held out (the
default's prose files, seed 0, holdout 0.2: no candidate trained on them) and the evaluation quarter of the
instruction data (quality_models/instruct.py: never copied, never trained on); negatives the English web no candidate
trained against (the ablation halves of C4 and the 2019 Common Crawl excerpt). Scored as paragraphs, as documents,
and as cleaned documents (`cleaned_documents`: both sides through the default clean stage, the ones it keeps, their
cleaned text: what the score stage reads). Every unit (a work, a record, a page)
is on one side of a hash, `decide` or `report`: choose a candidate on one, state its figures on the other. Results
in build/bench/quality_candidates.json.
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


PROSE_EN = REPO / "quality_models" / "data" / "prose" / "en"
CANDIDATE_WEB = {"c4": REPO / "examples" / "ablate" / "web" / "c4-en.jsonl.gz",
                 "cc2019": REPO / "examples" / "ablate" / "web" / "cc2019-dolma.jsonl.gz"}


def report_side(group: str) -> str:
    import hashlib
    return "report" if hashlib.sha1(f"auc-side:{group}".encode()).digest()[0] % 2 else "decide"


def candidate_sets(shared: Path, n_instruct: int, which: str) -> dict[str, list[Doc]]:
    """{kind: documents} never trained on by any candidate: prose kinds, instruct, web sources."""
    from quality_models import instruct

    sets: dict[str, list[Doc]] = {}
    for f in sorted(PROSE_EN.glob("*.jsonl.gz")):
        sets[f.name.split(".")[0]] = [d for d in read_input(parse_spec(f"{f}:lang=en"), Counter())
                                      if ex.held_out(d.group, 0, 0.2)]
    sets["instruct"] = [Doc(r["text"], r["id"], "instruct", "en", file=r["id"], id=r["id"])
                        for r in instruct.evaluation(shared)[:n_instruct]]
    for name, f in CANDIDATE_WEB.items():
        docs = read_input(parse_spec(str(f)), Counter())
        sets["web-" + name] = keep_languages([Doc(d.text, d.group, d.input, None, file=d.file) for d in docs],
                                             ["en"], Counter())
    if which != "all":
        sets = {k: [d for d in v if report_side(d.group or d.text[:200]) == which] for k, v in sets.items()}
    return sets


def through_clean(sets: dict[str, list[Doc]]) -> tuple[dict[str, list[Doc]], dict[str, dict]]:
    """The documents as the score stage reads them: each set through the default clean stage (normalisation, line
    cleaning, language ID, heuristics), only the kept ones, with their cleaned text; and what was dropped, by reason.
    The score stage never sees a page the heuristics reject (a one-line "Log in with OpenID" page)."""
    from pipeline.clean.langid import get_identifier
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch

    ident, cfg = get_identifier(), CleanConfig()
    kept, dropped = {}, {}
    for k, docs in sets.items():
        rows = clean_batch([d.text for d in docs], ident, cfg)
        kept[k] = [Doc(r["text"], d.group, d.input, "en", file=d.file) for d, r in zip(docs, rows)
                   if r["reason"] is None]
        dropped[k] = dict(Counter(r["reason"] for r in rows if r["reason"] is not None).most_common())
    return kept, dropped


def candidates(models: dict[str, Path], shared: Path, n_instruct: int, which: str) -> dict:
    import statistics

    sets = candidate_sets(shared, n_instruct, which)
    cleaned, dropped = through_clean(sets)
    cfg = ex.ChunkConfig()
    chunks = {k: ex.examples(v, 0, cfg, set()) for k, v in sets.items()}
    prose_kinds = [k for k in sets if k != "instruct" and not k.startswith("web-")]
    web_kinds = [k for k in sets if k.startswith("web-")]
    out = {"split": which, "documents": {k: len(v) for k, v in sets.items()},
           "chunks": {k: len(v) for k, v in chunks.items()},
           "documents_cleaned": {k: len(v) for k, v in cleaned.items()}, "dropped_by_clean": dropped, "models": {}}
    for name, path in models.items():
        clf = QualityClassifier(path)
        doc_s = {k: [s or 0.0 for s in clf.predict_proba([d.text for d in v], ["en"] * len(v))]
                 for k, v in sets.items()}
        chk_s = {k: [s or 0.0 for s in clf.predict_proba([e.text for e in v], ["en"] * len(v))]
                 for k, v in chunks.items()}
        cln_s = {k: [s or 0.0 for s in clf.predict_proba([d.text for d in v], ["en"] * len(v))]
                 for k, v in cleaned.items()}
        res = {"median_document": {k: round(statistics.median(v), 3) for k, v in doc_s.items() if v}}
        for unit, sc in (("paragraphs", chk_s), ("documents", doc_s), ("cleaned_documents", cln_s)):
            neg = [s for k in web_kinds for s in sc[k]]
            for label, kinds in (("prose", prose_kinds), ("instruct", ["instruct"]),
                                 ("prose+instruct", prose_kinds + ["instruct"])):
                pos = [s for k in kinds for s in sc[k]]
                res[f"{unit}_{label}"] = round(roc_auc(pos + neg, [1] * len(pos) + [0] * len(neg)), 3)
            both = [s for k in prose_kinds + ["instruct"] for s in sc[k]]
            for w in web_kinds:
                res[f"{unit}_vs_{w}"] = round(roc_auc(both + sc[w], [1] * len(both) + [0] * len(sc[w])), 3)
        out["models"][name] = res
        print(name, json.dumps(res), file=sys.stderr)
    return out


def zh_science(shared: Path) -> dict:
    """Chinese: the held-out works of the five prose kinds and the half of the science abstracts never copied
    (quality_models/make_data.py: science_side) against the unseen Chinese web, the previous default (five prose kinds)
    against the default (science's other half a sixth positive kind)."""
    import statistics

    from quality_models.make_data import science_side

    prose = [d for d in heldout_prose("zh") if d.input != "zh/science"]
    sci = [d for d in read_input(parse_spec(f"{shared / 'prose' / 'zh' / 'science' / 'csl.jsonl.gz'}:lang=zh"),
                                 Counter()) if science_side(d.group) == "eval"]
    web_all = [d for f in UNSEEN_WEB for d in read_input(parse_spec(f), Counter())]
    web = keep_languages([Doc(d.text, d.group, d.input, None, file=d.file) for d in web_all], ["zh"], Counter())
    cfg = ex.ChunkConfig()
    chunks = {k: ex.examples(v, 0, cfg, set()) for k, v in (("prose", prose), ("science", sci), ("web", web))}
    out = {"documents": {"prose": len(prose), "science": len(sci), "web": len(web)},
           "chunks": {k: len(v) for k, v in chunks.items()}}
    for name, path in (("previous", REPO / "quality_models" / "previous" / "quality_zh_prose.ftz"),
                       ("default", REPO / "quality_models" / "default" / "quality_zh.ftz")):
        clf = QualityClassifier(path)

        def score(texts):
            return [s or 0.0 for s in clf.predict_proba(texts, ["zh"] * len(texts))]
        res = {}
        for unit, sets in (("paragraphs", {k: [e.text for e in v] for k, v in chunks.items()}),
                           ("documents", {"prose": [d.text for d in prose], "science": [d.text for d in sci],
                                          "web": [d.text for d in web]})):
            sc = {k: score(v) for k, v in sets.items()}
            for pos in ("prose", "science"):
                res[f"{unit}_{pos}"] = round(roc_auc(sc[pos] + sc["web"], [1] * len(sc[pos]) + [0] * len(sc["web"])), 3)
            both = sc["prose"] + sc["science"]
            res[f"{unit}_prose+science"] = round(roc_auc(both + sc["web"], [1] * len(both) + [0] * len(sc["web"])), 3)
            if unit == "documents":
                res["median_science"] = round(statistics.median(sc["science"]), 3)
        out[name] = res
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", nargs="*", metavar="NAME=MODEL", help="English candidates (see above)")
    ap.add_argument("--split", choices=("decide", "report", "all"), default="report")
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--instruct-docs", type=int, default=1200,
                    help="the first N records of the instruction evaluation part (Dolly and OASST1 alternating)")
    ap.add_argument("--zh-science", action="store_true",
                    help="Chinese: prose and the science abstracts never copied, previous default against default")
    ap.add_argument("--pages", type=Path, help="crawled pages never trained on (../shared/data/extraction)")
    ap.add_argument("--kenlm-before", type=Path)
    ap.add_argument("--kenlm-after", type=Path, default=REPO / "quality_models" / "default")
    args = ap.parse_args()
    if args.zh_science:
        result = zh_science(args.shared)
        out = REPO / "build" / "bench" / "quality_zh_science.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
        return
    if args.candidates:
        models = {c.split("=", 1)[0]: Path(c.split("=", 1)[1]) for c in args.candidates}
        result = candidates(models, args.shared, args.instruct_docs, args.split)
        out = REPO / "build" / "bench" / f"quality_candidates-{args.split}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
        return
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
