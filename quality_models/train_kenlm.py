"""Train the perplexity model the scorer loads: sentencepiece (unigram) + KenLM n-gram, CCNet style.

    python -m quality_models.train_kenlm --text FILE [--text FILE ...] --lang en --out DIR \\
        [--order 5] [--vocab-size 8000] [--prune 0 0 1] [--contrast FILE ...] [--contrast-lang LANG]
        [--prose FILE ...] [--shuffled] [--character-coverage X] [--data-license TEXT] [--note TEXT ...]

Writes into DIR:
  <lang>.sp.model   the sentencepiece model (pieces are the LM's words)
  <lang>.klm        the KenLM binary (trie, 8-bit quantized probabilities and backoffs)
  kenlm-<lang>.md   the model card: data files with sha256 and sizes, parameters, held-out
                    perplexity of the reference text and of the contrast (spam-like) text, versions.

The reference text is read one paragraph per line. A deterministic 10 % of the lines (chosen by a
hash of the line, so the split does not depend on file order) is held out of both the tokenizer and
the language model and used to report perplexity. WikiText files (`@-@` escapes, `<unk>`, ` = Title = `
headings) are detected and cleaned; `--text-format plain` turns that off.

Evaluation only (never trained on): `--contrast` spam-like documents (`--contrast-lang` keeps those that
lid.176 puts in that language), `--prose` real prose of the language (lines also in the reference are
dropped from it), `--shuffled` the held-out prose (or reference) with its characters (unspaced scripts)
or words shuffled. Each is a row of the model card's perplexity table.

Languages written in a large character set (Chinese, Japanese) get sentencepiece's recommended
character coverage 0.9995, others 0.9999, unless `--character-coverage` says otherwise.

Needs KenLM's `lmplz` and `build_binary` in build/kenlm/bin (`make kenlm`); exits 2 without them.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import hashlib
import io
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

from glassbox.contracts import sha256_file
from pipeline.score.perplexity import PerplexityScorer, model_paths, normalize_for_lm

ROOT = Path(__file__).resolve().parents[1]
KENLM_BIN = Path(os.environ.get("KENLM_BIN", ROOT / "build" / "kenlm" / "bin"))
NOT_BUILT = "KenLM binaries not built: run `make kenlm`"

DEFAULT_VOCAB = 4000
DEFAULT_PRUNE = (0, 0, 1)  # drop singleton 3-grams and longer: keeps the default model small
# sentencepiece's guidance: 0.9995 for languages with a rich character set (Chinese, Japanese), so the
# rarest characters become <unk> instead of pieces seen once; nearly everything for the others.
RICH_CHARSET_LANGS = ("zh", "ja", "yue", "wuu")
RICH_CHARSET_COVERAGE = 0.9995
DEFAULT_COVERAGE = 0.9999


def default_character_coverage(lang: str) -> float:
    return RICH_CHARSET_COVERAGE if lang in RICH_CHARSET_LANGS else DEFAULT_COVERAGE


# --- reading the reference text ------------------------------------------------------------------

_WIKI_HEADING = re.compile(r"^\s*(=\s+)+[^=].*?(\s+=)+\s*$")
_WIKI_ESCAPES = ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", "."))
# WikiText is word-tokenized ("the game 's score ( 1 @,@ 000 )"); web text is not. Undo the common
# cases so that the tokenizer and the model see text shaped like what they will score.
_DETOK = (
    (re.compile(r" ([.,;:!?%)\]}])"), r"\1"),
    (re.compile(r"([(\[{$]) "), r"\1"),
    (re.compile(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", re.IGNORECASE), r"\1"),
    (re.compile(r" ' s\b"), "'s"),
)
_UNK = re.compile(r"\s*<unk>\s*")


def looks_like_wikitext(lines: Sequence[str]) -> bool:
    sample = lines[:2000]
    return any(" @-@ " in ln or " @,@ " in ln or "<unk>" in ln for ln in sample) and \
        any(_WIKI_HEADING.match(ln) for ln in sample)


def clean_wikitext_line(line: str) -> str:
    """One WikiText line -> plain text ('' for headings): escapes undone, <unk> dropped, detokenized."""
    if _WIKI_HEADING.match(line):
        return ""
    for old, new in _WIKI_ESCAPES:
        line = line.replace(old, new)
    line = _UNK.sub(" ", line)
    for pat, rep in _DETOK:
        line = pat.sub(rep, line)
    return " ".join(line.split())


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def read_reference(paths: Iterable[str | Path], text_format: str = "auto") -> list[str]:
    """Non-empty paragraphs (one per line) of the reference files, cleaned per text_format."""
    out: list[str] = []
    for p in paths:
        with _open_text(Path(p)) as f:
            lines = f.read().splitlines()
        wiki = text_format == "wikitext" or (text_format == "auto" and looks_like_wikitext(lines))
        for ln in lines:
            ln = clean_wikitext_line(ln) if wiki else " ".join(ln.split())
            if ln:
                out.append(ln)
    return out


def _is_wikitext(path: str | Path, text_format: str) -> bool:
    if text_format != "auto":
        return text_format == "wikitext"
    with _open_text(Path(path)) as f:
        return looks_like_wikitext(f.read().splitlines())


def is_heldout(line: str, fraction: float = 0.1) -> bool:
    """Deterministic: the same line is always on the same side, whatever the file order."""
    h = int.from_bytes(hashlib.sha1(line.encode("utf-8")).digest()[:8], "big")
    return (h % 10_000) < round(fraction * 10_000)


def split_heldout(lines: Sequence[str], fraction: float = 0.1) -> tuple[list[str], list[str]]:
    """-> (train, held-out) lines."""
    train, held = [], []
    for ln in lines:
        (held if is_heldout(ln, fraction) else train).append(ln)
    return train, held


# --- evaluation text -------------------------------------------------------------------------------

def extract_web_texts(path: str | Path) -> list[str]:
    """Kept documents' text from a WARC file, through the project's own extractor."""
    from pipeline.extract.html import ExtractConfig, extract_file
    return [r["text"] for r in extract_file(str(path), "web", "warc", ExtractConfig())
            if r.get("status") == "kept" and r.get("text")]


def read_contrast(path: str | Path) -> list[str]:
    """Documents of a contrast file: WARC (extracted), JSONL(.gz) with a `text` field, or plain text
    (one document per line)."""
    name = Path(path).name
    if ".warc" in name or name.endswith(".arc.gz"):
        return extract_web_texts(path)
    if ".jsonl" in name or name.endswith(".json.gz"):
        docs = []
        with _open_text(Path(path)) as f:
            for ln in f:
                if ln.strip():
                    text = json.loads(ln).get("text")
                    if text:
                        docs.append(text)
        return docs
    with _open_text(Path(path)) as f:
        return [ln.strip() for ln in f if ln.strip()]


def keep_language(docs: Sequence[str], lang: str) -> list[str]:
    """The documents that the project's language ID (lid.176, pipeline/clean/langid.py) puts in `lang`."""
    from pipeline.clean.langid import get_identifier
    preds = get_identifier().predict(list(docs))
    return [d for d, (got, _) in zip(docs, preds) if got == lang]


