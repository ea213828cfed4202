"""Benchmark and acceptance figures of the clean stage's list steps (docs/chinese.md): content safety, URL
blocklists, 繁/简. Everything here is text the lists and thresholds never read.

    python bench/zh_lists.py [--shared ../shared/data] [--ud DIR] [--repeat 3] [--out build/bench/zh_lists.json]

- prose lost: the held-out half of ../shared/data/prose (pipeline/clean/reference_docs.py half_of, by parent work:
  the split of every calibration, pipeline/clean/safety_calibrate.py and calibrate.py) and documents of the lingua
  sentences' odd lines, per language and kind: the share a content-safety rule rejects;
- spam rejected: the hand-labelled Chinese spam and ad pages of the sample's Common Crawl excerpt
  (tests/data/zh_spam/labels.tsv), extracted by the pipeline, through the list steps alone and through the whole
  clean stage (clean.languages [zh]); and spam generated from the keyword lists (two terms of a category in every
  sentence of held-out prose), per category;
- 繁/简: UD Chinese GSD (traditional) and GSDSimp (simplified) DEV splits (--ud: a folder with zh_gsd-ud-dev.conllu
  and zh_gsdsimp-ud-dev.conllu; the test splits in tests/data/zh_script chose the thresholds), as documents of ten
  sentences and as sentences: the script recorded right, and the twins the dedup stage merges (same exact key, or a
  shingle Jaccard at or above dedup.near.threshold with its char_ngram), before (character bigrams of the raw text,
  as the issue measured) and after the fold;
- speed, MB/s of text on one core: script detection, t2s conversion, keyword match (zh, en), URL check; and the
  clean stage on English held-out prose with and without the list steps, side by side, `--repeat` times.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.clean.safety import CATEGORIES, Lists, read_list  # noqa: E402
from pipeline.clean.safety_calibrate import lingua_docs, prose_docs  # noqa: E402


def mbps(fn, texts, repeat=1) -> float:
    n = sum(len(t.encode("utf-8")) for t in texts)
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        for t in texts:
            fn(t)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return round(n / best / 1e6, 2)


def ud_sentences(path: Path) -> list[str]:
    return [line[len("# text = "):].strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith("# text = ")]


def prose_lost(shared: Path, cfg) -> dict:
    from pipeline.clean.safety import Safety

    safety = Safety(cfg.safety)
    docs = prose_docs(shared / "prose", "held_out")
    for lang, items in lingua_docs(shared / "langid" / "lingua", "held_out").items():
        if lang in ("zh", "en"):
            docs.setdefault(lang, []).extend(items)
    out = {}
    for lang in ("zh", "en"):
        per = defaultdict(lambda: [0, 0])
        reasons = Counter()
        for kind, _, text in docs[lang]:
            r = safety.reason(safety.signals(text, lang), lang)
            per[kind][0] += 1
            per[kind][1] += r is not None
            if r:
                reasons[r] += 1
        total = sum(n for n, _ in per.values())
        lost = sum(k for _, k in per.values())
        out[lang] = {"documents": total, "lost": lost, "lost_share": round(lost / total, 4),
                     "per_kind": {k: f"{v[1]}/{v[0]}" for k, v in sorted(per.items())}, "reasons": dict(reasons)}
    return out


def real_spam(identifier) -> dict:
    from pipeline.clean.lists_step import ListSteps
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch
    from pipeline.extract.html import extract_file
    from pipeline.extract.settings import ExtractConfig

    labels = {}
    for line in (REPO / "tests/data/zh_spam/labels.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            url, label, kind, _ = line.split("\t", 3)
            labels[url] = (label, kind)
    rows = [r for r in extract_file(str(REPO / "examples/sample/resiliparse-cc-excerpt.warc.gz"), "web", "warc",
                                    ExtractConfig()) if r.get("url") in labels]
    cfg = CleanConfig(languages=["zh"])
    texts = [r.get("text") or "" for r in rows]
    urls = [r["url"] for r in rows]
    results = clean_batch(texts, identifier, cfg, urls)
    steps = ListSteps.of(cfg)
    out = {"spam": [], "ok": [], "unclear": []}
    for r, res, text in zip(rows, results, texts):
        label, kind = labels[r["url"]]
        lists_reason = res["reason"] if res["reason"] and res["reason"].startswith(("safety_", "url_")) else \
            steps.safety_reason(res, "zh") or (f"url_{res['url_block']}" if res["url_block"] not in (None, "allowed")
                                               else None)
        extracted = r.get("status") == "kept"
        out[label].append({"url": r["url"], "kind": kind, "extracted": extracted, "lists": lists_reason,
                           "clean": res["reason"] if extracted else r.get("reason")})
    spam = out["spam"]
    out["summary"] = {
        "spam_pages": len(spam),
        "rejected_by_lists": sum(x["lists"] is not None for x in spam),
        "rejected_by_extract_or_clean": sum(x["clean"] is not None or x["lists"] is not None for x in spam),
        "ok_pages": len(out["ok"]), "ok_rejected_by_lists": sum(x["lists"] is not None for x in out["ok"])}
    return out


def generated_spam(shared: Path, cfg, n_docs: int = 40) -> dict:
    """Held-out prose with two terms of one category put into every sentence (zh, en)."""
    from pipeline.clean.lists import builtin
    from pipeline.clean.safety import Safety

    safety = Safety(cfg.safety)
    docs = prose_docs(shared / "prose", "held_out")
    out = {}
    for lang in ("zh", "en"):
        terms = defaultdict(list)
        for cat, term in read_list(builtin(f"safety/{lang}.tsv")):
            terms[cat].append(term)
        rng = random.Random(f"spam/{lang}")
        base = [t for _, _, t in docs[lang]][:n_docs]
        for cat, words in sorted(terms.items()):
            caught = 0
            for text in base:
                sep = "。" if lang == "zh" else ". "
                parts = [p for p in text[:1500].split(sep) if p.strip()]
                join = "" if lang == "zh" else " "
                spam = sep.join(f"{p}{join}{rng.choice(words)}{join}{rng.choice(words)}" for p in parts)
                caught += safety.reason(safety.signals(spam, lang), lang) is not None
            out[f"{lang}/{cat}"] = f"{caught}/{len(base)}"
    return out


def zh_script(ud: Path) -> dict:
    from pipeline.clean.script import chinese_script
    from pipeline.dedup.exact import exact_hash
    from pipeline.dedup.minhash import jaccard, shingles
    from pipeline.dedup.settings import NearDedupConfig

    near = NearDedupConfig()
    trad = ud_sentences(ud / "zh_gsd-ud-dev.conllu")
    simp = ud_sentences(ud / "zh_gsdsimp-ud-dev.conllu")
    assert len(trad) == len(simp)
    docs_t = ["".join(trad[i:i + 10]) for i in range(0, len(trad), 10)]
    docs_s = ["".join(simp[i:i + 10]) for i in range(0, len(simp), 10)]

    def right(texts, want):
        c = Counter(chinese_script(t) for t in texts)
        return {"right": c[want], "of": len(texts), "found": dict(c)}

    def bigrams(t):
        return {t[i:i + 2] for i in range(len(t) - 1)}

    def merged(a, b):
        if exact_hash(a) == exact_hash(b):
            return "exact"
        j = jaccard(shingles(a, near.ngram, near.char_ngram), shingles(b, near.ngram, near.char_ngram))
        return "near" if j >= near.threshold else None

    twins = Counter(merged(a, b) for a, b in zip(docs_t, docs_s))
    before = [len(bigrams(a) & bigrams(b)) / len(bigrams(a) | bigrams(b)) for a, b in zip(docs_t, docs_s)]
    return {"documents": {"traditional": right(docs_t, "traditional"), "simplified": right(docs_s, "simplified")},
            "sentences": {"traditional": right(trad, "traditional"), "simplified": right(simp, "simplified")},
            "twins": {"pairs": len(docs_t), "merged_exact": twins["exact"], "merged_near": twins["near"],
                      "merged_share": round((twins["exact"] + twins["near"]) / len(docs_t), 4),
                      "raw_char_bigram_jaccard_median_before_fold": round(statistics.median(before), 3)}}


def speeds(shared: Path, ud: Path, identifier, repeat: int) -> dict:
    from pipeline.clean.lists_step import ListSteps
    from pipeline.clean.script import chinese_script, to_simplified
    from pipeline.clean.settings import CleanConfig
    from pipeline.clean.stage import clean_batch
    from pipeline.clean.urls import UrlFilter

    docs = prose_docs(shared / "prose", "held_out")
    zh = [t for _, _, t in docs["zh"]]
    en = [t for _, _, t in docs["en"]]
    trad = ["".join(ud_sentences(ud / "zh_gsd-ud-dev.conllu")[i:i + 10]) for i in range(0, 500, 10)]
    lists = Lists()
    mzh, men = lists.matcher("zh"), lists.matcher("en")
    cfg = CleanConfig(languages=["zh", "en"])
    uf = UrlFilter(cfg.urls)
    urls = [f"http://www.example{i}.com/news/2020/{i}/article-{i}.html" for i in range(len(zh))]
    steps = ListSteps.of(cfg)
    url_time = time.perf_counter()
    for u in urls * 20:
        uf.category(u)
    url_time = (time.perf_counter() - url_time) / (20 * len(urls))
    zh_doc_bytes = sum(len(t.encode()) for t in zh) / len(zh)
    out = {
        "script_detection_zh": mbps(chinese_script, zh, repeat),
        "t2s_conversion_traditional": mbps(to_simplified, trad, repeat),
        "keywords_zh": mbps(mzh.counts, zh, repeat),
        "keywords_en": mbps(men.counts, en, repeat),
        "url_check_per_doc_us": round(url_time * 1e6, 2),
        "url_check_as_MBps_of_zh_docs": round(zh_doc_bytes / url_time / 1e6, 1),
        "all_list_steps_zh": mbps(lambda t: steps.before_rules({"text": t}, "zh", urls[0]), zh, repeat),
    }
    # the clean stage on English, without and with the list steps, side by side (same process, interleaved)
    off = CleanConfig(languages=["en"])
    off.safety.enabled = False
    off.urls.enabled = False
    on = CleanConfig(languages=["en"])
    en_urls = [f"http://www.example{i}.org/a/{i}" for i in range(len(en))]
    runs = {"without": [], "with": []}
    n = sum(len(t.encode()) for t in en)
    for _ in range(repeat):
        for name, c in (("without", off), ("with", on)):
            t0 = time.perf_counter()
            clean_batch(en, identifier, c, en_urls)
            runs[name].append(n / (time.perf_counter() - t0) / 1e6)
    out["clean_en_MBps_without_lists"] = [round(x, 2) for x in runs["without"]]
    out["clean_en_MBps_with_lists"] = [round(x, 2) for x in runs["with"]]
    out["clean_en_slowdown_median"] = round(statistics.median(runs["without"]) / statistics.median(runs["with"]) - 1, 4)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--ud", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "build/bench/zh_lists.json")
    args = ap.parse_args(argv)
    from pipeline.clean.langid import get_identifier
    from pipeline.clean.settings import CleanConfig

    identifier = get_identifier(str(REPO / "models/lid.176.ftz"))
    cfg = CleanConfig()
    result = {"prose_lost": prose_lost(args.shared, cfg), "real_spam": real_spam(identifier),
              "generated_spam": generated_spam(args.shared, cfg), "zh_script": zh_script(args.ud),
              "speed": speeds(args.shared, args.ud, identifier, args.repeat)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "real_spam"}, indent=1, ensure_ascii=False))
    print(json.dumps(result["real_spam"]["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
