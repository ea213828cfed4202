"""Instruction-style English text (DCLM's kind of positive): databricks-dolly-15k and OASST1's English messages from
../shared/data/instruct, filtered by length and split by a hash of each record's id.

    python -m quality_models.instruct --shared ../shared/data --eval-out data/ablate-quality/en/instruct.jsonl

- Dolly (CC BY-SA 3.0): a record is its instruction, a blank line and its response (the context, a Wikipedia passage
  in 4,598 records, is left out: it is encyclopedic prose, not the instruction-style answer this kind is for), kept
  when the response has at least MIN_CHARS characters (a one-word answer teaches nothing).
- OASST1 (Apache-2.0): each message (prompts and replies mixed; the copy has no roles) with at least MIN_CHARS
  characters.
- Split: a quarter of the records (by a hash of the id, `side`) is the evaluation part, never trained on by any
  classifier and never copied into the repository: the ablation's instruction domain and the AUC's unseen
  instruction text are read from it. The other three quarters are the training pool, of which
  quality_models/make_data.py copies COPY records a source (the first by a hash of the id) into
  quality_models/data/instruct/.

`--eval-out` writes the evaluation part as JSONL (`id`, `text`), Dolly and OASST1 alternating in hash order, so the
first tokens an ablation scores hold both.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
from pathlib import Path

MIN_CHARS = 200          # of the response (Dolly) or the message (OASST1)
MAX_CHARS = 3000         # cut as the prose copies are (quality_models/make_data.py: cut)
EVAL_SHARE = 4           # one record in EVAL_SHARE is the evaluation part
COPY = 1500              # training-pool records copied per source
SOURCES = {"dolly": "instruct/dolly-15k.jsonl.gz", "oasst1": "instruct/oasst1-en.jsonl.gz"}
LICENSES = {"dolly": "CC BY-SA 3.0 (databricks-dolly-15k, Databricks)",
            "oasst1": "Apache-2.0 (OpenAssistant OASST1)"}


def _hash(tag: str, key: str) -> int:
    return int.from_bytes(hashlib.sha1(f"{tag}:{key}".encode()).digest()[:8], "big")


def side(record_id: str) -> str:
    """'eval' for a quarter of the ids, else 'train': a hash, so it never depends on file order."""
    return "eval" if _hash("instruct-side", record_id) % EVAL_SHARE == 0 else "train"


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def records(shared: Path, source: str, response_only: bool = False) -> list[dict]:
    """The records of one source that pass the length filter: `id`, `text`, `license`, in file order."""
    out = []
    for r in _read(shared / SOURCES[source]):
        if source == "dolly":
            response = r["response"].strip()
            if len(response) < MIN_CHARS:
                continue
            text = response if response_only else f"{r['instruction'].strip()}\n\n{response}"
        else:
            text = r["text"].strip()
            if len(text) < MIN_CHARS:
                continue
        out.append({"id": r["id"], "text": text, "license": LICENSES[source]})
    return out


def split(shared: Path, source: str, response_only: bool = False) -> tuple[list[dict], list[dict]]:
    """(training pool, evaluation part) of one source, each in hash order."""
    rows = sorted(records(shared, source, response_only), key=lambda r: _hash("instruct-order", r["id"]))
    return [r for r in rows if side(r["id"]) == "train"], [r for r in rows if side(r["id"]) == "eval"]


def evaluation(shared: Path, response_only: bool = False) -> list[dict]:
    """The evaluation parts of both sources, alternating (Dolly, OASST1, Dolly, ...) until both are spent."""
    parts = [split(shared, s, response_only)[1] for s in SOURCES]
    out = []
    for i in range(max(map(len, parts))):
        out += [p[i] for p in parts if i < len(p)]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path("../shared/data"))
    ap.add_argument("--eval-out", type=Path, required=True, help="JSONL of the evaluation part")
    ap.add_argument("--max-docs", type=int, default=0, help="at most this many documents (0: all)")
    a = ap.parse_args(argv)
    rows = evaluation(a.shared)
    if a.max_docs:
        rows = rows[: a.max_docs]
    a.eval_out.parent.mkdir(parents=True, exist_ok=True)
    a.eval_out.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n"
                                  for r in rows), encoding="utf-8")
    print(f"{a.eval_out}: {len(rows)} documents, {sum(len(r['text']) for r in rows):,} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