def shuffled(text: str) -> str:
    """The same characters (a text with unspaced script) or words (otherwise), line by line, in a random
    order fixed by the line itself: text with the reference's unigrams and none of its order."""
    import random

    from pipeline.clean.words import has_unspaced
    out = []
    for line in text.splitlines():
        units = [c for c in line if not c.isspace()] if has_unspaced(line) else line.split()
        random.Random(hashlib.sha1(line.encode("utf-8")).digest()).shuffle(units)
        out.append(("" if has_unspaced(line) else " ").join(units))
    return "\n".join(out)


# --- training --------------------------------------------------------------------------------------

def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise SystemExit(f"train_kenlm: {what} failed (exit {proc.returncode}):\n  {' '.join(cmd)}\n{tail}")
    return proc


def train_sentencepiece(lines: Sequence[str], model_path: Path, vocab_size: int,
                        character_coverage: float = DEFAULT_COVERAGE) -> None:
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        model_type="unigram",
        vocab_size=vocab_size,
        hard_vocab_limit=False,        # a small corpus may not support the full vocabulary
        character_coverage=character_coverage,
        input_sentence_size=0,         # use every line: no sampling, so the result is reproducible
        shuffle_input_sentence=False,
        max_sentence_length=1 << 16,
        num_threads=1,
        minloglevel=2,
    )
    model_path.write_bytes(buf.getvalue())


