"""Rebuild the text the default quality classifiers are trained on (quality_models/data/prose, quality_models/data/web)
and the web corpora of the quality ablations (examples/ablate/web), from their upstream files (NOTICE beside each).

    python -m quality_models.make_data --prose ../shared/data/prose --dolma-cc FILE --flagdata DIR --zh-pages DIR \
        --c4 ../shared/data/web_en/c4-sample.jsonl.gz --instruct ../shared/data

where FILE is allenai/dolma's tests/data/formats/gz/CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz at
937ccc06, DIR for --flagdata holds FlagOpen/FlagData's flagdata/ tree at 84a3d7e7 and DIR for --zh-pages holds
immortal-autumn/Chinese-Web-Content-Extraction-Dataset's cleaned/ folder at 99d0ef08 (git show each file into
place). Each option rebuilds its own part; every output is gzipped JSONL without a timestamp, so a rebuild is
byte-identical.

- Prose, one file per language and kind: the documents of ../shared/data/prose (the half of the set this project
  holds), `id`, `text`, `source`, `license`, `url_or_path` as given, the text cut at a line or sentence end after
  3,000 characters, 1,500 for classical Chinese (a classifier reads paragraphs; the copy stays small). Of the Chinese
  science abstracts (CSL: its rights are the set's most doubtful) half is copied, by a hash of the id (science_side):
  the other half stays in ../shared/data, never trained on, for the held-out figures; classical Chinese is copied for
  the card's table only (docs/quality.md says why it is not a positive).
- Web: each upstream file's documents are split in two by a hash of their URL (or id): one half is the classifiers'
  negatives (quality_models/data/web), the other the base corpus of the ablations (examples/ablate/web), so a
  filter is never measured on pages its classifier was trained against. C4 (`--c4`) is split the same way
  (`c4-en.jsonl.gz`), its text unchanged.
- Instruction text (`--instruct`, the folder holding instruct/): Dolly-15k and OASST1 filtered by length, the
  evaluation quarter left out (quality_models/instruct.py), COPY records of each training pool cut at 3,000
  characters, in quality_models/data/instruct/{dolly,oasst1}.jsonl.gz.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
from pathlib import Path

PROSE_KINDS = {"en": ["government", "howto", "literature", "news", "science", "technical", "textbook"],
               "zh": ["encyclopedic", "howto", "legal", "technical", "textbook", "literature_classical", "science"]}
# Kinds of which only a half is copied (by a hash of the id, `science_side`): the other half stays in ../shared/data,
# never trained on, for the held-out figures (docs/quality.md: Chinese science abstracts).
HALF_KINDS = {("zh", "science")}
MAX_CHARS = 3000
CLASSICAL_MAX_CHARS = 1500  # scored for the card only
CLASSIFIER, ABLATION = "quality_models/data/web", "examples/ablate/web"


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
        for r in rows:
            gz.write((json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    path.write_bytes(buf.getvalue())
    print(f"{path}: {len(rows)} documents, {path.stat().st_size:,} bytes")


def cut(text: str, limit: int = MAX_CHARS) -> str:
    """The text up to the first line or sentence end after `limit` characters."""
    if len(text) <= limit:
        return text
    ends = [i for i in (text.find(m, limit) for m in ("\n", ". ", "。")) if i >= 0]
    return text[:min(ends) + 1].rstrip() if ends else text


def read_jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def half(key: str) -> str:
    """Which side a web document is on: a hash of its URL or id, so the halves never depend on file order."""
    return CLASSIFIER if hashlib.sha1(f"web-half:{key}".encode()).digest()[0] % 2 == 0 else ABLATION


def science_side(doc_id: str) -> str:
    """'train' (copied, a positive) or 'eval' (never copied): a hash of the document's id."""
    return "train" if hashlib.sha1(f"zh-science-side:{doc_id}".encode()).digest()[0] % 2 == 0 else "eval"


