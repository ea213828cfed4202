"""A text dump's url and other fields through the extract stage's work units and the clean stage's batch function
(issue 41 item 2: they came out with `url` null and every other field dropped, so a listed URL went through)."""
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.clean.batches import clean_partition
from pipeline.clean.langid import default_model_path
from pipeline.config import ConfigError, parse_config
from pipeline.extract.batches import EXTRACT_ARROW, extract_batches
from pipeline.extract.splits import plan_extract_units

LISTS = Path(__file__).resolve().parents[3] / "pipeline" / "clean" / "lists" / "urls"
PROSE = ("The river runs through the old town, past the market and the church. On summer evenings people walk "
         "along its banks to watch the boats come in from the coast. The stone bridge was built two hundred years "
         "ago by masons who came from the mountains, and it has survived every flood since then. Children fish from "
         "the steps below the mill while their parents sit at the tables of the small cafe across the square. In "
         "autumn the water rises and turns brown with the soil it carries down from the fields upstream. The town "
         "council has talked for years about a new footpath on the northern side, but nobody agrees on the cost. "
         "Visitors who arrive by train can follow the signs from the station to the harbour in about twenty minutes.")


def _gambling_domain() -> str:
    with gzip.open(LISTS / "gambling_domains.txt.gz", "rt", encoding="utf-8") as fh:
        return next(line.strip() for line in fh if line.strip() and not line.startswith("#"))


def _dumps(tmp_path: Path) -> dict:
    casino = _gambling_domain()
    records = [{"id": "c4-1", "text": PROSE, "url": f"https://{casino}/news/river", "timestamp": "2019-04-25",
                "dump": "CC-MAIN-2019-18"},
               {"id": "c4-2", "text": PROSE.replace("river", "canal"), "url": "https://example.org/canal",
                "timestamp": "2019-04-26", "dump": "CC-MAIN-2019-18"}]
    (tmp_path / "c4.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    pages = [{("page" if k == "url" else k): v for k, v in r.items()} for r in records]  # a url column of another name
    pq.write_table(pa.Table.from_pylist(pages), tmp_path / "fw.parquet")
    return {"sources": {"c4": {"format": "jsonl", "paths": [str(tmp_path / "c4.jsonl")]},
                        "fw": {"format": "parquet", "paths": [str(tmp_path / "fw.parquet")], "url_field": "page"}}}


def _extract(cfg) -> pa.Table:
    return pa.Table.from_batches([b for u in plan_extract_units(cfg) for b in extract_batches(u, cfg.extract)],
                                 schema=EXTRACT_ARROW)


def test_extract_rows_carry_the_url_and_the_other_fields(tmp_path):
    cfg = parse_config(_dumps(tmp_path))
    rows = {(r["source"], r["source_id"]): r for r in _extract(cfg).to_pylist()}
    assert len(rows) == 4 and all(r["status"] == "kept" for r in rows.values())
    for source in ("c4", "fw"):
        assert rows[source, "c4-2"]["url"] == "https://example.org/canal"
        assert json.loads(rows[source, "c4-2"]["metadata"]) == {"timestamp": "2019-04-26", "dump": "CC-MAIN-2019-18"}
    assert rows["fw", "c4-1"]["url"].startswith("https://") and "news/river" in rows["fw", "c4-1"]["url"]


def test_a_listed_url_of_a_dump_is_rejected_by_the_url_rule(tmp_path):
    if not default_model_path().is_file():
        pytest.skip("lid.176.ftz missing: run `make setup`")
    cfg = parse_config(_dumps(tmp_path))
    extracted = _extract(cfg)
    cleaned = clean_partition(cfg.clean, str(default_model_path()), extracted.schema)(extracted.to_batches())
    out = {(r["source"], r["source_id"]): r for b in cleaned for r in b.to_pylist()}
    for source in ("c4", "fw"):
        assert out[source, "c4-1"]["reason"] == "url_gambling", out[source, "c4-1"]
        assert out[source, "c4-2"]["reason"] is None and out[source, "c4-2"]["metadata"]  # the column goes on


@pytest.mark.parametrize("src, needle", [
    ({"format": "jsonl", "url_field": ""}, "sources.d.url_field: expected a field name"),
    ({"format": "warc", "url_field": "link"}, "sources.d.url_field: only jsonl and parquet sources take url_field")])
def test_url_field_is_checked(tmp_path, src, needle):
    (tmp_path / "x.jsonl").write_text('{"text": "x"}\n')
    with pytest.raises(ConfigError, match=needle):
        parse_config({"sources": {"d": {**src, "paths": [str(tmp_path / "x.jsonl")]}}})
