"""Argument handling shared by the job entry points: check the config before Spark starts."""
from __future__ import annotations

import argparse
import os
import sys

from pipeline.config import ConfigError, PipelineConfig, load_config


def parse_args(description: str, argv: list[str] | None = None) -> tuple[PipelineConfig, str]:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--config", required=True, help="pipeline YAML/JSON (sources, extract, clean, dedup)")
    ap.add_argument("--data", required=True, help="output folder (extracted/, cleaned/, dedup/, rejected/, stats/)")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        sys.exit(2)
    return cfg, os.path.abspath(args.data)
