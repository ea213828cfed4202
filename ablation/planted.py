"""A planted case for ablations: clean prose with a held-out part, plus generated spam the heuristics catch.

    python -m ablation.planted --prose examples/sample/books/tinyshakespeare.jsonl.gz --out DIR [--spam-docs 400]

writes DIR/prose-train.jsonl.gz (the prose to train on), DIR/prose-heldout.jsonl (whole documents never
trained on, the evaluation domain) and DIR/spam.jsonl.gz. The same arguments give byte-identical files.

The spam is keyword-stuffed web junk: lines of shopping and gambling words, no sentence punctuation, no stop
words and repeated lines, so the Gopher and FineWeb rules of the clean stage reject it; it is English to the
language identifier, and every document is different, so neither language ID nor dedup removes it when the
rules are off. That isolates what the heuristics themselves do.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re

SPAM_WORDS = (
    "cheap replica watches discount designer handbags outlet free shipping best price online casino bonus "
    "slots jackpot win real money instant payout viagra cialis pharmacy pills weight loss diet miracle "
    "supplement crypto bitcoin investment profit guaranteed income work home earn cash fast loan credit "
    "approval mortgage insurance quote cheapest deals coupon promo code limited offer exclusive sale "
    "clearance wholesale luxury brand authentic sneakers jerseys sunglasses rolex gucci louis vuitton nike "
    "adidas oakley ugg boots seo backlinks traffic ranking followers likes subscribers download crack keygen "
    "serial torrent hd movies stream watch free adult dating singles hot local meet tonight click buy order "
    "now today top rated review lowest guaranteed secure checkout visa mastercard paypal accepted worldwide"
).split()


def spam_documents(n: int, seed: int = 0) -> list[dict]:
    """`n` distinct spam documents, the same for the same seed."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        lines = []
        for _ in range(rng.randint(18, 30)):
            lines.append(" ".join(rng.choice(SPAM_WORDS) for _ in range(rng.randint(5, 11))))
        # a few lines again, as link farms repeat their anchors
        lines += [lines[rng.randrange(len(lines))] for _ in range(rng.randint(4, 8))]
        docs.append({"id": f"spam-{seed}-{i:05d}", "text": "\n".join(lines)})
    return docs


def read_prose(path: str, paragraphs_per_doc: int = 6) -> list[dict]:
    """Documents of a JSON-lines file (id, text; gzipped or not) or of a text file (its non-empty lines,
    headings dropped, grouped `paragraphs_per_doc` to a document)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        if ".jsonl" in path or ".json" in path:
            out = []
            for i, line in enumerate(fh):
                if line.strip():
                    row = json.loads(line)
                    out.append({"id": str(row.get("id", i)), "text": row["text"]})
            return out
        paras = [ln.strip() for ln in fh if len(ln.strip()) > 40 and not re.fullmatch(r"=+ .* =+", ln.strip())]
    return [{"id": f"{os.path.basename(path)}-{k:05d}", "text": "\n".join(paras[k:k + paragraphs_per_doc])}
            for k in range(0, len(paras), paragraphs_per_doc)]


def held_out(doc_id: str, fraction: float) -> bool:
    """Whether a document is held out: a hash of its id, so the split does not depend on file order."""
    h = int(hashlib.sha1(doc_id.encode()).hexdigest()[:8], 16)
    return h < fraction * 0x100000000


def write_jsonl(path: str, docs: list[dict]) -> None:
    data = "".join(json.dumps(d, ensure_ascii=False, sort_keys=True) + "\n" for d in docs).encode()
    tmp = path + ".tmp"
    if path.endswith(".gz"):
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
            fh.write(data)  # mtime 0: the same bytes on every run
    else:
        with open(tmp, "wb") as fh:
            fh.write(data)
    os.replace(tmp, path)


def write_planted(prose: str, out: str, spam_docs: int, heldout_fraction: float = 0.12, seed: int = 0,
                  max_prose_docs: int | None = None) -> dict:
    docs = read_prose(prose)[:max_prose_docs]
    train = [d for d in docs if not held_out(d["id"], heldout_fraction)]
    heldout = [d for d in docs if held_out(d["id"], heldout_fraction)]
    os.makedirs(out, exist_ok=True)
    files = {"prose-train": os.path.join(out, "prose-train.jsonl.gz"),
             "prose-heldout": os.path.join(out, "prose-heldout.jsonl"),
             "spam": os.path.join(out, "spam.jsonl.gz")}
    spam = spam_documents(spam_docs, seed)
    for key, rows in (("prose-train", train), ("prose-heldout", heldout), ("spam", spam)):
        # an unchanged file keeps its modification time, so the pipeline's extract stage stays reusable
        if not _same(files[key], rows):
            write_jsonl(files[key], rows)
    return {"prose_train_docs": len(train), "prose_heldout_docs": len(heldout), "spam_docs": len(spam),
            "files": files}


def _same(path: str, rows: list[dict]) -> bool:
    if not os.path.isfile(path):
        return False
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(x) for x in fh if x.strip()] == rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prose", required=True, help="clean prose: JSON lines (id, text) or a text file")
    ap.add_argument("--out", required=True)
    ap.add_argument("--spam-docs", type=int, default=400)
    ap.add_argument("--heldout-fraction", type=float, default=0.12)
    ap.add_argument("--max-prose-docs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    info = write_planted(a.prose, a.out, a.spam_docs, a.heldout_fraction, a.seed, a.max_prose_docs)
    print(f"planted: {info['prose_train_docs']} prose documents to train on, {info['prose_heldout_docs']} held "
          f"out, {info['spam_docs']} spam documents in {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