def prose(root: Path, out: Path) -> None:
    for lang, kinds in PROSE_KINDS.items():
        for kind in kinds:
            (src,) = sorted((root / lang / kind).glob("*.jsonl.gz"))
            limit = CLASSICAL_MAX_CHARS if kind == "literature_classical" else MAX_CHARS
            rows = [{**{k: r[k] for k in ("id", "source", "license", "url_or_path")}, "text": cut(r["text"], limit)}
                    for r in read_jsonl(src)
                    if (lang, kind) not in HALF_KINDS or science_side(r["id"].split("#")[0]) == "train"]
            write_jsonl(out / "prose" / lang / f"{kind}.jsonl.gz", rows)


def split_web(name: str, rows: list[dict], repo: Path) -> None:
    sides: dict[str, list[dict]] = {CLASSIFIER: [], ABLATION: []}
    for r in rows:
        sides[half(r.get("url") or r["id"])].append(r)
    for side, part in sides.items():
        write_jsonl(repo / side / f"{name}.jsonl.gz", part)


def c4(path: Path, repo: Path) -> None:
    split_web("c4-en", [{"id": r["id"], "url": r["url"], "text": r["text"]} for r in read_jsonl(path)], repo)


def instruct(shared: Path, out: Path) -> None:
    from quality_models import instruct as ins

    for source in ins.SOURCES:
        pool, _ = ins.split(shared, source)
        write_jsonl(out / "instruct" / f"{source}.jsonl.gz",
                    [{**r, "text": cut(r["text"])} for r in pool[: ins.COPY]])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prose", type=Path)
    ap.add_argument("--dolma-cc", type=Path)
    ap.add_argument("--flagdata", type=Path)
    ap.add_argument("--zh-pages", type=Path)
    ap.add_argument("--c4", type=Path, help="../shared/data/web_en/c4-sample.jsonl.gz")
    ap.add_argument("--instruct", type=Path, help="the folder holding instruct/ (../shared/data)")
    ap.add_argument("--repo", type=Path, default=Path("."))
    a = ap.parse_args(argv)
    if a.prose:
        prose(a.prose, a.repo / "quality_models" / "data")
    if a.c4:
        c4(a.c4, a.repo)
    if a.instruct:
        instruct(a.instruct, a.repo / "quality_models" / "data")
    if a.dolma_cc:
        dolma_cc(a.dolma_cc, a.repo)
    if a.flagdata:
        flagdata(a.flagdata, a.repo)
    if a.zh_pages:
        pages = [{"id": p.stem, "url": None, "text": p.read_text(encoding="utf-8", errors="replace")}
                 for p in sorted(a.zh_pages.glob("*.txt"))]
        split_web("zh-extraction-pages", pages, a.repo)
    return 0


def dolma_cc(path: Path, repo: Path) -> None:
    cc = []
    for r in read_jsonl(path):
        meta = r.get("metadata") or ""
        url = meta.split("'warc_url': '", 1)[1].split("'", 1)[0] if "'warc_url': '" in meta else None
        cc.append({"id": r["id"], "url": url, "text": r["text"]})
    split_web("cc2019-dolma", cc, repo)


def flagdata(root: Path, repo: Path) -> None:
    flag = root / "quality_assessment" / "FastText" / "data" / "cleared1.jsonl"
    cc_zh = [{"id": r["digest"], "url": r["url"], "text": r["raw_content"]}
             for r in map(json.loads, flag.read_text(encoding="utf-8").splitlines())]
    demo = root / "cleaner" / "input" / "text_demo_input.jsonl"
    cc_zh += [{"id": f"text_demo_input:{i}", "url": None, "text": json.loads(line)["text"]}
              for i, line in enumerate(demo.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    split_web("flagdata-cc-zh", cc_zh, repo)
    qa = root / "cleaner" / "input" / "qa_demo_input.jsonl"
    split_web("flagdata-zhihu-qa", [{"id": r["source_id"], "url": None, "text": r["content"]}
                                    for r in map(json.loads, qa.read_text(encoding="utf-8").splitlines())], repo)


if __name__ == "__main__":
    raise SystemExit(main())
