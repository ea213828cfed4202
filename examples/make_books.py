"""Rebuild examples/sample/books/tinyshakespeare.jsonl.gz from the tinyshakespeare text (public domain).

The text is cut into documents at the blank lines between speeches, each document the next run of whole
speeches of at least CHUNK_CHARS characters; the text itself is unchanged. One JSON object a line,
{"id": "tinyshakespeare-NNNN", "text": ...}, gzipped without a timestamp so a rebuild is byte-identical.
Usage: python examples/make_books.py ../shared/data/text/reference/tinyshakespeare.txt \
           examples/sample/books/tinyshakespeare.jsonl.gz
"""
import gzip
import json
import sys
from pathlib import Path

CHUNK_CHARS = 4000


def documents(text: str, chunk_chars: int = CHUNK_CHARS) -> list[str]:
    docs, cur, size = [], [], 0
    for speech in text.strip().split("\n\n"):
        cur.append(speech)
        size += len(speech)
        if size >= chunk_chars:
            docs.append("\n\n".join(cur))
            cur, size = [], 0
    if cur:
        docs.append("\n\n".join(cur))
    return docs


def main(src: str, out: str) -> None:
    docs = documents(Path(src).read_text(encoding="utf-8"))
    lines = "".join(json.dumps({"id": f"tinyshakespeare-{i:04d}", "text": d}, ensure_ascii=False) + "\n"
                    for i, d in enumerate(docs))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(lines.encode("utf-8"))
    print(len(docs), "documents written to", out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
