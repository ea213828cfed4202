"""``glassbox evaluate``: perplexity on held-out data, lm-eval tasks, and a blind side-by-side.

    glassbox evaluate perplexity RUN_OR_EXPORT_DIR [--step N]      -> <dir>/eval/perplexity.json
    glassbox evaluate harness EXPORT_DIR [--tasks glassbox_cloze,glassbox_wikitext] [--limit N]
                                                                           -> <dir>/eval/harness.json
    glassbox evaluate compare EXPORT_A EXPORT_B --out eval/compare.csv   (+ .md sheet, .key.json)
    glassbox evaluate tally eval/compare.csv                        (after people filled in the scores)

Exit status: 0 done, 2 a usage or input error (the message says what to pass), 3 lm-eval is not installed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _write(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str) + "\n")
    tmp.replace(path)


def cmd_perplexity(args) -> int:
    from train.evaluation.heldout import format_table, perplexity

    result = perplexity(args.path, step=args.step, manifest=args.manifest, batch_size=args.batch_size)
    out = Path(args.out) if args.out else Path(args.path) / "eval" / "perplexity.json"
    _write(out, result)
    print(format_table(result))
    print(f"wrote {out}")
    return 0


def cmd_harness(args) -> int:
    from train.evaluation.harness import DEFAULT_TASKS, format_table, run_harness

    tasks = [t.strip() for t in (args.tasks or ",".join(DEFAULT_TASKS)).split(",") if t.strip()]
    result = run_harness(args.path, tasks, num_fewshot=args.num_fewshot, limit=args.limit,
                         batch_size=args.batch_size, device=args.device, seed=args.seed, gen_kwargs=args.gen_kwargs,
                         include_paths=args.include_path, online=args.online, bootstrap_iters=args.bootstrap_iters)
    out = Path(args.out) if args.out else Path(args.path) / "eval" / "harness.json"
    _write(out, result)
    print(format_table(result))
    print(f"wrote {out}")
    return 0


def cmd_compare(args) -> int:
    from train.evaluation.compare import PROMPTS, compare

    files = compare(args.model_a, args.model_b, args.out, prompts_path=args.prompts or PROMPTS,
                    max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p,
                    seed=args.seed, stop=args.stop)
    print(f"blind sheet {files['csv']} and {files['md']}; key (keep from the raters) {files['key']}")
    return 0


def cmd_tally(args) -> int:
    from train.evaluation.compare import tally

    result = tally(args.sheet, args.key)
    print(json.dumps(result, indent=1))
    return 0


def _limit(text: str) -> int | float:
    value = float(text)
    return int(value) if value >= 1 and value.is_integer() else value


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="glassbox evaluate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    pp = sub.add_parser("perplexity", help="per-source perplexity on the run's held-out validation documents")
    pp.add_argument("path", help="run directory (its newest complete checkpoint) or export directory")
    pp.add_argument("--step", type=int, help="checkpoint step (run directories)")
    pp.add_argument("--manifest", help="the run's manifest, when it moved since training")
    pp.add_argument("--batch-size", type=int, default=8)
    pp.add_argument("--out", help="result file (default PATH/eval/perplexity.json)")
    pp.set_defaults(fn=cmd_perplexity)

    ph = sub.add_parser("harness", help="lm-evaluation-harness tasks on an export (HF backend)")
    ph.add_argument("path", help="export directory")
    ph.add_argument("--tasks", help="comma-separated task names (default: glassbox_cloze,glassbox_wikitext; "
                                    "shipped: train/evaluation/tasks/*.yaml)")
    ph.add_argument("--num-fewshot", type=int, default=None)
    ph.add_argument("--limit", type=_limit, default=None, help="items per task (a fraction when < 1)")
    ph.add_argument("--batch-size", type=int, default=4)
    ph.add_argument("--device", default="cpu")
    ph.add_argument("--seed", type=int, default=1234, help="the harness's random, numpy, torch and few-shot seeds")
    ph.add_argument("--gen-kwargs", default=None, help="generation parameters for generate_until tasks, e.g. "
                                                       "'temperature=0,max_gen_toks=64'")
    ph.add_argument("--include-path", action="append", default=[], help="another directory of task YAMLs")
    ph.add_argument("--online", action="store_true", help="allow the harness to download datasets from the hub")
    ph.add_argument("--bootstrap-iters", type=int, default=1000)
    ph.add_argument("--out", help="result file (default PATH/eval/harness.json)")
    ph.set_defaults(fn=cmd_harness)

    pc = sub.add_parser("compare", help="blind side-by-side sheet of two exports' answers")
    pc.add_argument("model_a")
    pc.add_argument("model_b")
    pc.add_argument("--out", required=True, help="sheet path, e.g. eval/compare.csv (.md and .key.json beside)")
    pc.add_argument("--prompts", help="JSONL of {id, category, prompt} (default train/evaluation/prompts.jsonl)")
    pc.add_argument("--max-new-tokens", type=int, default=64)
    pc.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    pc.add_argument("--top-p", type=float, default=1.0)
    pc.add_argument("--seed", type=int, default=0, help="shuffle seed, and the sampling seed base")
    pc.add_argument("--stop", action="append", default=[], help="cut an answer at this string (repeatable)")
    pc.set_defaults(fn=cmd_compare)

    pt = sub.add_parser("tally", help="unblind a filled-in compare sheet")
    pt.add_argument("sheet")
    pt.add_argument("--key", help="key file (default: beside the sheet)")
    pt.set_defaults(fn=cmd_tally)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from train.evaluation.harness import HarnessUnavailable
    from train.evaluation.heldout import EvalError
    from train.export.rundata import RunDataError
    from train.export.weights import ExportError

    try:
        return args.fn(args)
    except HarnessUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except (EvalError, ExportError, RunDataError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
