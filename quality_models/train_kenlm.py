"""Train the perplexity model the scorer loads: sentencepiece (unigram) + KenLM n-gram, CCNet style.

    python -m quality_models.train_kenlm --text FILE [--text FILE ...] --lang en --out DIR \\
        [--order 5] [--vocab-size 8000] [--prune 0 0 1] [--contrast FILE ...]

Writes into DIR:
  <lang>.sp.model   the sentencepiece model (pieces are the LM's words)
  <lang>.klm        the KenLM binary (trie, 8-bit quantized probabilities and backoffs)
  kenlm-<lang>.md   the model card: data files with sha256 and sizes, parameters, held-out
                    perplexity of the reference text and of the contrast (spam-like) text, versions.

The reference text is read one paragraph per line. A deterministic 10 % of the lines (chosen by a
hash of the line, so the split does not depend on file order) is held out of both the tokenizer and
the language model and used to report perplexity. WikiText files (`@-@` escapes, `<unk>`, ` = Title = `
headings) are detected and cleaned; `--text-format plain` turns that off.

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
from pipeline.kenlm_scoring import PerplexityScorer, model_paths, normalize_for_lm

ROOT = Path(__file__).resolve().parents[1]
KENLM_BIN = Path(os.environ.get("KENLM_BIN", ROOT / "build" / "kenlm" / "bin"))
NOT_BUILT = "KenLM binaries not built: run `make kenlm`"

DEFAULT_VOCAB = 4000
DEFAULT_PRUNE = (0, 0, 1)  # drop singleton 3-grams and longer: keeps the default model small


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


# --- contrast text ---------------------------------------------------------------------------------

def extract_web_texts(path: str | Path) -> list[str]:
    """Kept documents' text from a WARC file, through the project's own extractor."""
    from pipeline.extract import ExtractConfig, extract_file
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


# --- training --------------------------------------------------------------------------------------

def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise SystemExit(f"train_kenlm: {what} failed (exit {proc.returncode}):\n  {' '.join(cmd)}\n{tail}")
    return proc


def train_sentencepiece(lines: Sequence[str], model_path: Path, vocab_size: int) -> None:
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        model_type="unigram",
        vocab_size=vocab_size,
        hard_vocab_limit=False,        # a small corpus may not support the full vocabulary
        character_coverage=0.9999,
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
          heldout_fraction: float = 0.1, memory: str = "256M") -> dict:
    lmplz, build_binary = KENLM_BIN / "lmplz", KENLM_BIN / "build_binary"
    for b in (lmplz, build_binary):
        if not os.access(b, os.X_OK):
            print(f"{NOT_BUILT} (missing {_display(b)})", file=sys.stderr)
            raise SystemExit(2)
    for t in list(texts) + list(contrast):
        if not Path(t).is_file():
            raise SystemExit(f"train_kenlm: no such file: {t}")

    started = _dt.datetime.now(_dt.timezone.utc)
    lines = read_reference(texts, text_format)
    train_lines, held = split_heldout(lines, heldout_fraction)
    if len(train_lines) < 10:
        raise SystemExit(f"train_kenlm: only {len(train_lines)} training lines in {', '.join(map(str, texts))}")
    norm_train = [n for n in (normalize_for_lm(ln) for ln in train_lines) if n]

    out.mkdir(parents=True, exist_ok=True)
    sp_path, lm_path = model_paths(out, lang)
    with tempfile.TemporaryDirectory(prefix=f".kenlm-{lang}-", dir=out) as tmp:
        tmpd = Path(tmp)
        tmp_sp, tmp_lm = model_paths(tmpd, lang)
        train_sentencepiece(norm_train, tmp_sp, vocab_size)

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
        con_ppl = [scorer.perplexity(t) for t in contrast_docs]
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
        }
        del scorer, sp
        os.replace(tmp_sp, sp_path)
        os.replace(tmp_lm, lm_path)

    params = {"lang": lang, "order": order, "vocab_size_requested": vocab_size, "prune": prune,
              "text_format": text_format, "heldout_fraction": heldout_fraction, "lmplz_memory": memory}
    card = out / f"kenlm-{lang}.md"
    card.write_text(_model_card(texts, contrast, sp_path, lm_path, params, metrics, started), encoding="utf-8")
    return {"sp_model": sp_path, "klm": lm_path, "card": card, **metrics}


def _model_card(texts, contrast, sp_path: Path, lm_path: Path, params: dict, m: dict,
                started: _dt.datetime) -> str:
    lang = params["lang"]
    rows = "\n".join(f"| `{_display(Path(t))}` | {Path(t).stat().st_size:,} | `{sha256_file(Path(t))}` |" for t in texts)
    con_rows = "\n".join(f"| `{_display(Path(t))}` | {Path(t).stat().st_size:,} | `{sha256_file(Path(t))}` |"
                         for t in contrast) or "| (none given) | | |"
    ngrams = ", ".join(f"{k}-grams {v:,}" for k, v in sorted(m["ngrams"].items()))
    ver = _versions()
    prune = " ".join(map(str, params["prune"])) if any(params["prune"]) else "none"
    if m["contrast_median_ppl"] is not None and m["heldout_median_ppl"]:
        ratio = f" (contrast/reference median ratio {m['contrast_median_ppl'] / m['heldout_median_ppl']:.1f}×)"
    else:
        ratio = ""
    return f"""# KenLM perplexity model: `{lang}`