def _arpa_counts(arpa: Path) -> dict[int, int]:
    counts: dict[int, int] = {}
    with open(arpa, encoding="utf-8", errors="replace") as f:
        for ln in f:
            m = re.match(r"ngram (\d+)=(\d+)", ln)
            if m:
                counts[int(m.group(1))] = int(m.group(2))
            elif ln.startswith("\\1-grams:"):
                break
    return counts


def corpus_perplexity(scorer: PerplexityScorer, texts: Sequence[str]) -> float | None:
    total, n = 0.0, 0
    for t in texts:
        lp, k = scorer.log10_prob(t)
        total, n = total + lp, n + k
    return 10.0 ** (-total / n) if n else None


def eval_row(scorer: PerplexityScorer, label: str, docs: Sequence[str]) -> dict:
    """One row of the card's perplexity table."""
    ppl = [scorer.perplexity(t) for t in docs]
    return {"text": label, "documents": len(docs), "scored": sum(p is not None for p in ppl),
            "median_ppl": _med(ppl), "corpus_ppl": corpus_perplexity(scorer, docs) if docs else None}


def _med(values) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.1f}"


def _kenlm_source_version() -> str:
    src = sorted((ROOT / "build" / "kenlm" / "src").glob("kenlm-*.tar.gz"))
    return src[-1].name[: -len(".tar.gz")] if src else "unknown (binaries built elsewhere)"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version
    out = {"python": platform.python_version(), "lmplz/build_binary": _kenlm_source_version()}
    for pkg in ("kenlm", "sentencepiece"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _display(p: Path) -> str:
    """Repository-relative path when the file lies in the repository, else its name (no machine paths)."""
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return p.name


def train(texts: Sequence[Path], lang: str, out: Path, order: int = 5, vocab_size: int = DEFAULT_VOCAB,
          prune: Sequence[int] = DEFAULT_PRUNE, contrast: Sequence[Path] = (), text_format: str = "auto",
          heldout_fraction: float = 0.1, memory: str = "256M", contrast_lang: str | None = None,
          prose: Sequence[Path] = (), shuffle: bool = False, character_coverage: float | None = None,
          data_license: str | None = None, notes: Sequence[str] = ()) -> dict:
    lmplz, build_binary = KENLM_BIN / "lmplz", KENLM_BIN / "build_binary"
    for b in (lmplz, build_binary):
        if not os.access(b, os.X_OK):
            print(f"{NOT_BUILT} (missing {_display(b)})", file=sys.stderr)
            raise SystemExit(2)
    for t in list(texts) + list(contrast) + list(prose):
        if not Path(t).is_file():
            raise SystemExit(f"train_kenlm: no such file: {t}")

    started = _dt.datetime.now(_dt.timezone.utc)
    lines = read_reference(texts, text_format)
    train_lines, held = split_heldout(lines, heldout_fraction)
    if len(train_lines) < 10:
        raise SystemExit(f"train_kenlm: only {len(train_lines)} training lines in {', '.join(map(str, texts))}")
    norm_train = [n for n in (normalize_for_lm(ln) for ln in train_lines) if n]
    coverage = default_character_coverage(lang) if character_coverage is None else character_coverage
    # evaluation prose: never a line the model was trained on
    seen = set(lines)
    prose_lines = read_reference(prose, "plain") if prose else []
    prose_docs = [ln for ln in prose_lines if ln not in seen]

    out.mkdir(parents=True, exist_ok=True)
    sp_path, lm_path = model_paths(out, lang)
    with tempfile.TemporaryDirectory(prefix=f".kenlm-{lang}-", dir=out) as tmp:
        tmpd = Path(tmp)
        tmp_sp, tmp_lm = model_paths(tmpd, lang)
        train_sentencepiece(norm_train, tmp_sp, vocab_size, coverage)

        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=str(tmp_sp))
        corpus = tmpd / "corpus.txt"
        n_tokens = 0
        with open(corpus, "w", encoding="utf-8") as f:
            for ln in norm_train:
                pieces = [p for p in sp.encode(ln, out_type=str) if p and not p.isspace()]
                if pieces:
                    n_tokens += len(pieces)
                    f.write(" ".join(pieces) + "\n")

        arpa = tmpd / "model.arpa"
        cmd = [str(lmplz), "-o", str(order), "--discount_fallback", "--skip_symbols",
               "-S", memory, "-T", str(tmpd), "--text", str(corpus), "--arpa", str(arpa)]
        prune = list(prune)
        if any(prune):
            cmd += ["--prune", *map(str, prune)]
        _run(cmd, "lmplz")
        counts = _arpa_counts(arpa)
        _run([str(build_binary), "-q", "8", "-b", "8", "-T", str(tmpd / "bb"), "trie", str(arpa), str(tmp_lm)],
             "build_binary")

        scorer = PerplexityScorer(tmpd, lang).load()
        held_ppl = [scorer.perplexity(t) for t in held]
        contrast_docs: list[str] = []
        for c in contrast:
            contrast_docs += read_contrast(c)
        contrast_all = len(contrast_docs)
        if contrast_lang:
            contrast_docs = keep_language(contrast_docs, contrast_lang)
        con_ppl = [scorer.perplexity(t) for t in contrast_docs]
        rows = [eval_row(scorer, "held-out reference lines", held)]
        if prose:
            rows.append(eval_row(scorer, "evaluation prose (not trained on)", prose_docs))
        if contrast:
            what = f"lid.176 says `{contrast_lang}`: {len(contrast_docs)} of {contrast_all}" if contrast_lang \
                else "any language"
            rows.append(eval_row(scorer, f"contrast: spam-like web text ({what})", contrast_docs))
        if shuffle:
            base, name = (prose_docs, "evaluation prose") if prose else (held, "held-out reference lines")
            from pipeline.clean.words import has_unspaced
            unit = "characters" if any(has_unspaced(t) for t in base) else "words"
            rows.append(eval_row(scorer, f"contrast: {name} with {unit} shuffled",
                                 [shuffled(t) for t in base]))
        metrics = {
            "heldout_lines": len(held),
            "heldout_corpus_ppl": corpus_perplexity(scorer, held),
            "heldout_median_ppl": _med(held_ppl),
            "train_lines": len(train_lines),
            "train_tokens": n_tokens,
            "contrast_docs": len(contrast_docs),
            "contrast_scored": sum(p is not None for p in con_ppl),
            "contrast_corpus_ppl": corpus_perplexity(scorer, contrast_docs) if contrast_docs else None,
            "contrast_median_ppl": _med(con_ppl),
            "vocab": sp.get_piece_size(),
            "ngrams": counts,
            "rows": rows,
            "prose_lines": len(prose_lines),
            "prose_dropped_in_reference": len(prose_lines) - len(prose_docs),
            "train_chars": sum(map(len, train_lines)),
            "wikitext": any(_is_wikitext(t, text_format) for t in texts),
        }
        del scorer, sp
        os.replace(tmp_sp, sp_path)
        os.replace(tmp_lm, lm_path)

    params = {"lang": lang, "order": order, "vocab_size_requested": vocab_size, "prune": prune,
              "text_format": text_format, "heldout_fraction": heldout_fraction, "lmplz_memory": memory,
              "character_coverage": coverage, "contrast_lang": contrast_lang, "data_license": data_license,
              "notes": list(notes)}
    card = out / f"kenlm-{lang}.md"
    card.write_text(_model_card(texts, contrast, sp_path, lm_path, params, metrics, started, prose),
                    encoding="utf-8")
    return {"sp_model": sp_path, "klm": lm_path, "card": card, **metrics}


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def _file_rows(paths) -> str:
    return "\n".join(f"| `{_display(Path(t))}` | {Path(t).stat().st_size:,} | `{sha256_file(Path(t))}` |"
                     for t in paths)


