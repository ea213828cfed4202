"""Real Chinese documents through the clean stage with the built-in table: the reference prose the
calibration did not read (the held-out half, by parent work) and real web pages through the pipeline's
extraction. A small version of bench/chinese_prose.py. Plain Python, about 8 s."""
import collections
import gzip
import json

import pytest

from conftest import FIXTURES, shared
from pipeline.clean.langid import default_model_path, get_identifier
from pipeline.clean.reference_docs import prose_documents
from pipeline.clean.settings import CleanConfig
from pipeline.clean.stage import clean_batch
from pipeline.extract.html import extract_html
from pipeline.extract.settings import ExtractConfig
from pipeline.read.charset import decode_html

CLASSICAL = "literature_classical"  # not what the zh row is calibrated on (docs/chinese.md): not measured here


@pytest.fixture(scope="module")
def identifier():
    if not default_model_path().is_file():
        pytest.skip("lid.176.ftz missing: run `make setup`")
    return get_identifier()


def kept_by_kind(lang: str, identifier) -> dict[str, tuple[int, int, collections.Counter]]:
    out = {}
    for kind, docs in prose_documents(shared("prose"), lang, "held_out").items():
        if kind == CLASSICAL:
            continue
        rows = clean_batch([d["text"] for d in docs], identifier, CleanConfig(languages=[lang]))
        reasons = collections.Counter(r["reason"] for r in rows)
        out[kind] = (reasons.pop(None, 0), len(rows), reasons)
    return out


def test_held_out_prose_is_in_no_calibration_half(monkeypatch):
    """What these tests (and bench/chinese_prose.py, bench/zh_lists.py) call held out was read by no calibration:
    neither the language table's (pipeline/clean/calibrate.py) nor the safety thresholds'
    (pipeline/clean/safety_calibrate.py); both split by reference_docs.half_of."""
    from pipeline.clean import calibrate, safety_calibrate

    prose = shared("prose")
    monkeypatch.setattr(calibrate, "prepared", lambda docs, cfg: docs)    # the texts as read, not as cleaned
    safety = {lang: {i for _, i, _ in items}
              for lang, items in safety_calibrate.prose_docs(prose, "calibration").items()}
    for lang in ("zh", "en"):
        held = [d for docs in prose_documents(prose, lang, "held_out").values() for d in docs]
        table = {t for texts in calibrate.prose_kinds(prose, lang, CleanConfig(languages=None)).values() for t in texts}
        assert len(held) > 400
        assert [d["id"] for d in held if d["text"] in table] == [], lang
        read = [d["id"] for d in held if d["id"] in safety[lang]]
        assert read == [], f"{lang}: {len(read)} of {len(held)} held-out documents are in the safety calibration half"


def test_held_out_chinese_prose_is_kept(identifier):
    """Every modern kind >= 80 %, all of them >= 90 % (was 54 %: laws 9 %, science 51 %)."""
    modern = kept_by_kind("zh", identifier)
    assert set(modern) == {"encyclopedic", "howto", "legal", "science", "technical", "textbook"}
    for kind, (kept, n, reasons) in modern.items():
        assert kept >= 0.8 * n, (kind, kept, n, reasons)
    assert sum(k for k, _, _ in modern.values()) >= 0.9 * sum(n for _, n, _ in modern.values())


def test_held_out_english_prose_keeps_the_published_rules(identifier):
    got = kept_by_kind("en", identifier)
    assert sum(k for k, _, _ in got.values()) >= 0.94 * sum(n for _, n, _ in got.values())
    reasons = sum((rs for _, _, rs in got.values()), collections.Counter())
    # the published rules drop a few repetitive pages; the content-safety lists may cost at most 1 % of the prose
    assert {r for r in reasons if not r.startswith("safety_")} <= {"gopher_dup_5gram", "gopher_dup_10gram"}
    assert sum(n for r, n in reasons.items() if r.startswith("safety_")) <= 0.01 * sum(n for _, n, _ in got.values())


def test_chinese_web_pages_are_kept_and_lose_their_chrome(identifier):
    """Six real pages (tests/fixtures/zh_web: news, government, science popularisation, forum, a poem
    page), HTML through the pipeline's extraction, then the clean stage: all kept, share and editor lines off."""
    pages = json.loads((FIXTURES / "zh_web" / "pages.json").read_text(encoding="utf-8"))
    texts = []
    for p in pages:
        raw = gzip.decompress((FIXTURES / "zh_web" / p["file"]).read_bytes())
        html, _ = decode_html(raw, None)
        texts.append(extract_html(html, p["url"], ExtractConfig()))
    rows = clean_batch(texts, identifier, CleanConfig(languages=["zh"]))
    assert [(p["file"], r["reason"]) for p, r in zip(pages, rows)] == [(p["file"], None) for p in pages]
    gmw = rows[[p["file"] for p in pages].index("gmw-news.html.gz")]
    assert gmw["lines_removed"] >= 3 and "朋友圈" not in gmw["text"] and "新华社北京5月19日电" in gmw["text"]
