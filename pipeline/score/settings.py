"""What the score stage can be told: its models and the score rules, checked as a config is read."""
from __future__ import annotations

from dataclasses import dataclass

from glassbox.schema import setting


# --- score ---------------------------------------------------------------------------------------------------

# Relative to where the job runs (the repository root for `make`), like source paths: under
# spark-submit the pipeline is imported from build/pipeline.zip, so __file__ cannot locate them.
DEFAULT_MODELS = "quality_models/default"
BUCKETS = ("head", "middle", "tail")


def _increasing_pair(p: list) -> str | None:
    return None if len(p) == 2 and p[0] < p[1] else f"expected two increasing fractions such as [0.3, 0.6], got {p!r}"


@dataclass
class ScoreConfig:
    fasttext_model: str = f"{DEFAULT_MODELS}/quality_ft.ftz"
    fasttext_languages: list[str] = setting(default_factory=lambda: ["en"])  # what the classifier knows
    kenlm_dir: str = DEFAULT_MODELS                  # holds <lang>.klm and <lang>.sp.model per language
    bucket_percentiles: list[float] = setting(default_factory=lambda: [0.3, 0.6], gt=0, lt=1,
                                              check=_increasing_pair)
    min_quality: float = setting(0.0, ge=0, le=1)    # reject when quality_ft < this (0: never)
    drop_buckets: list[str] = setting(default_factory=list, choices=BUCKETS)  # e.g. [tail]
