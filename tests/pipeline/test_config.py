import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.config import ConfigError, load_config, parse_config

REPO = Path(__file__).resolve().parents[2]


def _sources(tmp_path, **extra):
    (tmp_path / "a.warc.gz").write_bytes(b"")
    src = {"format": "warc", "paths": ["*.warc.gz"], **extra}
    return {"sources": {"web": src}}


def test_minimal_config_resolves_files(tmp_path):
    cfg = parse_config(_sources(tmp_path), base=tmp_path)
    assert [Path(f).name for f in cfg.sources["web"].files] == ["a.warc.gz"]
    assert cfg.extract.timeout_s > 0 and cfg.dedup.exact


def test_bundled_sample_config_is_valid():
    cfg = load_config(REPO / "examples" / "sample.yaml", base=REPO)
    assert set(cfg.sources) == {"web", "cc", "books", "zh"}
    assert all(src.files for src in cfg.sources.values())


@pytest.mark.parametrize("raw, key", [
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "extrat": {}}, "extrat"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"], "pths": 1}}}, "sources.web.pths"),
    ({"sources": {"web": {"format": "html", "paths": ["*.warc.gz"]}}}, "sources.web.format"),
    ({"sources": {"web": {"format": "warc", "paths": ["nothing/*.warc"]}}}, "sources.web.paths"),
    ({"sources": {"web": {"format": "warc", "paths": 3}}}, "sources.web.paths"),
    ({"sources": {"web": {"format": "warc"}}}, "sources.web.paths"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"], "text_field": "body"}}},
     "sources.web.text_field"),
    ({"sources": {}}, "sources"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "extract": {"timeout_s": "10"}},
     "extract.timeout_s"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "extract": {"timeout_s": -1}},
     "extract.timeout_s"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "clean": {"languages": "en"}},
     "clean.languages"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "clean": {"min_lang_score": True}},
     "clean.min_lang_score"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}},
      "clean": {"rules": [{"signal": "no_such_signal", "op": "<", "value": 1, "reason": "x"}]}}, "clean.rules"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "dedup": {"exact": "yes"}}, "dedup.exact"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "score": {"drop_buckets": ["worst"]}},
     "score.drop_buckets"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "score": {"bucket_percentiles": [0.6, 0.3]}},
     "score.bucket_percentiles"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}},
      "score": {"classifiers": [{"model": "nope.ftz", "languages": ["en"]}]}}, "score.classifiers[0].model"),
    ({"sources": {"web": {"format": "warc", "paths": ["*.warc.gz"]}}, "spark": {"executor.memory": "2g"}},
     "spark.executor.memory"),
])
def test_bad_config_names_the_key(tmp_path, raw, key):
    (tmp_path / "a.warc.gz").write_bytes(b"")
    with pytest.raises(ConfigError) as err:
        parse_config(raw, base=tmp_path)
    assert str(err.value).startswith((key + ":", key + "[")) or f" {key}:" in str(err.value), str(err.value)


def test_json_config_and_bad_yaml(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    good = tmp_path / "c.json"
    good.write_text(json.dumps({"sources": {"d": {"format": "jsonl", "paths": [str(tmp_path / "*.jsonl")]}}}))
    assert load_config(good).sources["d"].format == "jsonl"
    bad = tmp_path / "c.yaml"
    bad.write_text("sources: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_cli_fails_fast_with_the_key(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("sources:\n  web:\n    format: warc\n    paths: ['missing/*.warc.gz']\n")
    proc = subprocess.run([sys.executable, "-m", "glassbox.cli", "config", "check", str(cfg)], capture_output=True,
                          text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert "sources.web.paths: no file matches" in proc.stderr


def test_null_languages_keeps_every_language(tmp_path):
    raw = _sources(tmp_path)
    raw["clean"] = {"languages": None, "min_lang_score": 0.5}
    cfg = parse_config(raw, base=tmp_path)
    assert cfg.clean.languages is None and cfg.clean.min_lang_score == 0.5
