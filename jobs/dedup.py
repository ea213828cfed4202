"""Stage 4: dedup (pipeline/dedup/stage.py): exact, then near, then (when enabled) semantic duplicates of
scored/ into dedup/, every removed document in rejected/stage=dedup with its reason and `duplicate_of`.
Submitted alone it runs through the stage runner, so its state is recorded and the next `make clean-dedup`
does not run it again."""
from __future__ import annotations

from pipeline.dedup.stage import SPEC, takes_local_path  # noqa: F401  (takes_local_path: for the tests)
from pipeline.run.runner import Runner


def run(spark, cfg, data_dir: str, ctx=None):
    """Through the runner, which always runs it (tests, benches, this entry point)."""
    return Runner(spark, cfg, data_dir).run(SPEC, force=True).stats


if __name__ == "__main__":
    from jobs.common import run_alone

    run_alone(SPEC, __doc__)
