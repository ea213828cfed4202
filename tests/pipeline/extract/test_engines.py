"""Extraction engines: an F1 floor per engine on pages with ground truth (English and Chinese), union rows,
the accounting identity of the extract and clean units with each engine, and config errors."""
import functools
import gzip
import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from conftest import REPO, SHARED_DATA, SHARED_SKIP
from glassbox.schema import ConfigError
from jobs.clean import clean_unit
from jobs.extract import extract_unit
from pipeline.clean.langid import default_model_path
from pipeline.config import parse_config
from pipeline.extract.engines import ENGINES, RESILIPARSE, TRAFILATURA, UNION
from pipeline.extract.evaluation import (aeb_pages, readability_pages, snippet_counts, snippet_f1, token_f1,
                                         trafilatura_pages, zh_pages)
from pipeline.extract.html import ExtractConfig, extract_file, extract_html
from pipeline.extract.splits import plan_extract_units
from pipeline.read.charset import decode_html
from pipeline.run.stats import StageStats
from pipeline.run.units import UnitDirs

EXTRACTION = SHARED_DATA / "extraction"
ZH = REPO / "bench" / "data" / "zh_extraction"
CFG = ExtractConfig()

# Measured by bench/extraction_engines.py (docs/extraction.md); each floor a little under the figure, so a
# release or setting that loses F1 fails here; the pages scored are counted, so a set that loses pages (a loader
# that skips what it cannot read, a moved folder) fails too.
# set -> (loader, root, every n-th page, pages scored, {engine: floor})
SETS = {
    "aeb": (aeb_pages, EXTRACTION / "aeb", 1, 91, {TRAFILATURA: 0.93, RESILIPARSE: 0.89}),       # 0.960, 0.925
    "readability": (readability_pages, EXTRACTION / "readability", 1, 65,
                    {TRAFILATURA: 0.92, RESILIPARSE: 0.90}),                                    # 0.952, 0.939
    "trafilatura": (trafilatura_pages, EXTRACTION / "trafilatura_eval", 5, 99,                  # 495 pages
                    {TRAFILATURA: 0.88, RESILIPARSE: 0.82}),                                    # snippet F1
    "zh": (zh_pages, ZH, 1, 69, {TRAFILATURA: 0.84, RESILIPARSE: 0.85}),                         # 0.876, 0.883
}


@functools.cache
def _pages(name: str) -> list:
    loader, root, every, _, _ = SETS[name]
    if not root.exists():
        pytest.skip(f"{SHARED_SKIP}: {root}")
    pages = list(loader(root))[::every]
    return [(p, decode_html(p.raw, "text/html")[0]) for p in pages]


@pytest.mark.parametrize("engine", [TRAFILATURA, RESILIPARSE])
@pytest.mark.parametrize("name", list(SETS))
def test_f1_floor(name, engine):
    pages = _pages(name)
    texts = [extract_html(html, page.url, CFG, engine) for page, html in pages]
    if pages[0][0].truth is None:
        counts = [snippet_counts(page, text) for (page, _), text in zip(pages, texts)]
        scored = len(counts)
        f1 = snippet_f1(counts)["f1"]
    else:
        scores = [token_f1(page.truth, text) for (page, _), text in zip(pages, texts)]
        scored = len(scores)
        f1 = sum(scores) / scored
    print(f"\n{name} ({scored} pages), {engine}: F1 {f1:.4f}")
    assert scored == SETS[name][3], (name, scored)
    assert f1 >= SETS[name][4][engine]


def test_token_f1_counts_chinese_characters():
    assert token_f1("我们 are here", "我们 are") == pytest.approx(2 * 0.75 * 1 / 1.75)  # 3 of 4 tokens found
    assert token_f1("中文", "文中") == 1.0 and token_f1("", "") == 1.0 and token_f1("a", None) == 0.0


# ---------------------------------------------------------------------------------------------
# union rows

ARTICLE = ("<html><body><article>" + "".join(
    f"<p>Paragraph {i}: the water was calm and the sky was clear, so we walked along the shore for a long "
    f"time and talked about the summer ahead.</p>" for i in range(8)) + "</article></body></html>").encode()
LIST_ONLY = ("<html><body><ul>" + "".join(f"<li>Item number {i} of the list of things to buy</li>"
                                         for i in range(10)) + "</ul></body></html>").encode()
NAV_ONLY = b"<html><body><nav></nav></body></html>"
# A Chinese forum page where trafilatura finds no main text and resiliparse does (bench/data/zh_extraction).
ZH_PAGE = ZH / "html" / "6dc2d508-abb9-467c-bbea-1fedfcec5f9d.html.gz"


def _warc(path: Path, pages: dict[str, bytes]) -> Path:
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for name, body in pages.items():
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(f"http://u.example/{name}", "response",
                                                payload=io.BytesIO(body), http_headers=headers))
    return path


