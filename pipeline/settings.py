"""What each corpus stage can be told: the settings of extract, clean, score, dedup, decontaminate and tokenize,
with their ranges, checked by the one config checker (glassbox/schema.py) as a config is read.

The stage modules import their settings from here, never the other way round, so checking a config imports
no Spark, model or extraction library. Cross-field rules (bands x rows = num_perm, ...) are the ``check``
method of their dataclass; pipeline/config.py calls them and adds what needs the file system (paths, models).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from glassbox.schema import setting

# --- extract -------------------------------------------------------------------------------------------------


@dataclass
class ExtractConfig:
    timeout_s: float = setting(10.0, gt=0)           # per page; slower pages are rejected as extraction_timeout
    max_payload_bytes: int = setting(5_000_000, ge=1)  # bigger HTTP bodies are rejected, never buffered
    min_text_chars: int = setting(1, ge=0)
    # favor_precision: on the AEB pages it costs ~0.002 token F1 against the default but keeps
    # fewer boilerplate lines, which matters more for a pretraining corpus.
    favor_precision: bool = True
    include_tables: bool = True
    include_comments: bool = False
    deduplicate: bool = False  # measured: no F1 change on AEB, and it is per-process state
    # Gzipped WARC/WET files bigger than this are read as several work units (byte ranges cut at
    # record boundaries), so one big file uses every core and a crash loses at most one range.
    split_bytes: int = setting(32 << 20, ge=1)


# --- clean ---------------------------------------------------------------------------------------------------

OPS = ("<", "<=", ">", ">=")


def _rule(signal: str, op: str, value: float, reason: str) -> dict:
    return {"signal": signal, "op": op, "value": value, "reason": reason}


# Published defaults. The Gopher word rules assume English: a config that admits other languages
# should drop or relax gopher_few_stopwords and the word-length rules.
DEFAULT_RULES: list[dict] = [
    # Gopher quality filter (Rae et al. 2021, A.1.1)
    _rule("gopher_n_words", "<", 50, "gopher_too_few_words"),
    _rule("gopher_n_words", ">", 100_000, "gopher_too_many_words"),
    _rule("gopher_mean_word_len", "<", 3, "gopher_short_words"),
    _rule("gopher_mean_word_len", ">", 10, "gopher_long_words"),
    _rule("gopher_symbol_word_ratio", ">", 0.1, "gopher_symbol_ratio"),
    _rule("gopher_bullet_line_frac", ">", 0.9, "gopher_bullet_lines"),
    _rule("gopher_ellipsis_line_frac", ">", 0.3, "gopher_ellipsis_lines"),
    _rule("gopher_alpha_word_frac", "<", 0.8, "gopher_few_alpha_words"),
    _rule("gopher_stopword_count", "<", 2, "gopher_few_stopwords"),
    # Gopher repetition filter (Rae et al. 2021, table A1)
    _rule("gopher_dup_line_frac", ">", 0.3, "gopher_dup_lines"),
    _rule("gopher_dup_para_frac", ">", 0.3, "gopher_dup_paras"),
    _rule("gopher_dup_line_char_frac", ">", 0.2, "gopher_dup_line_chars"),
    _rule("gopher_dup_para_char_frac", ">", 0.2, "gopher_dup_para_chars"),
    _rule("gopher_top_2gram_char_frac", ">", 0.20, "gopher_top_2gram"),
    _rule("gopher_top_3gram_char_frac", ">", 0.18, "gopher_top_3gram"),
    _rule("gopher_top_4gram_char_frac", ">", 0.16, "gopher_top_4gram"),
    _rule("gopher_dup_5gram_char_frac", ">", 0.15, "gopher_dup_5gram"),
    _rule("gopher_dup_6gram_char_frac", ">", 0.14, "gopher_dup_6gram"),
    _rule("gopher_dup_7gram_char_frac", ">", 0.13, "gopher_dup_7gram"),
    _rule("gopher_dup_8gram_char_frac", ">", 0.12, "gopher_dup_8gram"),
    _rule("gopher_dup_9gram_char_frac", ">", 0.11, "gopher_dup_9gram"),
    _rule("gopher_dup_10gram_char_frac", ">", 0.10, "gopher_dup_10gram"),
    # C4 (Raffel et al. 2020). The curly-bracket rule is left out on purpose: it removes all code.
    _rule("c4_has_lorem_ipsum", ">=", 1, "c4_lorem_ipsum"),
    # FineWeb (Penedo et al. 2024)
    _rule("fineweb_line_punct_frac", "<", 0.12, "fineweb_few_punct_lines"),
    _rule("fineweb_short_line_frac", ">", 0.67, "fineweb_short_lines"),
    _rule("fineweb_dup_line_char_frac", ">", 0.1, "fineweb_dup_line_chars"),
]


def rules_problem(rules: list) -> str | None:
    """What is wrong with the first bad rule (unknown signal, bad op, non-numeric value, ...), or None."""
    import math

    from pipeline.heuristics import SIGNAL_NAMES        # the signal names only: plain Python

    for i, r in enumerate(rules):
        where = f"rules[{i}] {r!r}"
        if not isinstance(r, dict):
            return f"{where}: each rule must be a mapping with signal, op, value, reason"
        missing, extra = {"signal", "op", "value", "reason"} - set(r), set(r) - {"signal", "op", "value", "reason"}
        if missing or extra:
            return f"{where}: missing keys {sorted(missing)}, unknown keys {sorted(extra)}"
        if r["signal"] not in SIGNAL_NAMES:
            return f"{where}: unknown signal {r['signal']!r}; known signals: {', '.join(SIGNAL_NAMES)}"
        if r["op"] not in OPS:
            return f"{where}: op must be one of {list(OPS)}, got {r['op']!r}"
        v = r["value"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return f"{where}: value must be a finite number, got {v!r}"
        if not isinstance(r["reason"], str) or not r["reason"]:
            return f"{where}: reason must be a non-empty string"
    return None


def _language_codes(codes: list) -> str | None:
    if not codes:
        return "expected a non-empty list of language codes such as [en] (or null for every language)"
    return None if all(codes) else f"empty language code in {codes!r}"


PER_LANGUAGE_KEYS = ("stopwords", "min_lang_score", "rules")


def _calibration_problem(value: str) -> str | None:
    if value in ("", "builtin", "none") or value.endswith(".json"):
        return None
    return (f"expected builtin (the table shipped with Glassbox), none (the published English thresholds "
            f"everywhere) or the path of a FILE.json written by `python -m pipeline.calibrate`, got {value!r}")


def _confusable_problem(groups: list) -> str | None:
    for g in groups:
        if not isinstance(g, list) or len(g) < 2 or not all(isinstance(x, str) and x for x in g):
            return f"each group must be a list of two or more language codes such as [bs, hr, sr], got {g!r}"
    return None


def per_language_problem(per_language: dict, rules: list[dict]) -> str | None:
    """What is wrong with `clean.per_language` (checked against the config's own rules), or None."""
    import math

    reasons = {r["reason"] for r in rules if isinstance(r, dict) and "reason" in r}
    for lang, over in per_language.items():
        where = f"per_language.{lang}"
        if not isinstance(over, dict):
            return f"{where}: expected a mapping with any of {', '.join(PER_LANGUAGE_KEYS)}"
        unknown = sorted(set(over) - set(PER_LANGUAGE_KEYS))
        if unknown:
            return f"{where}.{unknown[0]}: unknown key. Known keys: {', '.join(PER_LANGUAGE_KEYS)}"
        if "stopwords" in over and (not isinstance(over["stopwords"], list)
                                    or not all(isinstance(w, str) and w for w in over["stopwords"])):
            return f"{where}.stopwords: expected a list of words, got {over['stopwords']!r}"
        if "min_lang_score" in over:
            v = over["min_lang_score"]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                return f"{where}.min_lang_score: expected a number in [0, 1], got {v!r}"
        for reason, v in (over.get("rules") or {}).items():
            if reason not in reasons:
                return (f"{where}.rules.{reason}: no rule has this reason; known reasons: "
                        f"{', '.join(sorted(reasons))}")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return f"{where}.rules.{reason}: value must be a finite number, got {v!r}"
    return None


@dataclass
class CleanConfig:
    """Clean-stage settings. `languages=None` admits every language."""
    languages: list[str] | None = setting(default_factory=lambda: ["en"], check=_language_codes)
    # lid.176 probability of the identified language (summed over a group it confuses, see `confusable`);
    # a calibrated language may need less (pipeline/languages.py), never more
    min_lang_score: float = setting(0.65, ge=0, le=1)
    mask_pii: bool = True
    remove_boilerplate_lines: bool = True
    rules: list[dict] = setting(default_factory=lambda: [dict(r) for r in DEFAULT_RULES], check=rules_problem)
    # per-language stop words and thresholds: builtin, none, or a FILE.json from `python -m pipeline.calibrate`
    calibration: str = setting("builtin", check=_calibration_problem)
    # overrides per language: {zh: {stopwords: [...], min_lang_score: 0.3, rules: {gopher_short_words: 1.0}}}
    per_language: dict = setting(default_factory=dict)
    # with every language admitted (languages: null), a document whose language the identifier cannot
    # tell (below its label's threshold; lid.176 knows no Zulu, Xhosa, Shona, Sotho, ...) is kept as
    # `und` and judged by the rules without stop words; false: rejected as lang_low_score
    keep_undetermined: bool = True
    # languages the identifier confuses with each other (null: the calibration table's groups)
    confusable: list[list[str]] | None = setting(None, check=_confusable_problem)

    def check(self) -> str | None:
        return per_language_problem(self.per_language, self.rules)


# --- score ---------------------------------------------------------------------------------------------------

# Relative to where the job runs (the repository root for `make`), like source paths: under
# spark-submit the pipeline is imported from build/pipeline.zip, so __file__ cannot locate them.
DEFAULT_MODELS = "quality_models/default"
BUCKETS = ("head", "middle", "tail")


def _increasing_pair(p: list) -> str | None:
    return None if len(p) == 2 and p[0] < p[1] else f"expected two increasing fractions such as [0.3, 0.6], got {p!r}"


@dataclass
class ScoreConfig:
    fasttext_model: str = f"{DEFAULT_MODELS}/quality_ft.ftz"
    fasttext_languages: list[str] = setting(default_factory=lambda: ["en"])  # what the classifier knows
    kenlm_dir: str = DEFAULT_MODELS                  # holds <lang>.klm and <lang>.sp.model per language
    bucket_percentiles: list[float] = setting(default_factory=lambda: [0.3, 0.6], gt=0, lt=1,
                                              check=_increasing_pair)
    min_quality: float = setting(0.0, ge=0, le=1)    # reject when quality_ft < this (0: never)
    drop_buckets: list[str] = setting(default_factory=list, choices=BUCKETS)  # e.g. [tail]


# --- dedup ---------------------------------------------------------------------------------------------------

MEASURES = ("jaccard", "containment")
NEAR_SCOPES = ("source", "all")
SEMANTIC_SCOPES = ("all", "source")
SEMANTIC_MODELS = ("static", "minilm")


@dataclass
class NearDedupConfig:
    enabled: bool = True
    ngram: int = setting(5, ge=1)                    # shingle size in words
    # ... and in characters for a text written mostly in a script without spaces (Chinese, Japanese,
    # Thai, ...; pipeline/words.py): with 2-character shingles a copy with 3 % of its characters changed
    # stays near a Jaccard of 0.87 (3-grams: 0.80, at the threshold; 5-grams: 0.69), while unrelated
    # pages of one language stay below 0.4 (bench/languages.py)
    char_ngram: int = setting(2, ge=1)
    num_perm: int = setting(112, ge=1)
    bands: int = setting(14, ge=1)
    rows: int = setting(8, ge=1)
    threshold: float = setting(0.8, gt=0, le=1)
    # jaccard: the two texts are nearly the same; containment: the smaller one is (mostly) inside
    # the larger, e.g. a pasted excerpt. Containment pairs have low Jaccard, so LSH needs looser
    # bands (e.g. 56 x 2) to propose them.
    measure: str = setting("jaccard", choices=MEASURES)
    verify: bool = True
    max_bucket: int = setting(1000, ge=2)
    scope: str = setting("source", choices=NEAR_SCOPES)
    seed: int = setting(42, ge=0)

    def check(self) -> str | None:
        if self.bands * self.rows != self.num_perm:
            return (f"num_perm: bands * rows must equal num_perm ({self.bands} * {self.rows} = "
                    f"{self.bands * self.rows}, num_perm = {self.num_perm}): change bands, rows or num_perm")
        if self.measure != "jaccard" and not self.verify:
            return f"verify: measure {self.measure} needs verify: true (LSH alone estimates Jaccard only)"
        return None


@dataclass
class SemanticDedupConfig:
    enabled: bool = False
    eps: float = setting(0.05, gt=0, lt=1)           # remove when cosine similarity to a kept document > 1 - eps
    docs_per_cluster: int = setting(100, ge=1)       # k-means k = max(1, ceil(n / docs_per_cluster))
    max_iter: int = setting(20, ge=1)                # k-means iterations
    batch_size: int = setting(32, ge=1)              # texts per forward pass of the encoder
    max_chars: int = setting(2000, ge=1)             # texts are cut here before tokenizing (the model reads 256 tokens)
    scope: str = setting("all", choices=SEMANTIC_SCOPES)  # duplicates across all sources, or only within one
    seed: int = setting(42, ge=0)                    # k-means seed
    model: str = setting("static", choices=SEMANTIC_MODELS)  # static (distilled from MiniLM, fast) or minilm
    static_dir: str = ""                             # where the static model is cached ("" = ~/.cache/glassbox)

    def check(self) -> str | None:
        if self.static_dir and self.model != "static":
            return (f"static_dir: only the static model is cached there, but model is {self.model!r}: "
                    "remove static_dir or set model: static")
        return None


@dataclass
class DedupConfig:
    exact: bool = True
    shards: int = setting(4, ge=1)   # output files of the final stage; fixed so reruns give the same shards
    # Inputs with less text than this (bytes, from the Parquet footers) are deduplicated in one Spark task
    # by pipeline/dedup/local.py: the same result in seconds instead of dozens of small Spark jobs. That task
    # holds the input and ~8 bytes per word, so keep it well under an executor's memory; 0 = never.
    local_max_bytes: int = setting(64 << 20, ge=0, le=1 << 30,
                                   why="one task holds the whole input: beyond 1 GiB use the distributed path")
    near: NearDedupConfig = field(default_factory=NearDedupConfig)          # MinHash LSH
    semantic: SemanticDedupConfig = field(default_factory=SemanticDedupConfig)  # SemDeDup


# --- decontaminate -------------------------------------------------------------------------------------------

@dataclass
class Benchmark:
    name: str
    paths: list[str]                 # as written in the config
    files: list[str]                 # what they matched, sorted, absolute
    fields: list[str] = field(default_factory=lambda: ["text"])
    id_field: str | None = None      # None: items are named by line number


@dataclass
class DecontamConfig:
    benchmarks: list[Benchmark] = field(default_factory=list)   # built by pipeline/config.py (paths)
    ngram: int = setting(13, ge=1)
    remove: bool = True              # false: report (column `contamination`, stats) but keep
    min_words: int = setting(8, ge=1)  # shorter field texts are skipped, not matched whole


# --- tokenize ------------------------------------------------------------------------------------------------

MODEL_TYPES = ("bpe", "unigram")
RESERVED_PIECES = ("<unk>", "<s>", "<pad>")


def _piece_problem(tok: str) -> str | None:
    return None if tok and not any(c.isspace() for c in tok) else \
        f"a token must be a non-empty string without whitespace, got {tok!r}"


def _pieces_problem(toks: list) -> str | None:
    return next((p for p in map(_piece_problem, toks) if p), None) or \
        (f"listed twice: {toks}" if len(set(toks)) != len(toks) else None)


@dataclass
class TokenizeConfig:
    vocab_size: int = setting(32000, ge=1)
    model_type: str = setting("bpe", choices=MODEL_TYPES)
    byte_fallback: bool = True
    character_coverage: float = setting(0.9995, gt=0, le=1)
    split_digits: bool = True
    eod_token: str = setting("<eod>", check=_piece_problem)
    special_tokens: list[str] = setting(default_factory=lambda: ["<eod>"], check=_pieces_problem)  # never split
    sample_docs: int = setting(200_000, ge=1)          # tokenizer-training sample, spread across sources
    sample_chars: int = setting(100_000_000, ge=1)
    tokenizer: str | None = ""           # an existing sentencepiece model to reuse; "" or null trains one
    shards_per_source: int = setting(4, ge=1)
    seed: int = setting(42, ge=0)
    threads: int = setting(4, ge=1)      # recorded in the model: fixed, so reruns match

    def user_symbols(self) -> list[str]:
        """Special tokens besides the end-of-document one, which is the eos piece already."""
        return [t for t in self.special_tokens if t != self.eod_token]

    def check(self) -> str | None:
        reserved = set(RESERVED_PIECES) & ({self.eod_token} | set(self.special_tokens))
        if reserved:
            return f"special_tokens: {sorted(reserved)} are sentencepiece's own pieces; choose other names"
        floor = len(self.user_symbols()) + 4 + (256 if self.byte_fallback else 0)
        if self.vocab_size <= floor:
            return (f"vocab_size: must exceed {floor} (4 control pieces, the special tokens"
                    f"{', 256 byte pieces' if self.byte_fallback else ''}), got {self.vocab_size}")
        return None