def _model_card(texts, contrast, sp_path: Path, lm_path: Path, params: dict, m: dict,
                started: _dt.datetime, prose=()) -> str:
    lang = params["lang"]
    rows = _file_rows(texts)
    eval_files = [*prose, *contrast]
    con_rows = _file_rows(eval_files) or "| (none given) | | |"
    ngrams = ", ".join(f"{k}-grams {v:,}" for k, v in sorted(m["ngrams"].items()))
    ver = _versions()
    prune = " ".join(map(str, params["prune"])) if any(params["prune"]) else "none"
    ref_median = m["heldout_median_ppl"]
    table = "\n".join(
        f"| {r['text']} | {r['scored']:,} of {r['documents']:,} | {_fmt(r['median_ppl'])} | "
        f"{_fmt(r['corpus_ppl'])} | "
        + (f"{r['median_ppl'] / ref_median:.1f}× |" if r["median_ppl"] is not None and ref_median else "n/a |")
        for r in m["rows"])
    if m["wikitext"]:
        reading = (f"Read one paragraph per line (format: `{params['text_format']}`; WikiText escapes `@-@ @,@ @.@` "
                   "undone, `<unk>`\ndropped, ` = Heading = ` lines skipped, word tokenization partly undone).")
    else:
        reading = (f"Read one sentence or paragraph per line (format: `{params['text_format']}`; runs of "
                   "whitespace collapsed).")
    ref_bytes = sum(Path(t).stat().st_size for t in texts)
    license_note = (f"{params['data_license']}, see `quality_models/data/NOTICE`" if params["data_license"]
                    else "see `quality_models/data/NOTICE` for the bundled defaults")
    notes = "".join(f"\n- {n}" for n in params["notes"])
    if prose:
        dropped = m["prose_dropped_in_reference"]
        prose_note = (f" Of the evaluation prose's {m['prose_lines']:,} lines, "
                      + (f"{dropped:,} are also in the reference and are left out." if dropped else
                         "none is in the reference."))
    else:
        prose_note = ""
    lid_note = (f" Contrast documents are kept only when lid.176 (`pipeline/clean/langid.py`) identifies them as "
                f"`{params['contrast_lang']}`, as the score stage would." if params["contrast_lang"] else
                " The contrast documents are in any language: a model gives foreign-language text a very high\n"
                "perplexity, which is what a per-language bucket would see if language ID were wrong. The scoring\n"
                "job only applies a model to documents of its own language.")
    return f"""# KenLM perplexity model: `{lang}`

A {params['order']}-gram KenLM model over sentencepiece pieces, in the manner of CCNet: low perplexity means
"reads like the reference text". `pipeline/score/perplexity.py` loads it; `jobs/score.py` turns the
per-language perplexities into `head`/`middle`/`tail` buckets. Retrain with `make quality-models`, or on
your own text with `python -m quality_models.train_kenlm --text FILE --lang {lang} --out DIR`.

## Files

| file | bytes | sha256 |
|---|---:|---|
| `{lm_path.name}` | {lm_path.stat().st_size:,} | `{sha256_file(lm_path)}` |
| `{sp_path.name}` | {sp_path.stat().st_size:,} | `{sha256_file(sp_path)}` |

## Training data

| reference text | bytes | sha256 |
|---|---:|---|
{rows}

{reading} {m['train_lines']:,} lines ({m['train_chars']:,} characters) train the
tokenizer and the LM ({m['train_tokens']:,} pieces); {m['heldout_lines']:,} lines (a deterministic
{params['heldout_fraction']:.0%} chosen by SHA-1 of the line) are held out for the numbers below. Text is
normalised with `pipeline.score.perplexity.normalize_for_lm` (lower-case, accents stripped, digits to 0,
typographic punctuation to ASCII) before both training and scoring.

## Parameters

- sentencepiece: unigram, requested vocabulary {params['vocab_size_requested']:,} (soft limit), got {m['vocab']:,} pieces,
  character coverage {params['character_coverage']}, NFKC normalisation (sentencepiece's default rule).
- lmplz: order {params['order']}, modified Kneser-Ney, `--discount_fallback --skip_symbols`, pruning: {prune}.
  N-grams kept: {ngrams}.
- build_binary: `trie`, probabilities and backoffs quantized to 8 bits (`-q 8 -b 8`).

## Held-out perplexity

Document perplexity = 10^(-Σ log10 p / Σ (pieces + 1)) over a document's lines, each line scored with
sentence boundaries. The last column is the row's median over the held-out reference's.

| text | documents scored | median perplexity | pooled perplexity | median vs reference |
|---|---:|---:|---:|---:|
{table}

Evaluation files (never trained on):

| evaluation text | bytes | sha256 |
|---|---:|---|
{con_rows}

WARC contrast files are run through the project's extractor (`pipeline.extract.html`), kept records only.{lid_note}{prose_note}

## Limits

- Trained on {_size(ref_bytes)} of reference text: "low perplexity" means "reads like the reference", which
  penalises fine informal or technical writing too. Use it to rank within a language, not as an absolute
  quality score; retrain on a larger reference (a Wikipedia dump) for real use.
- Perplexities are only comparable between documents scored by the same model files.
- The model is derived from its training text and carries that text's license ({license_note}).{notes}

## Provenance

Trained {started.strftime('%Y-%m-%d %H:%M UTC')}. Software: Python {ver['python']}, sentencepiece
{ver['sentencepiece']}, kenlm (query bindings) {ver['kenlm']}, lmplz/build_binary from {ver['lmplz/build_binary']}
(`quality_models/build_kenlm.sh`).
"""


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m quality_models.train_kenlm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--text", action="append", required=True, type=Path,
                    help="reference text, one paragraph per line (.txt or .txt.gz); repeatable")
    ap.add_argument("--lang", required=True, help="language code; names the output files")
    ap.add_argument("--out", required=True, type=Path, help="output folder")
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB)
    ap.add_argument("--prune", type=int, nargs="+", default=list(DEFAULT_PRUNE),
                    help="lmplz count thresholds per order, non-decreasing (default: 0 0 1); 0 alone: no pruning")
    ap.add_argument("--contrast", action="append", default=[], type=Path,
                    help="spam-like text to compare against (WARC, JSONL with `text`, or plain lines); repeatable")
    ap.add_argument("--contrast-lang", default=None,
                    help="keep only the contrast documents that lid.176 identifies as this language")
    ap.add_argument("--prose", action="append", default=[], type=Path,
                    help="real prose of the language, one document per line, for evaluation only; repeatable")
    ap.add_argument("--shuffled", action="store_true",
                    help="also score the held-out prose (or reference) with its characters/words shuffled")
    ap.add_argument("--character-coverage", type=float, default=None,
                    help=f"sentencepiece character coverage (default {RICH_CHARSET_COVERAGE} for "
                         f"{', '.join(RICH_CHARSET_LANGS)}, else {DEFAULT_COVERAGE})")
    ap.add_argument("--data-license", default=None, help="the reference text's license, for the model card")
    ap.add_argument("--note", action="append", default=[], help="a line for the card's Limits; repeatable")
    ap.add_argument("--text-format", choices=("auto", "wikitext", "plain"), default="auto")
    ap.add_argument("--heldout-fraction", type=float, default=0.1)
    ap.add_argument("--memory", default="256M", help="lmplz sorting memory (-S), e.g. 256M or 10%%")
    a = ap.parse_args(argv)
    if a.order < 2:
        ap.error("--order must be at least 2")
    if not 0 < a.heldout_fraction < 1:
        ap.error("--heldout-fraction must be between 0 and 1")
    if any(x > y for x, y in zip(a.prune, a.prune[1:])):
        ap.error("--prune thresholds must be non-decreasing")
    if a.character_coverage is not None and not 0.9 <= a.character_coverage <= 1.0:
        ap.error("--character-coverage must be between 0.9 and 1.0")
    r = train(a.text, a.lang, a.out, a.order, a.vocab_size, a.prune, a.contrast, a.text_format,
              a.heldout_fraction, a.memory, contrast_lang=a.contrast_lang, prose=a.prose, shuffle=a.shuffled,
              character_coverage=a.character_coverage, data_license=a.data_license, notes=a.note)
    print(f"train_kenlm: wrote {_display(r['klm'])} ({r['klm'].stat().st_size:,} bytes), "
          f"{_display(r['sp_model'])}, {_display(r['card'])}")
    print(f"  held-out reference: median perplexity {_fmt(r['heldout_median_ppl'])}, pooled "
          f"{_fmt(r['heldout_corpus_ppl'])} over {r['heldout_lines']} lines")
    for row in r["rows"][1:]:
        print(f"  {row['text']}: median perplexity {_fmt(row['median_ppl'])}, pooled "
              f"{_fmt(row['corpus_ppl'])} over {row['scored']} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