def test_union_rows(tmp_path):
    path = _warc(tmp_path / "u.warc.gz", {"article": ARTICLE, "list": LIST_ONLY, "nav": NAV_ONLY,
                                          "zh": gzip.decompress(ZH_PAGE.read_bytes())})
    rows = {r["url"].rsplit("/", 1)[1]: r for r in extract_file(str(path), "web", "warc", CFG, engine=UNION)}
    a, lst, nav, zh = rows["article"], rows["list"], rows["nav"], rows["zh"]
    # both engines found text: trafilatura's is the row's, resiliparse's rides along
    assert a["status"] == "kept" and a["engine"] == TRAFILATURA and "Paragraph 7" in a["text_alt"]
    assert lst["engine"] == TRAFILATURA and lst["text_alt"] is None        # resiliparse found nothing
    assert zh["status"] == "kept" and zh["engine"] == RESILIPARSE and zh["text_alt"] is None
    assert nav["status"] == "rejected" and nav["reason"] == "no_main_text" and nav["engine"] is None
    assert nav["detail"] == "resiliparse: no_main_text"
    single = {r["url"].rsplit("/", 1)[1]: r for r in extract_file(str(path), "web", "warc", CFG)}
    assert single["zh"]["status"] == "rejected" and single["article"]["text"] == a["text"]
    assert all(r["text_alt"] is None for r in single.values())
    assert {k: r["id"] for k, r in single.items()} == {k: r["id"] for k, r in rows.items()}  # ids: the page's


# ---------------------------------------------------------------------------------------------
# accounting: every record counted by the extract and clean units, whichever engine

SAMPLE_WARCS = sorted((REPO / "examples" / "sample").glob("*.warc.gz"))


@pytest.mark.parametrize("engine", ENGINES)
def test_accounting_identity(tmp_path, engine):
    cfg = parse_config({"sources": {"web": {"format": "warc", "paths": [str(p) for p in SAMPLE_WARCS]}},
                        "extract": {"engine": engine}, "clean": {"languages": None}})
    extracted = UnitDirs(str(tmp_path / "extract")).make()
    markers = [extract_unit(u, extracted, "fp", cfg.extract) for u in plan_extract_units(cfg)]
    cleaned = UnitDirs(str(tmp_path / "clean")).make()
    model = str(default_model_path())
    markers_clean = [clean_unit({"path": p, "name": Path(p).stem}, cleaned, "fp", cfg.clean, model)
                     for p in sorted(str(p) for p in Path(extracted.out).glob("*.parquet"))]
    stats = {}
    for stage, ms in (("extract", markers), ("clean", markers_clean)):
        s = StageStats(stage, sum(m["records_in"] for m in ms), sum(m["records_out"] for m in ms))
        for m in ms:
            for kind in ("rejected", "unreadable"):
                for reason, n in m[kind].items():
                    getattr(s, kind)[reason] = getattr(s, kind).get(reason, 0) + n
        s.check()
        stats[stage] = s
    assert stats["clean"].records_in == stats["extract"].records_out > 0
    kept = pq.read_table(cleaned.out).to_pylist() if stats["clean"].records_out else []
    assert "text_alt" not in pq.read_schema(next(Path(cleaned.out).glob("*.parquet")))
    assert len({r["id"] for r in kept}) == len(kept)  # one document per page
    passed = {r["engines_passed"] for r in kept}
    if engine == UNION:
        assert {r["engine"] for r in kept} <= {TRAFILATURA, RESILIPARSE}
        assert passed <= {"trafilatura", "resiliparse", "trafilatura,resiliparse"}
        assert all(r["engine"] in r["engines_passed"] for r in kept)
    else:
        assert {r["engine"] for r in kept} == passed == {engine}
    print(f"\n{engine}: extract {stats['extract'].records_in} -> {stats['extract'].records_out}, "
          f"clean -> {stats['clean'].records_out}; passed {sorted(passed)}")


# ---------------------------------------------------------------------------------------------
# config

def test_engine_config_errors(tmp_path):
    warc = _warc(tmp_path / "a.warc.gz", {"a": ARTICLE})
    src = {"format": "warc", "paths": [str(warc)]}
    with pytest.raises(ConfigError, match=r"^extract\.engine: must be one of trafilatura, resiliparse, union, "
                                          r"got 'resiliparser'"):
        parse_config({"sources": {"web": src}, "extract": {"engine": "resiliparser"}})
    with pytest.raises(ConfigError, match=r"^sources\.web\.engine: must be one of .*got 'lxml'"):
        parse_config({"sources": {"web": {**src, "engine": "lxml"}}})
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text('{"text": "hello"}\n')
    with pytest.raises(ConfigError, match=r"^sources\.dump\.engine: only warc and wet sources hold HTML"):
        parse_config({"sources": {"dump": {"format": "jsonl", "paths": [str(jsonl)], "engine": "resiliparse"}}})
    cfg = parse_config({"sources": {"web": {**src, "engine": "resiliparse"}, "old": src},
                        "extract": {"engine": "union"}})
    assert {u["source"]: u["engine"] for u in plan_extract_units(cfg)} == {"web": RESILIPARSE, "old": UNION}
