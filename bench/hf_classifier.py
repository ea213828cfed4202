"""Benchmark: what a Hugging Face classifier (`score.classifiers` kind hf) costs per document and per core, against
the default fastText classifier on the same documents (docs/quality.md, "a different class of cost").

    python bench/hf_classifier.py [--model DIR] [--docs 48] [--threads 1] [--batch-size 8] [--max-length 512]

Without --model it times a randomly initialised BERT-base-sized sequence-regression model (12 layers, hidden 768,
12 heads: the shape of FineWeb-Edu's classifier, which is Snowflake's arctic-embed-m with one regression output)
with a WordPiece vocabulary written here: random weights cost what trained ones cost, and nothing is downloaded.
Documents are WikiText-2 paragraphs (quality_models/data) joined into pages of about 3,000 characters, so most
are cut at max_length tokens, as web pages are. Both classifiers run through the score stage's own classes
(pipeline/score/hf.py HFClassifier, pipeline/score/quality.py QualityClassifier) on `--threads` torch threads
(fastText predicts on one). Results in build/bench/hf_classifier.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import string
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
WIKITEXT = REPO / "quality_models" / "data" / "wikitext-2-valid.txt"


def documents(n: int, chars: int = 3000) -> list[str]:
    paras = [p.strip() for p in WIKITEXT.read_text(encoding="utf-8").split("\n") if len(p.strip()) > 200]
    docs, cur = [], []
    for p in paras:
        cur.append(p)
        if sum(map(len, cur)) >= chars:
            docs.append("\n".join(cur))
            cur = []
        if len(docs) == n:
            break
    return docs


def build_model(out: Path, layers: int, hidden: int, heads: int, max_position: int) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    text = WIKITEXT.read_text(encoding="utf-8").lower()
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    words = [w for w, _ in Counter(re.findall(r"[a-z]+", text)).most_common(8000)]
    vocab = list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars),
                                *words]))
    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab=str(out / "vocab.txt"), do_lower_case=True, model_max_length=max_position)
    tok.save_pretrained(out)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=4 * hidden, max_position_embeddings=max_position, num_labels=1,
                        problem_type="regression")
    BertForSequenceClassification(config).save_pretrained(out)
    return out


def _rates(n: int, mb: float, wall: float, cpu: float) -> dict:
    return {"docs_per_s": round(n / wall, 3), "ms_per_doc": round(1000 * wall / n, 2), "mb_per_s": round(mb / wall, 4),
            "cpu_ms_per_doc": round(1000 * cpu / n, 2), "docs_per_cpu_s": round(n / cpu, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, help="a saved sequence-classification folder (default: BERT-base, random)")
    ap.add_argument("--docs", type=int, default=48)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    args = ap.parse_args()

    import torch

    from pipeline.score.hf import HFClassifier
    from pipeline.score.quality import QualityClassifier

    torch.set_num_threads(args.threads)
    docs = documents(args.docs)
    mb = sum(len(d.encode()) for d in docs) / 1e6
    with tempfile.TemporaryDirectory(prefix="glassbox-bench-hf-") as tmp:
        folder = args.model or build_model(Path(tmp) / "model", args.layers, args.hidden, max(1, args.hidden // 64),
                                           args.max_length)
        clf = HFClassifier(folder, max_length=args.max_length, batch_size=args.batch_size)
        clf.predict_proba(docs[:2])                       # load and warm
        # wall time, and this process's CPU time: on a shared machine the second is the cost per core
        t0, c0 = time.perf_counter(), time.process_time()
        clf.predict_proba(docs)
        hf_s, hf_cpu = time.perf_counter() - t0, time.process_time() - c0
        tokens = [len(ids) for ids in clf._tokenizer(docs, truncation=True, max_length=args.max_length)["input_ids"]]
    ft = QualityClassifier(REPO / "quality_models" / "default" / "quality_en.ftz")
    ft.predict_proba(docs[:2])
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(20):                                   # fastText is too quick to time once
        ft.predict_proba(docs)
    ft_s, ft_cpu = (time.perf_counter() - t0) / 20, (time.process_time() - c0) / 20
    result = {
        "model": "BERT-base-sized, random weights" if not args.model else str(args.model),
        "layers": args.layers if not args.model else None, "hidden": args.hidden if not args.model else None,
        "device": "cuda" if torch.cuda.is_available() else "cpu", "torch_threads": args.threads,
        "documents": len(docs), "mb_text": round(mb, 3), "max_length": args.max_length,
        "batch_size": args.batch_size, "mean_tokens_read": round(sum(tokens) / len(tokens), 1),
        "hf": _rates(len(docs), mb, hf_s, hf_cpu),
        "fasttext_default_en": _rates(len(docs), mb, ft_s, ft_cpu),
        "hf_cpu_cost_over_fasttext": round(hf_cpu / ft_cpu, 1),
        "cpus_seen": os.cpu_count(),
    }
    out = REPO / "build" / "bench" / "hf_classifier.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
