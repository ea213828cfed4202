"""Pipeline config: load a YAML/JSON file, check every key, and fail before any Spark work starts.

A mistake names the key and the fix (``sources.web.paths: no file matches ...``), because a typo found
after an hour of extraction costs an hour.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.clean import CleanConfig, validate_rules
from pipeline.decontam import Benchmark, DecontamConfig
from pipeline.dedup.near import NearDedupConfig
from pipeline.dedup.semantic import SemanticDedupConfig
from pipeline.extract import ExtractConfig
from pipeline.scoring import ScoreConfig, validate_score_config
from pipeline.storage import InputFile, StorageError, glob_inputs, is_url
from pipeline.tokenize import TokenizeConfig

FORMATS = ("warc", "wet", "jsonl", "parquet", "text")


class ConfigError(ValueError):
    """A config mistake, with the key path and what to do about it."""


@dataclass
class SourceConfig:
    name: str
    format: str
    paths: list[str]          # patterns as written in the config
    files: list[str]          # what the patterns matched, sorted, absolute (or URLs)
    text_field: str = "text"
    id_field: str = "id"
    inputs: list[InputFile] = field(default_factory=list)  # the same files with size and version


@dataclass
class DedupConfig:
    exact: bool = True
    shards: int = 4           # output files of the final stage; fixed so reruns give the same shards
    near: NearDedupConfig = field(default_factory=NearDedupConfig)          # MinHash LSH
    semantic: SemanticDedupConfig = field(default_factory=SemanticDedupConfig)  # SemDeDup


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

    def input_files(self) -> list[tuple[str, str, SourceConfig]]:
        """(path, source name, source config) for every input file, in a stable order."""
        return [(f, name, src) for name, src in sorted(self.sources.items()) for f in src.files]


def _type_name(t: type) -> str:
    return {bool: "a boolean (true/false)", int: "an integer", float: "a number", str: "a string",
            list: "a list"}.get(t, t.__name__)


def _check_scalar(key: str, value: Any, expected: type) -> Any:
    # bool is an int in Python: keep `timeout_s: true` from passing as 1.
    if expected is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if expected in (bool, str, list) and isinstance(value, expected):
        return value
    raise ConfigError(f"{key}: expected {_type_name(expected)}, got {type(value).__name__} {value!r}")


def _build_dataclass(cls, section: str, raw: Any, validators: dict | None = None,
                     nullable: tuple[str, ...] = ()):
    """Fill a config dataclass from a mapping, refusing unknown keys and wrong types.
    Keys in `nullable` also accept null (e.g. `clean.languages: null` keeps every language)."""
    if raw is None:
        return cls()
    if not isinstance(raw, dict):
        raise ConfigError(f"{section}: expected a mapping of settings, got {type(raw).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in raw.items():
        if key not in fields:
            raise ConfigError(f"{section}.{key}: unknown key. Known keys: {', '.join(sorted(fields))}")
        f = fields[key]
        if value is None and key in nullable:
            kwargs[key] = None
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        kwargs[key] = _check_scalar(f"{section}.{key}", value, type(default))
        if validators and key in validators:
            validators[key](f"{section}.{key}", kwargs[key])
    return cls(**kwargs)


def _positive(key: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"{key}: must be > 0, got {value}")


def _languages(key: str, value: list) -> None:
    if not value or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{key}: expected a non-empty list of language codes such as [en], got {value!r}")


def _rules(key: str, value: list) -> None:
    try:
        validate_rules(value)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None


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


def _build_source(name: str, raw: Any, base: Path) -> SourceConfig:
    key = f"sources.{name}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{key}: expected a mapping with 'format' and 'paths', got {type(raw).__name__}")
    known = {"format", "paths", "text_field", "id_field"}
    for k in raw:
        if k not in known:
            raise ConfigError(f"{key}.{k}: unknown key. Known keys: {', '.join(sorted(known))}")
    for k in ("format", "paths"):
        if k not in raw:
            raise ConfigError(f"{key}.{k}: missing. Example: format: warc, paths: [\"crawl/*.warc.gz\"]")
    fmt = raw["format"]
    if fmt not in FORMATS:
        raise ConfigError(f"{key}.format: {fmt!r} is not one of {', '.join(FORMATS)}")
    paths = raw["paths"]
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise ConfigError(f"{key}.paths: expected a non-empty list of file paths or glob patterns, "
                          f"got {raw['paths']!r}")
    for k in ("text_field", "id_field"):
        if k in raw:
            if fmt not in ("jsonl", "parquet"):
                raise ConfigError(f"{key}.{k}: only jsonl and parquet sources take {k}; remove it")
            if not isinstance(raw[k], str) or not raw[k]:
                raise ConfigError(f"{key}.{k}: expected a field name (string), got {raw[k]!r}")
    inputs = sorted({f.path: f for f in _match_inputs(key, paths, base)}.values(), key=lambda f: f.path)
    return SourceConfig(name=name, format=fmt, paths=paths, files=[f.path for f in inputs],
                        text_field=raw.get("text_field", "text"), id_field=raw.get("id_field", "id"),
                        inputs=inputs)


def _build_dedup(raw: Any) -> DedupConfig:
    """The dedup section: flat settings plus the `near:` and `semantic:` sub-sections."""
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"dedup: expected a mapping of settings, got {type(raw).__name__}")
    raw = dict(raw or {})
    subs = {}
    for key, cls in (("near", NearDedupConfig), ("semantic", SemanticDedupConfig)):
        sub = _build_dataclass(cls, f"dedup.{key}", raw.pop(key, None))
        try:
            sub.validate()
        except ValueError as e:
            msg, prefix = str(e), f"dedup.{key}."
            raise ConfigError(msg if msg.startswith(prefix) else prefix + msg) from None
        subs[key] = sub
    return dataclasses.replace(_build_dataclass(DedupConfig, "dedup", raw, {"shards": _positive}), **subs)


def _build_benchmark(i: int, raw: Any, base: Path) -> Benchmark:
    key = f"decontaminate.benchmarks[{i}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{key}: expected a mapping such as {{name: gsm8k, paths: [test.jsonl], "
                          f"fields: [question]}}, got {raw!r}")
    known = {"name", "paths", "fields", "id_field"}
    name = raw.get("name")
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"{key}.name: missing or not letters, digits, '-' or '_' (got {name!r}); "
                          "it prefixes the reported items, e.g. gsm8k:17")
    key = f"decontaminate.benchmarks.{name}"
    for k in raw:
        if k not in known:
            raise ConfigError(f"{key}.{k}: unknown key. Known keys: {', '.join(sorted(known))}")
    paths = raw.get("paths")
    paths = [paths] if isinstance(paths, str) else paths
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise ConfigError(f"{key}.paths: expected a list of JSONL files (plain or .gz), got {raw.get('paths')!r}")
    files = _match_paths(key, paths, base)
    fields = raw.get("fields", ["text"])
    fields = [fields] if isinstance(fields, str) else fields
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) and f for f in fields):
        raise ConfigError(f"{key}.fields: expected a list of field names holding the item's text, got {fields!r}")
    id_field = raw.get("id_field")
    if id_field is not None and (not isinstance(id_field, str) or not id_field):
        raise ConfigError(f"{key}.id_field: expected a field name or null (items named by line number), "
                          f"got {id_field!r}")
    return Benchmark(name=name, paths=paths, files=sorted(set(files)), fields=fields, id_field=id_field)


def _build_decontaminate(raw: Any, base: Path) -> DecontamConfig:
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"decontaminate: expected a mapping of settings, got {type(raw).__name__}")
    raw = dict(raw or {})
    benches_raw = raw.pop("benchmarks", None) or []
    if not isinstance(benches_raw, list):
        raise ConfigError("decontaminate.benchmarks: expected a list of {name, paths, fields, id_field}")
    cfg = _build_dataclass(DecontamConfig, "decontaminate", raw, {"ngram": _positive, "min_words": _positive})
    benches = [_build_benchmark(i, b, base) for i, b in enumerate(benches_raw)]
    names = [b.name for b in benches]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError(f"decontaminate.benchmarks.{n}: the name is used twice; names must be unique")
    cfg.benchmarks = benches
    return cfg


def _build_tokenize(raw: Any, base: Path) -> TokenizeConfig:
    cfg = _build_dataclass(TokenizeConfig, "tokenize", raw, nullable=("tokenizer",))
    cfg.tokenizer = cfg.tokenizer or ""
    try:
        cfg.validate()
    except ValueError as e:
        raise ConfigError(f"tokenize.{e}") from None
    if cfg.tokenizer:
        p = Path(cfg.tokenizer).expanduser()
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            raise ConfigError(f"tokenize.tokenizer: no file at {p}; point it at a sentencepiece .model "
                              "or leave it empty to train one")
        cfg.tokenizer = str(p.resolve())
    return cfg


def parse_config(raw: Any, path: str = "<config>", base: Path | None = None) -> PipelineConfig:
    """Build a PipelineConfig from already-parsed YAML/JSON; relative paths resolve against `base`."""
    base = base or Path.cwd()
    if not isinstance(raw, dict):
        raise ConfigError(f"the file must hold a mapping with at least 'sources', got {type(raw).__name__}")
    known = {"sources", "extract", "clean", "score", "dedup", "decontaminate", "tokenize", "spark"}
    for k in raw:
        if k not in known:
            raise ConfigError(f"{k}: unknown top-level key. Known keys: {', '.join(sorted(known))}")
    sources_raw = raw.get("sources")
    if not isinstance(sources_raw, dict) or not sources_raw:
        raise ConfigError("sources: missing or empty. Example:\n"
                          "sources:\n  web:\n    format: warc\n    paths: [\"crawl/*.warc.gz\"]")
    sources = {}
    for name, src in sources_raw.items():
        if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
            raise ConfigError(f"sources.{name}: a source name must be letters, digits, '-' or '_'")
        sources[name] = _build_source(name, src, base)
    spark_raw = raw.get("spark") or {}
    if not isinstance(spark_raw, dict):
        raise ConfigError(f"spark: expected a mapping of Spark settings, got {type(spark_raw).__name__}")
    for k, v in spark_raw.items():
        if not str(k).startswith("spark."):
            raise ConfigError(f"spark.{k}: Spark settings start with 'spark.' (e.g. spark.sql.shuffle.partitions)")
        if isinstance(v, (dict, list)) or v is None:
            raise ConfigError(f"spark.{k}: expected a single value, got {v!r}")
    score = _build_dataclass(ScoreConfig, "score", raw.get("score"))
    given = raw.get("score") or {}
    for key in ("fasttext_model", "kenlm_dir"):
        # A path the config names is relative to `base`, like source paths; the bundled defaults
        # are relative to where the job runs (the repository root for `make`).
        value = Path(getattr(score, key)).expanduser()
        root = base if key in given else Path.cwd()
        setattr(score, key, str(value if value.is_absolute() else root / value))
    try:
        validate_score_config(score)
    except ValueError as e:
        raise ConfigError(f"score.{e}") from None
    return PipelineConfig(
        path=path,
        score=score,
        sources=sources,
        extract=_build_dataclass(ExtractConfig, "extract", raw.get("extract"),
                                 {"timeout_s": _positive, "max_payload_bytes": _positive,
                                  "split_bytes": _positive}),
        clean=_build_dataclass(CleanConfig, "clean", raw.get("clean"),
                               {"languages": _languages, "rules": _rules}, nullable=("languages",)),
        dedup=_build_dedup(raw.get("dedup")),
        decontaminate=_build_decontaminate(raw.get("decontaminate"), base),
        tokenize=_build_tokenize(raw.get("tokenize"), base),
        spark={str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in spark_raw.items()},
    )


def load_config(path: str | os.PathLike, base: Path | None = None) -> PipelineConfig:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        text = p.read_text(encoding="utf-8")
        raw = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {e}") from None
    try:
        return parse_config(raw, str(p), base)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def main(argv: list[str]) -> int:
    """`python -m pipeline.config CONFIG`: check a config without starting Spark."""
    if len(argv) != 1:
        print("usage: python -m pipeline.config CONFIG", file=sys.stderr)
        return 2
    try:
        cfg = load_config(argv[0])
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    for name, src in sorted(cfg.sources.items()):
        print(f"source {name}: {src.format}, {len(src.files)} file(s)")
    for b in cfg.decontaminate.benchmarks:
        print(f"benchmark {b.name}: {len(b.files)} file(s), fields {', '.join(b.fields)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
