"""Rebuild examples/sample/zh/ud-gsdsimp-test.jsonl.gz, the demo's Chinese source, from the test split of the
Universal Dependencies treebank UD_Chinese-GSDSimp (simplified-Chinese Wikipedia sentences, CC BY-SA 4.0; see
examples/NOTICE).

The treebank marks no article boundaries (sent_ids test-s1 ... test-s500, no `# newdoc` or `# newpar`): its
sentences are sampled from many articles, a few neighbours sometimes on one topic, most not. Documents are
therefore made by grouping consecutive sentences in file order: document sizes cycle through DOC_SIZES (8 to
12 sentences, 10 on average, so the 500 sentences make 50 documents), and within a document paragraph sizes
cycle through PARA_SIZES (2 to 4 sentences; a short remainder joins or borrows from the paragraph before it).
A paragraph's sentences are joined without spaces (Chinese); paragraphs are separated by a blank line. The
sentence text (the `# text = ` lines) is unchanged; annotations are not copied. One JSON object a line,
{"id": "zh-gsdsimp-test-NNN", "text": ...} (no url: the treebank does not say which article a sentence came
from), gzipped without a timestamp so a rebuild is byte-identical.

Only the test split: the dev split trains the Chinese KenLM model (quality_models/data/zh-ud-gsdsimp-dev.txt),
and a document the model was trained on would score unrealistically well. The script refuses a file whose
sent_ids are not test-s<N>.

Usage:
    git -C /path/to/UD_Chinese-GSDSimp show HEAD:zh_gsdsimp-ud-test.conllu > /tmp/zh_gsdsimp-ud-test.conllu
    python examples/make_zh_sample.py /tmp/zh_gsdsimp-ud-test.conllu examples/sample/zh/ud-gsdsimp-test.jsonl.gz
(the input may be `-`: read from standard input).
"""
from __future__ import annotations

import gzip
import json
import re
import sys
from itertools import cycle
from pathlib import Path

DOC_SIZES = (10, 8, 12, 9, 11)    # sentences per document, in turn (mean 10)
PARA_SIZES = (3, 2, 4)            # sentences per paragraph, in turn, restarting in every document
ID_PREFIX = "zh-gsdsimp-test"
DEFAULT_OUT = "examples/sample/zh/ud-gsdsimp-test.jsonl.gz"


def sentences(conllu: str) -> list[tuple[str, str]]:
    """(sent_id, text) of every sentence, in file order; a sentence without a `# text` line is an error."""
    out, sid, text = [], None, None
    for line in conllu.splitlines() + [""]:
        if line.startswith("# sent_id = "):
            sid = line[len("# sent_id = "):].strip()
        elif line.startswith("# text = "):
            text = line[len("# text = "):].strip()
        elif not line.strip() and (sid is not None or text is not None):
            if not sid or not text:
                raise ValueError(f"a sentence without sent_id or text near {sid!r}")
            out.append((sid, text))
            sid, text = None, None
    return out


def check_test_split(sents: list[tuple[str, str]]) -> None:
    bad = [sid for sid, _ in sents if not re.fullmatch(r"test-s\d+", sid)]
    if bad:
        raise SystemExit(f"not the test split of UD_Chinese-GSDSimp (sent_id {bad[0]!r}); the dev split trains the "
                         f"Chinese KenLM model and must stay out of the demo corpus")


def split_sizes(n: int, sizes: tuple[int, ...]) -> list[int]:
    """Cut n items into runs whose sizes cycle through `sizes`; a remainder shorter than the smallest size
    joins the run before it, or takes items from it where joining would make a run longer than the largest."""
    out, left = [], n
    for s in cycle(sizes):
        if left <= 0:
            break
        out.append(min(s, left))
        left -= out[-1]
    lo, hi = min(sizes), max(sizes)
    if len(out) > 1 and out[-1] < lo:
        if out[-2] + out[-1] <= hi:             # the remainder joins the run before it
            last = out.pop()
            out[-1] += last
        else:                                   # or borrows from it: [.., 4, 1] -> [.., 3, 2]
            give = lo - out[-1]
            out[-2] -= give
            out[-1] += give
    return out


def documents(texts: list[str]) -> list[str]:
    docs, i = [], 0
    for n in split_sizes(len(texts), DOC_SIZES):
        part, paras, j = texts[i:i + n], [], 0
        for m in split_sizes(n, PARA_SIZES):
            paras.append("".join(part[j:j + m]))
            j += m
        docs.append("\n\n".join(paras))
        i += n
    return docs


def main(src: str, out: str = DEFAULT_OUT) -> None:
    conllu = sys.stdin.read() if src == "-" else Path(src).read_text(encoding="utf-8")
    sents = sentences(conllu)
    check_test_split(sents)
    docs = documents([t for _, t in sents])
    lines = "".join(json.dumps({"id": f"{ID_PREFIX}-{i:03d}", "text": d}, ensure_ascii=False) + "\n"
                    for i, d in enumerate(docs))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(lines.encode("utf-8"))
    chars = sum(len(d) for d in docs)
    print(f"{len(sents)} sentences -> {len(docs)} documents, {chars:,} characters, written to {out}")


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        sys.exit(__doc__)
    main(*sys.argv[1:3])
