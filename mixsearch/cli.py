"""`glassbox mix-search`: the verbs of the mixture search.

    glassbox mix-search SPEC.yaml [--check] [--only I,J,...] [--no-verify]
        the swarm (resumable), the fit and proposal, the verification, the report, in mix-searches/<name>/
    glassbox mix-search fit SWARM.jsonl --out DIR [...]      any swarm file (glassbox mix-search fit --help)
    glassbox mix-search verify SPEC.yaml                       proxies on proposal / natural / DoReMi, verdicts
    glassbox mix-search report SPEC.yaml                       the HTML page again
"""
from __future__ import annotations

import argparse
import os
import sys

from glassbox.schema import ConfigError
from mixsearch.rows import SwarmError


def fit_from_spec(spec, out: str | None = None) -> dict:
    """The fit of the spec's own swarm, with the corpus's token counts as the available tokens."""
    from mixsearch.fit import format_proposal, run_fit, write_json
    from mixsearch.manifests import search_counts
    from mixsearch.swarm import SWARM_FILE, Domains, plan_of

    out = out or os.path.join(spec.out_dir, "fit")
    counts = search_counts(spec)
    doms = Domains(spec, counts)
    avail_path = os.path.join(spec.out_dir, "available.json")
    write_json(avail_path, doms.tokens)
    budget = spec.fit.budget or plan_of(spec)["tokens"]
    prop = run_fit(os.path.join(spec.out_dir, SWARM_FILE), out, objective=spec.fit.objective, available=avail_path,
                   budget=budget, max_epochs=spec.fit.max_epochs, min_weight=spec.fit.min_weight, kl=spec.fit.kl,
                   kind=spec.fit.kind, data=spec.data if spec.fit.mix and not spec.frozen else None,
                   mix=spec.fit.mix if not spec.frozen else None, counts=counts if spec.split_plans else None)
    if spec.frozen:                 # the proposal over the corpus's sources: the virtual domain spread over its members
        from mixsearch.fit import next_manifest

        prop["sources"] = {k: round(v, 8) for k, v in sorted(doms.expand(prop["weights"]).items())}
        if spec.fit.mix:
            path, version, again = next_manifest(spec.data, spec.fit.mix, {**prop, "weights": prop["sources"]},
                                                 os.path.join(spec.out_dir, SWARM_FILE),
                                                 {**prop["fit"], "rows": prop["swarm"]["rows"],
                                                  "targets": list(prop["predicted"]), "domains": doms.names},
                                                 counts=counts if spec.split_plans else None)
            prop["manifest"] = {"path": path, "version": version, "already_there": again}
        write_json(os.path.join(out, "proposal.json"), prop)
    print(format_proposal(prop), flush=True)
    return prop


def run_all(path: str, only: list[int] | None, verify: bool, check: bool) -> int:
    from mixsearch.spec import load_spec
    from mixsearch.swarm import run_swarm

    spec = load_spec(path)
    if check:
        print(f"{path}: ok ({spec.swarm.n} proxies over {', '.join(spec.domains)}; targets "
              f"{', '.join(spec.targets)}; output {spec.out_dir})")
        for src, p in spec.split_plans.items():
            r = p["rule"]
            cuts = f"edges {[round(e, 6) for e in r['edges']]}" if r["edges"] is not None else "its values"
            print(f"  split {src} by {r['column']} ({cuts}): " + ", ".join(
                f"{src}@{n} {b['documents']} docs {b['tokens']:,} tokens" for n, b in p["buckets"].items()))
        return 0
    res = run_swarm(spec, only=only)
    print(f"swarm: {res['rows']} rows in {res['path']} ({res['trained']} proxies run now, {res['skipped']} finished "
          f"earlier) in {res['wall_s']:.0f}s", flush=True)
    if only is not None:
        return 0
    fit_from_spec(spec)
    if verify:
        from mixsearch.verify import run_verify

        run_verify(spec)
    from mixsearch.report import write_report

    print(f"report: {write_report(spec)}")
    return 0


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "fit":
        from mixsearch.fit import main as fit_main

        return fit_main(argv[1:])
    ap = argparse.ArgumentParser(prog="glassbox mix-search", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("words", nargs="+", help="SPEC.yaml, or verify SPEC.yaml, or report SPEC.yaml")
    ap.add_argument("--check", action="store_true", help="check the spec and stop")
    ap.add_argument("--only", default=None, help="train only these swarm indices (a Slurm array task), no fit")
    ap.add_argument("--no-verify", action="store_true", help="swarm and fit only")
    args = ap.parse_args(argv)
    try:
        if args.words[0] in ("verify", "report") and len(args.words) == 2:
            from mixsearch.spec import load_spec

            spec = load_spec(args.words[1])
            if args.words[0] == "verify":
                from mixsearch.verify import run_verify

                run_verify(spec)
            from mixsearch.report import write_report

            print(f"report: {write_report(spec)}")
            return 0
        if len(args.words) != 1:
            ap.error("expected SPEC.yaml, fit SWARM.jsonl ..., verify SPEC.yaml or report SPEC.yaml")
        only = [int(x) for x in args.only.split(",")] if args.only else None
        return run_all(args.words[0], only, not args.no_verify, args.check)
    except (ConfigError, SwarmError) as e:
        print(f"glassbox mix-search: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:           # a proxy that failed: its log's tail
        print(f"glassbox mix-search: {e}", file=sys.stderr)
        return 1
