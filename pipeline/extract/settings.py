"""What the extract stage can be told, checked by the one config checker (glassbox/schema.py) as a
config is read. Stage modules import their settings from here; checking a config imports no
extraction library."""
from __future__ import annotations

from dataclasses import dataclass

from glassbox.schema import setting


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
