"""The README and the manuals in docs/ point at things that exist: every relative link (and its #anchor) resolves
to a file of the repository (and a heading in it), and every file path they name in code spans exists, so a
moved module or a renamed section cannot leave a manual pointing nowhere."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
# folders of the repository whose files a manual may name; outputs (data/, runs/, build/) are not checked
SOURCE_ROOTS = ("ablation/", "bench/", "conf/", "docs/", "examples/", "glassbox/", "jobs/", "mixes/", "mixsearch/",
                "pipeline/", "quality_models/", "scripts/", "tests/", "train/")
PLACEHOLDER = re.compile(r"[<>*{}$]|\bxx\b|_N\b|NNNNN|\.\.\.")


def prose(text: str) -> str:
    """The text without fenced code blocks (a `# comment` in a shell block is no heading, a link in code no link)."""
    return re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (code marks included), spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", prose(page.read_text(encoding="utf-8")), flags=re.M):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", prose(page.read_text(encoding="utf-8")))    # no links inside code spans
    return [m.group(1) for m in LINK.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):          # http:, https:, mailto: are not ours to check
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or REPO not in dest.parents and dest != REPO:
            broken.append(f"{target}: no such file")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_named_source_file_exists(page):
    """`pipeline/clean/words.py`, `tests/record_fixtures.py`, `train/record/diagnose/`: a path in a code span that
    starts in a source folder and names a file (an extension) or a folder (a trailing slash) must be there."""
    missing = []
    for span in re.findall(r"`([^`\n]+)`", page.read_text(encoding="utf-8")):
        for word in re.split(r"[\s:(),;=|]+", span):
            word = word.rstrip(".")
            if (word.startswith(SOURCE_ROOTS) and not PLACEHOLDER.search(word)
                    and (word.endswith("/") or re.search(r"\.[A-Za-z]{1,5}$", word))
                    and not (REPO / word).exists()):
                missing.append(word)
    assert not missing, f"{page.relative_to(REPO)} names files that do not exist: {sorted(set(missing))}"


def test_the_checks_catch_what_they_are_for(tmp_path):
    """A broken link, a missing anchor and a heading in a code block are told apart from good ones."""
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n## What comes out (`DATA/`)\n\n```bash\n# not a heading\n[x](nowhere.md)\n```\n"
                    "[a](#what-comes-out-data) [b](#top) ![c](page.md) [d](#not-a-heading) `[e](gone.md)`\n")
    assert anchors(page) == {"top", "what-comes-out-data"}
    assert links(page) == ["#what-comes-out-data", "#top", "page.md", "#not-a-heading"]
    assert slug("How to add ...") == "how-to-add-"
    assert slug("Does a filter help? Ablations") == "does-a-filter-help-ablations"
