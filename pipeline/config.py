"""Pipeline config: load a YAML/JSON file, check every key, and fail before any Spark work starts.

A mistake names the key and the fix (``sources.web.paths: no file matches ...``), because a typo found
after an hour of extraction costs an hour.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glassbox.schema import ConfigError, build, load_file, setting, unknown_key
from pipeline.clean.settings import CleanConfig
from pipeline.dedup.settings import DedupConfig
from pipeline.extract.engines import ENGINES
from pipeline.extract.settings import ExtractConfig
from pipeline.models import ClassifierError, ModelError
from pipeline.score.classifiers import check_classifier
from pipeline.score.settings import ScoreConfig
from pipeline.tokenize.settings import Benchmark, DecontamConfig, TokenizeConfig
from pipeline.read.storage import InputFile, StorageError, glob_inputs, is_url

__all__ = ["ConfigError", "PipelineConfig", "SourceConfig", "load_config", "parse_config"]

FORMATS = ("warc", "wet", "jsonl", "parquet", "text")


@dataclass
class SourceConfig:
    name: str
    format: str
    paths: list[str]          # patterns as written in the config
    files: list[str]          # what the patterns matched, sorted, absolute (or URLs)
    text_field: str = "text"
    id_field: str = "id"
    url_field: str = "url"
    inputs: list[InputFile] = field(default_factory=list)  # the same files with size and version
    # files matched by more than one pattern (overlapping globs, a path given twice): read once
    listed_more_than_once: dict[str, int] = field(default_factory=dict)
    engine: str | None = None  # this source's HTML extractor; None: extract.engine


@dataclass
class PipelineConfig:
    path: str
    sources: dict[str, SourceConfig]
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    clean: CleanConfig = field(default_factory=CleanConfig)
    score: ScoreConfig = field(default_factory=ScoreConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    decontaminate: DecontamConfig = field(default_factory=DecontamConfig)
    tokenize: TokenizeConfig = field(default_factory=TokenizeConfig)
    spark: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """What `glassbox config check` says of a pipeline config that holds: a line, then its sources and
        benchmarks."""
        files = sum(len(s.files) for s in self.sources.values())
        return "\n".join([f"{self.path}: pipeline config ok ({len(self.sources)} sources, {files} input files)"]
                         + [f"source {name}: {src.format}, {len(src.files)} file(s)"
                            for name, src in sorted(self.sources.items())]
                         + [f"benchmark {b.name}: {len(b.files)} file(s), fields {', '.join(b.fields)}"
                            for b in self.decontaminate.benchmarks])


def _match_inputs(key: str, patterns: list[str], base: Path) -> list[InputFile]:
    """Every file the patterns match (local globs, or object-store URLs listed through fsspec);
    a pattern that matches nothing, or a store that cannot be listed, is a config error."""
    files: list[InputFile] = []
    for pattern in patterns:
        try:
            matched = glob_inputs(pattern, base)
        except StorageError as e:
            raise ConfigError(f"{key}.paths: {e}") from None
        if not matched:
            shown = pattern if is_url(pattern) or Path(pattern).is_absolute() else str(base / pattern)
            raise ConfigError(f"{key}.paths: no file matches {pattern!r} (looked for {shown}); "
                              "fix the pattern or run from the directory it is relative to")
        files.extend(matched)
    return files


def _match_paths(key: str, patterns: list[str], base: Path) -> list[str]:
    return [f.path for f in _match_inputs(key, patterns, base)]


def _name_problem(name: str) -> str | None:
    return None if name and name.replace("_", "").replace("-", "").isalnum() else \
        f"{name!r} is not letters, digits, '-' or '_'"


def _one_or_more(v: Any) -> Any:
    """A single path or field name may be written without the list."""
    return [v] if isinstance(v, str) else v


def _non_empty(items: list) -> str | None:
    return None if items and all(items) else f"expected a non-empty list of non-empty strings, got {items!r}"


@dataclass
class SourceSpec:
    """One entry of ``sources:`` as written."""
    format: str = setting("", choices=FORMATS)
    paths: list[str] = setting(default_factory=list, check=_non_empty)   # files or glob patterns, local or URLs
    text_field: str | None = None     # jsonl/parquet: which field holds the text (default text)
    id_field: str | None = None       # ... and which the record's own id (default id), kept as source_id
    url_field: str | None = None      # ... and which its URL (default url); the other fields go to `metadata`
    engine: str | None = setting(None, choices=ENGINES)  # warc/wet: this source's extractor (default extract.engine)


@dataclass
class BenchmarkSpec:
    """One entry of ``decontaminate.benchmarks:`` as written."""
    name: str = setting("", check=_name_problem)      # prefixes the reported items, e.g. gsm8k:17
    paths: list[str] = setting(default_factory=list, check=_non_empty)   # JSONL files, plain or .gz
    fields: list[str] = setting(default_factory=lambda: ["text"], check=_non_empty)  # the item's text
    id_field: str | None = None       # null: items are named by line number


def _build_source(name: str, raw: Any, base: Path) -> SourceConfig:
    key = f"sources.{name}"
    if isinstance(raw, dict):
        for k in ("format", "paths"):
            if k not in raw:
                raise ConfigError(f"{key}.{k}: missing. Example: format: warc, paths: [\"crawl/*.warc.gz\"]")
        raw = {**raw, "paths": _one_or_more(raw["paths"])}
    spec = build(SourceSpec, raw, key)
    for k in ("text_field", "id_field", "url_field"):
        value = getattr(spec, k)
        if value is not None and spec.format not in ("jsonl", "parquet"):
            raise ConfigError(f"{key}.{k}: only jsonl and parquet sources take {k}; remove it")
        if value == "":
            raise ConfigError(f"{key}.{k}: expected a field name, got an empty string")
    if spec.engine is not None and spec.format not in ("warc", "wet"):
        raise ConfigError(f"{key}.engine: only warc and wet sources hold HTML to extract; remove it "
                          f"(a {spec.format} source's text is read as it is)")
    matched = _match_inputs(key, spec.paths, base)
    inputs = sorted({f.path: f for f in matched}.values(), key=lambda f: f.path)
    times = Counter(f.path for f in matched)
    return SourceConfig(name=name, format=spec.format, paths=spec.paths, files=[f.path for f in inputs],
                        text_field=spec.text_field or "text", id_field=spec.id_field or "id",
                        url_field=spec.url_field or "url", inputs=inputs,
                        listed_more_than_once={p: n for p, n in sorted(times.items()) if n > 1},
                        engine=spec.engine)


def _build_benchmark(i: int, raw: Any, base: Path) -> Benchmark:
    if not isinstance(raw, dict):
        raise ConfigError(f"decontaminate.benchmarks[{i}]: expected a mapping such as {{name: gsm8k, paths: "
                          f"[test.jsonl], fields: [question]}}, got {raw!r}")
    name = raw.get("name")
    if not isinstance(name, str) or _name_problem(name):
        raise ConfigError(f"decontaminate.benchmarks[{i}].name: missing or not letters, digits, '-' or '_' "
                          f"(got {name!r}); it prefixes the reported items, e.g. gsm8k:17")
    key = f"decontaminate.benchmarks.{name}"
    raw = {**raw, **{k: _one_or_more(raw[k]) for k in ("paths", "fields") if k in raw}}
    spec = build(BenchmarkSpec, raw, key)
    if not spec.paths:
        raise ConfigError(f"{key}.paths: missing; list the benchmark's JSONL files")
    if spec.id_field == "":
        raise ConfigError(f"{key}.id_field: expected a field name or null (items named by line number)")
    files = _match_paths(key, spec.paths, base)
    return Benchmark(name=spec.name, paths=spec.paths, files=sorted(set(files)), fields=spec.fields,
                     id_field=spec.id_field)


def _build_decontaminate(raw: Any, base: Path) -> DecontamConfig:
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"decontaminate: expected a mapping of settings, got {type(raw).__name__}")
    raw = dict(raw or {})
    benches_raw = raw.pop("benchmarks", None) or []
    if not isinstance(benches_raw, list):
        raise ConfigError("decontaminate.benchmarks: expected a list of {name, paths, fields, id_field}")
    cfg = build(DecontamConfig, raw, "decontaminate")
    cfg.benchmarks = [_build_benchmark(i, b, base) for i, b in enumerate(benches_raw)]
    names = [b.name for b in cfg.benchmarks]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError(f"decontaminate.benchmarks.{n}: the name is used twice; names must be unique")
    return cfg


def _resolve(base: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else base / p


def _build_tokenize(raw: Any, base: Path) -> TokenizeConfig:
    cfg = build(TokenizeConfig, raw, "tokenize")
    cfg.tokenizer = cfg.tokenizer or ""
    if cfg.tokenizer:
        p = _resolve(base, cfg.tokenizer)
        if not p.is_file():
            raise ConfigError(f"tokenize.tokenizer: no file at {p}; point it at a sentencepiece .model "
                              "or leave it empty to train one")
        cfg.tokenizer = str(p.resolve())
    return cfg


LEGACY_SCORE_KEYS = ("fasttext_model", "fasttext_languages")


def _build_score(raw: Any, base: Path) -> ScoreConfig:
    given = raw if isinstance(raw, dict) else {}
    for key in LEGACY_SCORE_KEYS:
        if key in given:
            raise ConfigError(f"score.{key}: replaced by score.classifiers, one entry per model: classifiers: "
                              "[{model: MODEL.ftz, languages: [en], column: quality_en}] (docs/quality.md)")
    for i, entry in enumerate(given.get("classifiers") or []):
        if isinstance(entry, dict) and "model" not in entry:
            raise ConfigError(f"score.classifiers[{i}].model: missing; name a fastText quality model, e.g. "
                              "{model: quality_models/default/quality_en.ftz, languages: [en]}")
    score = build(ScoreConfig, raw, "score")
    # A path the config names is relative to `base`, like source paths; the bundled defaults are relative to
    # where the job runs (the repository root for `make`).
    score.kenlm_dir = str(_resolve(base if "kenlm_dir" in given else Path.cwd(), score.kenlm_dir))
    for i, c in enumerate(score.classifiers):
        c.model = str(_resolve(base if "classifiers" in given else Path.cwd(), c.model))
        if not Path(c.model).exists():
            raise ConfigError(f"score.classifiers[{i}].model: {c.model} not found; run `make quality-models` or "
                              "train one with `glassbox train-classifier` (docs/quality.md)")
        try:
            check_classifier(c)
        except ClassifierError as e:
            raise ConfigError(f"score.classifiers[{i}].{e.key}: {e}") from None
        except ModelError as e:
            raise ConfigError(f"score.classifiers[{i}].model: {e}") from None
    return score


def _build_spark(raw: Any) -> dict[str, str]:
    raw = raw or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"spark: expected a mapping of Spark settings, got {type(raw).__name__}")
    for k, v in raw.items():
        if not str(k).startswith("spark."):
            raise ConfigError(f"spark.{k}: Spark settings start with 'spark.' (e.g. spark.sql.shuffle.partitions)")
        if isinstance(v, (dict, list)) or v is None:
            raise ConfigError(f"spark.{k}: expected a single value, got {v!r}")
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in raw.items()}


SECTIONS = ("sources", "extract", "clean", "score", "dedup", "decontaminate", "tokenize", "spark")


def _build_dedup(raw: Any, base: Path) -> DedupConfig:
    """The dedup settings; every corpus of `against` is found and its index checked now (present, whole,
    made with these settings), so a wrong one is a config error before Spark starts."""
    cfg = build(DedupConfig, raw, "dedup")
    if not cfg.against:
        return cfg
    from pipeline.dedup.index import IndexRefused, key_settings, open_index, resolve  # numpy, pyarrow: only then

    cfg.against = [resolve(entry, base) for entry in cfg.against]
    want = key_settings(cfg)
    for i, where in enumerate(cfg.against):
        if cfg.against.index(where) != i:
            raise ConfigError(f"dedup.against[{i}]: {where} is listed twice; list each corpus once")
        try:
            open_index(where, want)
        except IndexRefused as e:
            raise ConfigError(f"dedup.against[{i}]: {e}") from None
    return cfg


def _build_clean(raw: Any, base: Path) -> CleanConfig:
    """The clean settings; a calibration table given as a file must exist and be one (read now, so a
    mistake is a config error before Spark starts). Its path becomes absolute, as source paths do."""
    cfg = build(CleanConfig, raw, "clean")
    if cfg.calibration.endswith(".json"):
        table = Path(cfg.calibration)
        table = table if table.is_absolute() else base / table
        try:
            from pipeline.clean.languages import load_table
            load_table(str(table))
        except (OSError, ValueError) as e:
            raise ConfigError(f"clean.calibration: {e}; write one with `python -m pipeline.clean.calibrate --reference DIR "
                              f"--out {cfg.calibration}` or use builtin") from None
        cfg.calibration = str(table)
    from pipeline.clean.lists_step import check_lists       # every list file read now, not in an executor
    problem = check_lists(cfg, base)
    if problem:
        raise ConfigError(f"clean.{problem}")
    return cfg


def parse_config(raw: Any, path: str = "<config>", base: Path | None = None) -> PipelineConfig:
    """Build a PipelineConfig from already-parsed YAML/JSON; relative paths resolve against `base`."""
    base = base or Path.cwd()
    if not isinstance(raw, dict):
        raise ConfigError(f"the file must hold a mapping with at least 'sources', got {type(raw).__name__}")
    for k in raw:
        if k not in SECTIONS:
            raise ConfigError(unknown_key(str(k), k, list(SECTIONS)).replace("unknown key", "unknown top-level key"))
    sources_raw = raw.get("sources")
    if not isinstance(sources_raw, dict) or not sources_raw:
        raise ConfigError("sources: missing or empty. Example:\n"
                          "sources:\n  web:\n    format: warc\n    paths: [\"crawl/*.warc.gz\"]")
    for name in sources_raw:
        if not isinstance(name, str) or _name_problem(name):
            raise ConfigError(f"sources.{name}: a source name must be letters, digits, '-' or '_'")
    return PipelineConfig(
        path=path,
        # the settings first: a typo in dedup is reported before any object store is listed
        extract=build(ExtractConfig, raw.get("extract"), "extract"),
        clean=_build_clean(raw.get("clean"), base),
        dedup=_build_dedup(raw.get("dedup"), base),
        tokenize=_build_tokenize(raw.get("tokenize"), base),
        spark=_build_spark(raw.get("spark")),
        sources={name: _build_source(name, src, base) for name, src in sources_raw.items()},
        score=_build_score(raw.get("score"), base),
        decontaminate=_build_decontaminate(raw.get("decontaminate"), base),
    )


def load_spark_settings(path: str | os.PathLike) -> dict[str, str]:
    """Only the ``spark:`` section of a pipeline config (jobs that read no sources, e.g. the mix)."""
    raw = load_file(path)
    try:
        return _build_spark(raw.get("spark") if isinstance(raw, dict) else None)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def load_config(path: str | os.PathLike, base: Path | None = None) -> PipelineConfig:
    raw = load_file(path)
    try:
        return parse_config(raw, str(path), base)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


if __name__ == "__main__":  # the one checker of every kind of config is glassbox/config_check.py
    raise SystemExit("python -m pipeline.config is gone: run `glassbox config check FILE` (any kind of config)")
