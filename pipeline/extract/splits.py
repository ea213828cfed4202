"""The extract stage's work units: one per input file, several per big gzipped WARC/WET file.

A big file is cut into equal byte ranges of at most `extract.split_bytes` (equal, so that no small
last range is left over); each range reads the records whose gzip member starts inside it
(pipeline.read.warc), so records stay whole and each range's reader finds its first record with a short
forward scan: no index of the file is built or held anywhere.
"""
from __future__ import annotations

from pipeline.run.units import unit_name

SPLITTABLE = ("warc", "wet")


def plan_extract_units(cfg) -> list[dict]:
    """Units for every input file of the config, biggest first (a big one must not start last)."""
    split = cfg.extract.split_bytes
    units = []
    for name, src in sorted(cfg.sources.items()):
        for f in src.inputs:
            common = {"path": f.path, "source": name, "format": src.format,
                      "text_field": src.text_field, "id_field": src.id_field, "url_field": src.url_field,
                      "engine": src.engine or cfg.extract.engine}
            if src.format in SPLITTABLE and f.path.endswith(".gz") and f.size > split:
                n = -(-f.size // split)  # ranges of equal size, none over `split`
                starts = [i * f.size // n for i in range(n)]
                for i, start in enumerate(starts):
                    end = starts[i + 1] if i + 1 < len(starts) else None
                    units.append({**common, "name": unit_name(name, f.path, start), "start": start,
                                  "end": end, "weight": (end or f.size) - start})
            else:
                units.append({**common, "name": unit_name(name, f.path, 0), "start": 0, "end": None,
                              "weight": f.size})
    units.sort(key=lambda u: (-u["weight"], u["path"], u["start"]))
    return units
