"""``glassbox VERB ...``: one command line for everything run outside Spark and the training launcher.

Each verb is the ``main`` of the module that does the work (the make targets call the same code); the
module is imported only when its verb runs, so ``glassbox --help`` and ``glassbox config check`` stay fast.
Run directories and model directories are the first positional argument everywhere.
"""
from __future__ import annotations

import importlib
import os
import sys

# verb -> (module whose main(argv) runs it, one line for the help)
VERBS: dict[str, tuple[str, str]] = {
    "config": ("glassbox.config_check", "check a pipeline, trainer or mixture config: glassbox config check FILE"),
    "corpus-report": ("pipeline.report.corpus_report", "one HTML page of what the pipeline kept and dropped: DATA"),
    "diagnose": ("train.record.diagnose", "findings about a run's loss curves (any trainer's logs): RUN"),
    "report": ("train.record.report", "one self-contained HTML page of a run, optionally against another: RUN"),
    "trace": ("train.record.trace", "the documents of one step's batch: RUN --step N"),
    "export": ("train.export.export", "a run's checkpoint as a Hugging Face model (and GGUF files): RUN --out DIR"),
    "merge": ("train.export.merge", "the last K checkpoints of a run averaged into a run folder: RUN --last K --out DIR"),
    "evaluate": ("train.evaluation.evaluate", "held-out perplexity, lm-eval tasks, blind comparison: SUBCOMMAND MODEL"),
    "serve": ("train.serving.serve", "an OpenAI-compatible server for an exported model or a GGUF file: MODEL"),
    "batch": ("train.serving.batch", "resumable batch inference against a server: INPUT.jsonl OUTPUT.jsonl --url"),
    "estimate": ("train.estimate", "memory, layout and speed of a model for training and serving"),
    "ablate": ("ablation.run", "proxy-model ablations of pipeline variants, with verdicts and a report: SPEC.yaml"),
    "mix-search": ("mixsearch.cli", "the mixture by experiment: a proxy swarm, a fitted mixing law, a checked proposal: "
                                    "SPEC.yaml | fit SWARM.jsonl --out DIR | verify SPEC.yaml | report SPEC.yaml"),
    "train-classifier": ("quality_models.train", "a fastText quality classifier and its card from inputs or labels: "
                                                 "--lang L --positives ... --negatives ... --out M.ftz"),
    "annotate": ("quality_models.annotate.run", "grade a stratified sample of documents with a large model into "
                                                "labels: DATA --url URL --n N --out DIR"),
}


def usage() -> str:
    width = max(map(len, VERBS))
    lines = ["usage: glassbox VERB [ARGS...]   (glassbox VERB --help for a verb's arguments)", "", "verbs:"]
    lines += [f"  {verb.ljust(width)}  {text}" for verb, (_, text) in VERBS.items()]
    lines += ["", "Spark stages and training run through make: make clean-dedup | tokenize | mix | pretrain | demo "
                  "(README)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `glassbox diagnose RUN | head`: the reader left; say nothing more, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush must not fail again
        return 141  # 128 + SIGPIPE, what a shell reports for a program killed by it


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    verb, rest = argv[0], argv[1:]
    if verb not in VERBS:
        print(f"glassbox: unknown verb {verb!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(VERBS[verb][0])
    sys.argv = [f"glassbox {verb}", *rest]          # argparse's prog and usage lines name the verb
    status = module.main(rest)
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
