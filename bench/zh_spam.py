"""Issue 38's figures: each spam rule on Chinese pages it never read (quality_models/spam_pages.py: the held-out
split), on the held-out reference prose, and what it costs.

    python bench/zh_spam.py [--shared ../shared/data] [--classifier MODEL --threshold T] [--out build/bench/zh_spam.json]
    python bench/zh_spam.py --terms          # per term: hits on dev ordinary pages and calibration prose (review)
    python bench/zh_spam.py --mine [FILE.jsonl ...]   # candidate brand names for a reader to review

Rules measured, alone and together:
- lists_before: the built-in zh list as before issue 38 (no brand lexicon, the ads terms of lists/safety/prune/zh.tsv in);
- lists_shipped: the built-in lists as they are (with the brand lexicon lists/safety/brands/zh.tsv);
- lists_dev_lexicon: shipped, less the brand terms read off held-out pages (quality_models/data/spam_zh/
  lexicon_provenance.tsv): the figure that counts no page by its own words;
- each structure rule of pipeline/clean/spam_signals.py at its default threshold;
- the spam classifier (--classifier), a fastText model whose positive label is __label__spam.
For each: real spam pages rejected, ordinary pages kept (per source), held-out prose lost, with counts.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.clean import spam_signals  # noqa: E402
from quality_models import spam_pages  # noqa: E402

BRANDS = REPO / "pipeline/clean/lists/safety/brands/zh.tsv"


PROVENANCE = REPO / "quality_models/data/spam_zh/lexicon_provenance.tsv"
BUILTIN = REPO / "pipeline/clean/lists/safety"


def safety(variant: str):
    """The content-safety lists as a variant: "before" (the built-in zh list as it was before issue 38: no brand
    lexicon, the 9 ads terms of lists/safety/prune/zh.tsv still in), "shipped" (the built-in lists as they are) or
    "dev_lexicon" (shipped, without the brand terms read off held-out pages: the honest held-out figure)."""
    from pipeline.clean.list_settings import SafetyConfig
    from pipeline.clean.safety import Safety

    if variant == "shipped":
        return Safety(SafetyConfig())
    out = REPO / "build" / "bench" / f"zh_lists_{variant}"
    out.mkdir(parents=True, exist_ok=True)
    base = (BUILTIN / "zh.tsv").read_text(encoding="utf-8")
    files = [str(BUILTIN / "allow/zh.txt")]
    if variant == "before":
        pruned = [ln.split("\t")[1] for ln in (BUILTIN / "prune/zh.tsv").read_text(encoding="utf-8").splitlines()
                  if ln and not ln.startswith("#")]
        for term in pruned:
            base = base.replace(f"# dropped (on ordinary web pages, lists/safety/prune/zh.tsv): ads\t{term}",
                                f"ads\t{term}")
    else:
        held = {ln.split("\t")[0] for ln in PROVENANCE.read_text(encoding="utf-8").splitlines()
                if ln and not ln.startswith("#") and ln.split("\t")[2] == "page:held_out"}
        brands = [ln for ln in BRANDS.read_text(encoding="utf-8").splitlines()
                  if not ("\t" in ln and not ln.startswith("#") and ln.split("\t")[1] in held)]
        (out / "brands.tsv").write_text("\n".join(brands) + "\n", encoding="utf-8")
        files.append(str(out / "brands.tsv"))
    (out / "zh.tsv").write_text(base, encoding="utf-8")
    return Safety(SafetyConfig(builtin=False, lists={"zh": [str(out / "zh.tsv")] + files}))


def list_reason(s, text: str) -> str | None:
    return s.reason(s.signals(text, "zh"), "zh")


class SpamClassifier:
    def __init__(self, path: str):
        import fasttext

        from pipeline.score.quality import preprocess
        self.model = fasttext.load_model(path)
        self.pre = preprocess

    def scores(self, texts: list[str]) -> list[float]:
        labels, probs = self.model.predict([self.pre(t, "zh") for t in texts], k=2)
        out = []
        for ls, ps in zip(labels, probs):
            d = dict(zip(ls, ps))
            out.append(float(d.get("__label__spam", 0.0)))
        return out


def prose(shared: Path, half: str) -> list[dict]:
    from pipeline.clean.safety_calibrate import prose_docs
    docs = prose_docs(shared / "prose", half).get("zh", [])
    return [{"kind": k, "id": i, "text": t} for k, i, t in docs if k != "literature_classical"]


def evaluate(pages, prose_docs, deciders: dict) -> dict:
    out = {}
    for name, fn in deciders.items():
        spam = [p for p in pages if p["label"] == "spam"]
        ok = [p for p in pages if p["label"] == "ok"]
        spam_hit = [p for p in spam if fn(p)]
        ok_hit = [p for p in ok if fn(p)]
        by_src = defaultdict(lambda: [0, 0])
        for p in ok:
            by_src[p["source"]][1] += 1
            by_src[p["source"]][0] += p in ok_hit
        web_ok = [p for p in ok if p["source"] != "flagdata-zhihu-qa"]
        web_hit = [p for p in web_ok if p in ok_hit]
        prose_hit = [d for d in prose_docs if fn({"text": d["text"], "url": None, "source": "prose"})]
        out[name] = {
            "spam_rejected": f"{len(spam_hit)}/{len(spam)}",
            "web_kept": f"{len(web_ok) - len(web_hit)}/{len(web_ok)}",
            "zhihu_kept": f"{by_src['flagdata-zhihu-qa'][1] - by_src['flagdata-zhihu-qa'][0]}/"
                          f"{by_src['flagdata-zhihu-qa'][1]}",
            "prose_lost": f"{len(prose_hit)}/{len(prose_docs)}",
            "web_lost_pages": [p["id"] for p in web_hit][:20],
            "spam_missed": [p["id"] for p in spam if p not in spam_hit],
        }
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--classifier", default=None)
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--split", default="held_out", choices=("held_out", "dev"))
    ap.add_argument("--terms", action="store_true")
    ap.add_argument("--lid", default=str(REPO / "models" / "lid.176.ftz"),
                    help="lid.176 for the whole clean stage (clean.languages [zh]); skipped when missing")
    ap.add_argument("--mine", nargs="*", type=Path, default=None,
                    help="list candidate brand names: names before the brand pattern (spam_signals), counted per "
                         "page, from the dev split and any JSONL files given (`text` field); a reader reviews them")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "bench" / "zh_spam.json")
    args = ap.parse_args(argv)

    pages = spam_pages.load()
    if args.mine is not None:
        return mine(pages, args.mine)
    if args.terms:
        return terms(pages, args.shared)
    pages = [p for p in pages if p["split"] == args.split]
    prose_docs = prose(args.shared, "held_out" if args.split == "held_out" else "calibration")
    base, brands, devlex = safety("before"), safety("shipped"), safety("dev_lexicon")
    sig_cache = {}

    def sig(p):
        k = id(p)
        if k not in sig_cache:
            sig_cache[k] = spam_signals.signals(p["text"], p.get("url"))
        return sig_cache[k]

    deciders = {
        "lists_before": lambda p: list_reason(base, p["text"]) is not None,
        "lists_shipped": lambda p: list_reason(brands, p["text"]) is not None,
        "lists_dev_lexicon": lambda p: list_reason(devlex, p["text"]) is not None,
    }
    for rule in spam_signals.RULES:
        deciders[f"structure_{rule}"] = (lambda r: lambda p: bool(spam_signals.fired(sig(p), [r])))(rule)
    deciders["structure_default"] = lambda p: spam_signals.reason(sig(p)) is not None
    if args.classifier:
        clf = SpamClassifier(args.classifier)
        cache = {}

        def score(p):
            if p["text"] not in cache:
                cache[p["text"]] = clf.scores([p["text"]])[0]
            return cache[p["text"]]
        deciders["classifier"] = lambda p: score(p) >= args.threshold
        deciders["all_default"] = lambda p: (deciders["lists_dev_lexicon"](p) or deciders["structure_default"](p)
                                             or deciders["classifier"](p))
    else:
        deciders["all_default"] = lambda p: deciders["lists_dev_lexicon"](p) or deciders["structure_default"](p)
    res = evaluate(pages, prose_docs, deciders)

    # the whole clean stage (clean.languages: [zh], language ID, heuristics, lists), before and with the dev lexicon
    if Path(args.lid).is_file():
        res["clean_stage"] = clean_stage(pages, args.lid)
        for name, r in res["clean_stage"].items():
            print(f"clean stage, lists {name:12s} " + "  ".join(f"{k} {v}" for k, v in r.items()))
    # the structure rules on English: ordinary web (C4 sample of ../shared/data/web_en) and held-out English prose
    import gzip
    en_web = [json.loads(ln)["text"] for ln in gzip.open(args.shared / "web_en/c4-sample.jsonl.gz", "rt",
                                                           encoding="utf-8")]
    from pipeline.clean.safety_calibrate import prose_docs
    en_prose = [t for _, _, t in prose_docs(args.shared / "prose", "held_out").get("en", [])]
    en = {}
    for rule in spam_signals.RULES:
        en[rule] = {"c4_fired": f"{sum(bool(spam_signals.fired(spam_signals.signals(t), [rule])) for t in en_web)}/"
                                f"{len(en_web)}",
                    "prose_fired": f"{sum(bool(spam_signals.fired(spam_signals.signals(t), [rule])) for t in en_prose)}/"
                                   f"{len(en_prose)}"}
    res["english_structure_rules"] = en
    # speed, one core: structure signals and the brand-extended list match on the split's texts
    texts = [p["text"] for p in pages]
    n = sum(len(t.encode()) for t in texts)
    t0 = time.perf_counter()
    for p in pages:
        spam_signals.signals(p["text"], p.get("url"))
    res["speed_MBps"] = {"structure_signals": round(n / (time.perf_counter() - t0) / 1e6, 2)}
    t0 = time.perf_counter()
    for t in texts:
        brands.signals(t, "zh")
    res["speed_MBps"]["lists_with_brands"] = round(n / (time.perf_counter() - t0) / 1e6, 2)
    res["pages"] = dict(Counter(f"{p['label']}:{p['source']}" for p in pages))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, ensure_ascii=False, indent=1), encoding="utf-8")
    for name, r in res.items():
        if isinstance(r, dict) and "spam_rejected" in r:
            print(f"{name:28s} spam {r['spam_rejected']:>7s}  web kept {r['web_kept']:>9s}  zhihu kept "
                  f"{r['zhihu_kept']:>9s}  prose lost {r['prose_lost']:>9s}")
    print("english (fired on ordinary pages / prose):", json.dumps(en))
    print(res["speed_MBps"], res["pages"])
    return 0


def clean_stage(pages, lid: str) -> dict:
    """Rejected by the whole clean stage with `clean.languages: [zh]`, the lists as before issue 38 and with the
    lexicon less its held-out terms: spam, ordinary web pages, Zhihu answers (reasons in the JSON)."""
    from pipeline.clean.langid import get_identifier
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch

    ident = get_identifier(lid)
    out = {}
    for name in ("before", "dev_lexicon"):
        cfg = CleanConfig(languages=["zh"], safety=safety(name).cfg)
        res = clean_batch([p["text"] for p in pages], ident, cfg, [p.get("url") for p in pages])
        row = {}
        for group, sel in (("spam_rejected", lambda p: p["label"] == "spam"),
                           ("web_rejected", lambda p: p["label"] == "ok" and p["source"] != "flagdata-zhihu-qa"),
                           ("zhihu_rejected", lambda p: p["source"] == "flagdata-zhihu-qa")):
            rs = [r for p, r in zip(pages, res) if sel(p)]
            row[group] = f"{sum(r['reason'] is not None for r in rs)}/{len(rs)}"
            row[group.replace("_rejected", "_reasons")] = dict(Counter(r["reason"] for r in rs if r["reason"]))
        out[name] = row
    return out


def mine(pages, files: list[Path]) -> int:
    """Candidate brand names: the name before each match of the brand pattern, counted once per page; the pages it
    came from are the dev split (never held out) and the JSONL files given. Printed for review, never added by itself:
    an article about a casino hotel names one too, so a name is a candidate when several pages carry it."""
    import gzip
    import re

    texts = [p["text"] for p in pages if p["split"] == "dev"]
    for f in files:
        opener = gzip.open if f.suffix == ".gz" else open
        with opener(f, "rt", encoding="utf-8") as fh:
            texts += [json.loads(ln).get("text") or "" for ln in fh if ln.strip()]
    per_page, example = Counter(), {}
    for t in texts:
        names = set()
        for m in spam_signals._BRAND.finditer(t):
            name = spam_signals._NAME.search(t, max(0, m.start() - 8), m.start())
            if name:
                key = re.sub(r"^[0-9]+", "", name.group(0)[-6:]) + m.group(0)[:2]
                names.add(key)
                example.setdefault(key, t[max(0, m.start() - 12):m.end() + 6].replace("\n", " "))
        per_page.update(names)
    print(f"# {len(texts)} pages; candidate<TAB>pages<TAB>example")
    for key, k in per_page.most_common():
        print(f"{key}\t{k}\t{example[key]}")
    return 0


def terms(pages, shared: Path) -> int:
    """Hits of every brand-lexicon and built-in ads term on dev ordinary pages and the calibration prose."""
    from pipeline.clean.safety import Matcher, read_list
    entries = read_list(BRANDS) + [e for e in read_list(REPO / "pipeline/clean/lists/safety/zh.tsv")
                                   if e[0] == "ads"]
    m = Matcher(entries)
    dev_ok = [p for p in pages if p["split"] == "dev" and p["label"] == "ok"]
    dev_spam = [p for p in pages if p["split"] == "dev" and p["label"] == "spam"]
    cal = prose(shared, "calibration")
    for name, docs in (("dev ordinary pages", [p["text"] for p in dev_ok]), ("dev spam pages", [p["text"] for p in dev_spam]),
                       ("calibration prose", [d["text"] for d in cal])):
        c = Counter()
        for t in docs:
            c.update({term for _, term in m.matches(t)})
        print(f"## {name} ({len(docs)} documents): terms in at least one")
        for term, k in c.most_common():
            cat = next(cat for cat, t in entries if t == term)
            print(f"  {cat}\t{term}\t{k}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
