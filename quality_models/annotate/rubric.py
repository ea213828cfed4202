"""What the model is asked: a rubric file per language, the document put in its ``{document}`` placeholder.

The shipped rubrics (rubrics/en.md, rubrics/zh.md: educational value for pretraining, graded 0 to 5, written for
this project) are chosen by the document's language; ``--rubric FILE`` (every language) or ``--rubric
LANG=FILE`` replaces them with a user's own. The placeholder is checked when the file is read, not when the
first reply comes back. A rubric is named in every label row by its name and the sha256 of its text, so labels
from two rubrics are never mistaken for one another.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

PLACEHOLDER = "{document}"
SHIPPED = Path(__file__).resolve().parent / "rubrics"
ANY = "*"


class RubricError(ValueError):
    """A rubric that cannot be used: the message names the file and the fix."""


@dataclass(frozen=True)
class Rubric:
    name: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def identity(self) -> dict:
        return {"name": self.name, "sha256": self.sha256}

    def prompt(self, document: str) -> str:
        # str.replace, not str.format: a rubric may show JSON such as {"score": 4}
        return self.text.replace(PLACEHOLDER, document)


def load(path: str | Path, name: str | None = None) -> Rubric:
    p = Path(path)
    if not p.is_file():
        raise RubricError(f"--rubric {path}: no such file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RubricError(f"--rubric {path}: not UTF-8 text") from None
    if PLACEHOLDER not in text:
        raise RubricError(f"--rubric {path}: no {PLACEHOLDER} placeholder; write {PLACEHOLDER} where the "
                          "document's text goes")
    return Rubric(name or p.stem, text)


def shipped() -> dict[str, Rubric]:
    """The project's rubrics, by language: ``glassbox-edu-en``, ``glassbox-edu-zh``."""
    return {p.stem: load(p, f"glassbox-edu-{p.stem}") for p in sorted(SHIPPED.glob("*.md"))}


def choose(overrides: list[str]) -> dict[str, Rubric]:
    """The rubric of each language: the shipped ones, replaced by ``FILE`` (every language, key ``*``) or
    ``LANG=FILE`` arguments."""
    if not overrides:
        return shipped()
    out: dict[str, Rubric] = {}
    for arg in overrides:
        lang, sep, path = arg.partition("=")
        if not sep or "/" in lang or not lang:
            lang, path = ANY, arg
        if lang in out:
            raise RubricError(f"--rubric {arg}: a second rubric for {'every language' if lang == ANY else lang}")
        out[lang] = load(path)
    if ANY not in out:                         # LANG=FILE replaces that language's; the others stay shipped
        out = {**shipped(), **out}
    return out


def for_language(rubrics: dict[str, Rubric], lang: str | None) -> Rubric | None:
    return rubrics.get(lang or "") or rubrics.get(ANY)


def truncate(text: str, max_chars: int) -> tuple[str, bool]:
    """The first ``max_chars`` characters, cut back to the last line or word break in the final tenth when
    there is one (a model grades what it sees: a sentence cut mid-word is noise it would have to ignore)."""
    if len(text) <= max_chars:
        return text, False
    cut = text[:max_chars]
    for sep in ("\n", " ", "。"):
        at = cut.rfind(sep)
        if at >= max_chars * 0.9:
            return cut[:at + (1 if sep == "。" else 0)].rstrip(), True
    return cut, True
