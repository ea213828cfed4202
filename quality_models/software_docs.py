"""Software documentation as a reader sees the rendered page: a project's Markdown or reStructuredText pages with
their markup dropped and their code kept, one document a page. A positive kind for an English quality classifier
that should not take code for junk (docs/quality.md, "Documentation with its code"); the prose set's technical and
how-to kinds lost their code blocks, so a classifier trained on them alone learns that code means web.

    python -m quality_models.software_docs --out quality_models/data/docs/en-software-docs.jsonl.gz \\
        --source pallets/flask 2ac89889f4cc330eabd50f295dcef02828522c69 BSD-3-Clause DIR [--source ...]

DIR holds the project's docs folder at that commit (`git archive COMMIT docs | tar -x -C DIR`). Changelogs,
licence and contributor pages are left out; each page is cut like the prose copies (quality_models/make_data.py).
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from quality_models.make_data import cut, write_jsonl

SKIP = re.compile(r"change|history|licen[cs]e|contribut|release|authors", re.I)
MIN_CHARS = 500                     # an index or a stub page is not documentation prose
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_SKIP = ("```", "~~~", "{%", "<", "!!!", "???", "===")     # fences, templates, HTML, admonition markers
_MD_SHORTCODE = re.compile(r"\{\{[%<].*?[%>]\}\}\s*")              # Hugo's {{% note %}}, {{< tabs >}}
_RST_ROLE = re.compile(r":[\w:.+-]+:`~?([^`<]*?)\s*(?:<[^>]*>)?`")
_RST_LINK = re.compile(r"`([^`<]*?)\s*<[^>]*>`_+")
_RST_FIELD = re.compile(r"^:[\w .-]+:(\s|$)")                   # a directive's option, `:param x:` fields
_UNDERLINE = set("=-~^*#+`'\".:_")


def markdown_text(raw: str) -> str:
    raw = re.sub(r"\A---\n.*?\n---\n", "", raw, flags=re.S)      # front matter
    out = []
    for line in raw.splitlines():
        if line.strip().startswith(_MD_SKIP):
            continue
        line = re.sub(r"^\s{0,3}#+\s*", "", line)                 # headings keep their words
        line = _MD_LINK.sub(r"\1", _MD_SHORTCODE.sub("", line))
        out.append(line.replace("**", "").replace("`", "").rstrip())
    return "\n".join(out)


def rst_text(raw: str) -> str:
    out = []
    for line in raw.splitlines():
        s = line.strip()
        if len(s) >= 3 and set(s) <= _UNDERLINE:                  # a heading's underline or overline
            continue
        if s.startswith(".. ") or _RST_FIELD.match(s):           # directives, comments, targets, their options
            continue
        line = _RST_LINK.sub(r"\1", _RST_ROLE.sub(r"\1", line)).replace("``", "").replace("**", "")
        out.append(re.sub(r"(\S)::$", r"\1:", line).rstrip())     # "as follows::" reads "as follows:"
    return "\n".join(out)


def reflow(text: str) -> str:
    """A paragraph of wrapped prose becomes one line, as a browser shows it; code, lists and tables keep their
    lines (a block with an indented line, a bullet, a prompt or a table row)."""
    lines_out, block = [], []

    def flush():
        if not block:
            return
        verbatim = any(l[:1] in (" ", "\t") or l.lstrip().startswith(("- ", "* ", "$ ", ">>> ", "|", "+ "))
                       for l in block)
        lines_out.extend(l.strip() for l in block) if verbatim else lines_out.append(" ".join(l.strip() for l in block))
        block.clear()

    for line in text.splitlines():
        if line.strip():
            block.append(line)
        else:
            flush()
    flush()
    return "\n".join(lines_out)


def page_text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8", errors="replace")
    return reflow(markdown_text(raw) if path.suffix == ".md" else rst_text(raw))


def rows(name: str, commit: str, license_: str, root: Path) -> list[dict]:
    out = []
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".md", ".rst")):
        rel = path.relative_to(root).as_posix()
        if SKIP.search(rel):
            continue
        text = page_text(path)
        if len(text) < MIN_CHARS:
            continue
        out.append({"id": f"{name}/{rel}", "text": cut(text), "source": name, "license": license_,
                    "url_or_path": f"https://github.com/{name}/blob/{commit}/{rel}"})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", nargs=4, action="append", required=True, metavar=("REPO", "COMMIT", "LICENSE", "DIR"))
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    write_jsonl(a.out, [r for name, commit, lic, root in a.source for r in rows(name, commit, lic, Path(root))])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
