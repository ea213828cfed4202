"""One id, one row, end to end (issue 31, item 6): two copies of one WARC under two names and the same file
matched by two patterns of a source. Before: 38 rows in dedup/ with 19 distinct ids, nothing rejected.
Now every stage's output holds each id once and every later copy is accounted as repeated_record."""
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from jobs import clean, dedup, extract, score
from pipeline.config import parse_config
from pipeline.rows import REPEATED_RECORD
from pipeline.run.repeats import later_copies, repeated_ids
from pipeline.run.stats import AccountingError, load_stats

pytestmark = pytest.mark.spark
SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sample" / "dolma-sample-0000.warc.gz"


def _rows(folder: Path, columns: list[str]) -> list[dict]:
    return ds.dataset(str(folder), format="parquet").to_table(columns=columns).to_pylist()


def test_a_record_read_twice_is_one_row_and_later_copies_are_accounted(spark, tmp_path):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    shutil.copy(SAMPLE, crawl / "a.warc.gz")
    shutil.copy(SAMPLE, crawl / "b.warc.gz")
    cfg = parse_config({"sources": {"web": {"format": "warc",
                                            "paths": [str(crawl / "*.warc.gz"), str(crawl / "a.warc.gz")]}},
                        "dedup": {"shards": 2}})
    data = tmp_path / "data"
    for stage in (extract, clean, score, dedup):
        stage.run(spark, cfg, str(data))

    ex = load_stats(str(data), "extract")
    assert ex.extra["inputs_listed_more_than_once"] == {str(crawl / "a.warc.gz"): 2}  # read once, said so
    kept = _rows(data / "extracted", ["id", "input_file"])
    again = [r for r in _rows(data / "rejected" / "stage=extract", ["id", "input_file", "reason", "duplicate_of"])
             if r["reason"] == REPEATED_RECORD]
    assert ex.rejected[REPEATED_RECORD] == len(again) == len(kept) > 0  # every record of b is a later copy
    assert all(r["input_file"].endswith("a.warc.gz") for r in kept)
    assert all(r["input_file"].endswith("b.warc.gz") and r["duplicate_of"] == r["id"] for r in again)
    assert {r["id"] for r in again} == {r["id"] for r in kept}
    # a record the extract stage rejects for its own reason (here not_html) is one row and counted once too
    # (issue 41 item 3: before, each was in rejected/ twice and counted twice)
    dropped = _rows(data / "rejected" / "stage=extract", ["id", "input_file", "reason"])
    own = [r for r in dropped if r["reason"] != REPEATED_RECORD]
    assert own and all(r["input_file"].endswith("a.warc.gz") for r in own)
    assert len({r["id"] for r in dropped}) == len(dropped) == len(again) + len(own)
    assert {k: n for k, n in ex.rejected.items() if k != REPEATED_RECORD} == dict(Counter(r["reason"] for r in own))
    assert ex.extra["read_again_left_out"] == len(own)  # their later copies: neither written nor counted
    assert ex.records_in == len(kept) + len(dropped)
    for folder in ("extracted", "cleaned", "scored", "dedup"):
        ids = [r["id"] for r in _rows(data / folder, ["id"])]
        assert len(ids) == len(set(ids)), folder
    out = _rows(data / "dedup", ["id"])
    print(f"two copies of {SAMPLE.name}: extracted {len(kept)} kept + {len(again)} repeated_record; "
          f"dedup/ {len(out)} rows, {len({r['id'] for r in out})} distinct ids")

    # the Spark forms of the same search and check, for outputs one process should not hold
    from pipeline.run.spark import check_unique_ids_df, later_copies_spark, repeated_ids_spark
    twice = tmp_path / "twice"
    twice.mkdir()
    files = []
    for name in ("p1", "p2"):
        for k, f in enumerate(sorted((data / "extracted").glob("*.parquet"))):
            files.append(str(twice / f"{name}-{k}.parquet"))
            shutil.copy(f, files[-1])
    assert later_copies_spark(spark, files) == later_copies(files) != {}
    from pipeline.run.repeats import read_again
    from pipeline.run.spark import read_again_spark
    units = []  # the same copies with the rows rejected for their own reason: p2's kept rows become
    (tmp_path / "twice-rejected").mkdir()  # repeated_record, p2's rejected rows are left out
    for name in ("p1", "p2"):
        for k, f in enumerate(sorted((data / "extracted").glob("*.parquet"))):
            rej = data / "rejected" / "stage=extract" / f.name
            own = pq.read_table(rej).filter(pc.field("reason") != REPEATED_RECORD) if rej.exists() else None
            copy = tmp_path / "twice-rejected" / f"{name}-{k}.parquet"
            if own is not None and own.num_rows:
                pq.write_table(own, copy)
            units.append((str(twice / f"{name}-{k}.parquet"), str(copy) if copy.exists() else None))
    plan = read_again(units)
    assert plan.repeated and plan.left_out and read_again_spark(spark, units) == plan
    found = repeated_ids_spark(spark, files)
    assert found and all(repeated_ids(files)[i] == n == 2 for i, n in found.items())
    with pytest.raises(AccountingError, match="one id must be one row"):
        check_unique_ids_df("dedup", spark.read.parquet(*files), "planted")
