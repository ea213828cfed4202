"""The text a default classifier never trained on, per kind, as evaluation domains of the quality ablations
(examples/ablate/quality-*.yaml):

    python -m quality_models.heldout --card quality_models/default/quality_en.json --out data/ablate-quality/en \\
        [--extra NAME=FILE ...] [--pages ../shared/data/extraction --pages-warc data/ablate-quality/web-pages.warc.gz]

Reads the card's inputs and writes, for each positive input and each web negative, the documents of the works
its training held out (the same hash of seed and group as quality_models/examples.py) to OUT/<kind>.jsonl, and
each `--extra` file whole (a kind the classifier never saw at all, e.g. ../shared/data's Chinese science). The
ablation scores its proxies on these files, so a filter is judged on text its classifier was not fit to.
`--pages` turns a folder of crawled pages into a WARC for the ablation's base corpus (English web beside the
Common Crawl excerpt is scarce here: ../shared/data/extraction's pages, for evaluation, never for training).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from quality_models.examples import held_out
from quality_models.inputs import InputError, parse_spec, read_input


def write(path: Path, texts: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    print(f"{path}: {len(texts)} documents, {sum(map(len, texts)):,} characters")


# Positive inputs whose lines are not perplexity-model text: the Chinese science abstracts became a positive of the
# Chinese classifier after its KenLM model was trained (issue 37), and that model, its card and its tests name the
# lines of the five prose kinds (quality_models/default/kenlm-zh.md).
NOT_LM_TEXT = {"zh/science"}


def train_lines(facts: dict, root: Path = Path(".")) -> list[str]:
    """Every non-empty line of the works a classifier trained on (its positives less its held-out works, less the
    inputs in NOT_LM_TEXT), in input order; input paths are relative to `root`."""
    skipped: Counter = Counter()
    return [line.strip() for arg in facts["inputs"]["positives"] if parse_spec(arg).name not in NOT_LM_TEXT
            for d in read_input(parse_spec(str(root / arg)), skipped)
            if not (d.group and held_out(d.group, facts["seed"], facts["holdout"]))
            for line in d.text.splitlines() if line.strip()]


def pages_warc(root: Path, out: Path) -> None:
    """Every crawled page under `root` (the extraction benchmarks' raw HTML: news, blogs, shops, forums) as a
    response record, in sorted order, so the pipeline extracts them as it would a crawl; record ids from the URLs, so
    a rewritten file gives the same document ids (the random drop of an ablation draws on them)."""
    import gzip

    from pipeline.read.warc_writer import write_html_warc

    pages = sorted(root.rglob("*.html.gz")) + sorted(root.rglob("source.html"))
    out.parent.mkdir(parents=True, exist_ok=True)
    n = write_html_warc(str(out), ((f"https://pages.example/{p.relative_to(root).as_posix()}",
                                   gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes(),
                                   "2024-01-01T00:00:00Z") for p in pages), stable_ids=True)
    print(f"{out}: {n} pages")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--card", required=True, help="a classifier's facts (.json beside its model)")
    ap.add_argument("--out", type=Path, help="folder of the held-out files, one per input")
    ap.add_argument("--train-lines", type=Path, metavar="FILE",
                    help="write the lines of the positives' trained (not held-out) works, one paragraph a line: "
                         "the text of a perplexity model that leaves the same works out")
    ap.add_argument("--extra", nargs="*", default=[], metavar="NAME=FILE", help="JSONL(.gz) kept whole")
    ap.add_argument("--pages", type=Path, help="a folder of crawled HTML pages (*.html.gz, */source.html), ...")
    ap.add_argument("--pages-warc", type=Path, help="... written as one WARC, a web source of the ablation's base")
    a = ap.parse_args(argv)
    if a.pages and a.pages_warc:
        pages_warc(a.pages, a.pages_warc)
    facts = json.loads(Path(a.card).read_text(encoding="utf-8"))
    seed, fraction, langs = facts["seed"], facts["holdout"], facts["languages"]
    skipped: Counter = Counter()
    if a.train_lines:
        lines = train_lines(facts)
        a.train_lines.parent.mkdir(parents=True, exist_ok=True)
        a.train_lines.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        print(f"{a.train_lines}: {len(lines)} lines of trained works, {sum(map(len, lines)):,} characters")
    if not a.out:
        return 0
    try:
        for role in ("positives", "negatives"):
            for arg in facts["inputs"][role]:
                spec = parse_spec(arg)
                docs = [d for d in read_input(spec, skipped) if d.group and held_out(d.group, seed, fraction)]
                if role == "negatives":
                    if not spec.path.endswith((".jsonl", ".jsonl.gz")):
                        continue       # the sample's crawls stay in the demo; the web domain is the JSONL pool
                    from quality_models.train import keep_languages
                    docs = keep_languages(docs, langs, skipped)
                name = spec.name.split("/")[-1]
                if docs:
                    write(a.out / f"{'web-' if role == 'negatives' else ''}{name}.jsonl", [d.text for d in docs])
        for item in a.extra:
            name, _, path = item.partition("=")
            docs = read_input(parse_spec(path), skipped)
            write(a.out / f"{name}.jsonl", [d.text for d in docs])
    except InputError as e:
        print(f"heldout error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
