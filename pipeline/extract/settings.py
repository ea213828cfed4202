"""What the extract stage can be told, checked by the one config checker (glassbox/schema.py) as a
config is read. Stage modules import their settings from here; checking a config imports no
extraction library."""
from __future__ import annotations

from dataclasses import dataclass

from glassbox.schema import setting
from pipeline.extract.engines import ENGINES


@dataclass
class ExtractConfig:
    # Which extractor turns HTML into text (a source's own `engine` key overrides it): trafilatura (precise),
    # resiliparse (8-12x cheaper, a few points less F1), or union (both; the clean stage keeps the first
    # text that passes its rules). Figures in docs/extraction.md.
    engine: str = setting("trafilatura", choices=ENGINES)
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