A {params['order']}-gram KenLM model over sentencepiece pieces, in the manner of CCNet: low perplexity means
"reads like the reference text". `pipeline/kenlm_scoring.py` loads it; `jobs/score.py` turns the
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

Read one paragraph per line (format: `{params['text_format']}`; WikiText escapes `@-@ @,@ @.@` undone, `<unk>`
dropped, ` = Heading = ` lines skipped, word tokenization partly undone). {m['train_lines']:,} lines train the
tokenizer and the LM ({m['train_tokens']:,} pieces); {m['heldout_lines']:,} lines (a deterministic
{params['heldout_fraction']:.0%} chosen by SHA-1 of the line) are held out for the numbers below. Text is
normalised with `pipeline.kenlm_scoring.normalize_for_lm` (lower-case, accents stripped, digits to 0,
typographic punctuation to ASCII) before both training and scoring.

## Parameters

- sentencepiece: unigram, requested vocabulary {params['vocab_size_requested']:,} (soft limit), got {m['vocab']:,} pieces,
  character coverage 0.9999, NFKC normalisation (sentencepiece's default rule).
- lmplz: order {params['order']}, modified Kneser-Ney, `--discount_fallback --skip_symbols`, pruning: {prune}.
  N-grams kept: {ngrams}.
- build_binary: `trie`, probabilities and backoffs quantized to 8 bits (`-q 8 -b 8`).

## Held-out perplexity

Document perplexity = 10^(-Σ log10 p / Σ (pieces + 1)) over a document's lines, each line scored with
sentence boundaries.

| text | documents | median perplexity | pooled perplexity |
|---|---:|---:|---:|
| held-out reference lines | {m['heldout_lines']:,} | {_fmt(m['heldout_median_ppl'])} | {_fmt(m['heldout_corpus_ppl'])} |
| contrast (spam-like web text) | {m['contrast_scored']:,} of {m['contrast_docs']:,} | {_fmt(m['contrast_median_ppl'])} | {_fmt(m['contrast_corpus_ppl'])} |

Contrast files{ratio}:

| contrast text | bytes | sha256 |
|---|---:|---|
{con_rows}

WARC contrast files are run through the project's extractor (`pipeline.extract`), kept records only. The
contrast documents are in any language: an English model gives foreign-language text a very high
perplexity, which is what a per-language bucket would see if language ID were wrong. The scoring job only
applies a model to documents of its own language.

## Limits

- Trained on about a megabyte of encyclopedic text: "low perplexity" means "Wikipedia-like", which
  penalises fine informal or technical writing too. Use it to rank within a language, not as an absolute
  quality score; retrain on a larger reference (a Wikipedia dump) for real use.
- Perplexities are only comparable between documents scored by the same model files.
- The model is derived from its training text and carries that text's license (for the bundled default,
  WikiText-2: CC BY-SA 3.0, see `quality_models/data/NOTICE`).

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
    r = train(a.text, a.lang, a.out, a.order, a.vocab_size, a.prune, a.contrast, a.text_format,
              a.heldout_fraction, a.memory)
    print(f"train_kenlm: wrote {_display(r['klm'])} ({r['klm'].stat().st_size:,} bytes), "
          f"{_display(r['sp_model'])}, {_display(r['card'])}")
    print(f"  held-out reference: median perplexity {_fmt(r['heldout_median_ppl'])}, pooled "
          f"{_fmt(r['heldout_corpus_ppl'])} over {r['heldout_lines']} lines")
    if r["contrast_docs"]:
        print(f"  contrast: median perplexity {_fmt(r['contrast_median_ppl'])}, pooled "
              f"{_fmt(r['contrast_corpus_ppl'])} over {r['contrast_scored']} documents")
    return 0


if __name__ == "__main__":
    sys.exit(main())
