"""`glassbox ablate SPEC.yaml`: every variant's corpus, its proxies at an equal token budget, their held-out
losses, and a verdict per variant and domain against the base. Output in ablations/<name>/:

    corpora/<key>/        one pipeline data folder per distinct variant config (stages shared where unchanged)
    tokenizer.model       the fixed tokenizer (trained once on the base corpus, unless the spec gives one)
    proxies/<variant>-s<seed>/   ordinary run directories (glassbox report | diagnose | trace work on them)
    logs/                 each proxy's trainer output
    evals/                each proxy's held-out losses (recomputed only when its checkpoint or the text changes)
    results.json, report.html

Rerunning the same command continues a killed ablation: finished corpora start no Spark, finished proxies are
reused, an unfinished one is resumed by the trainer from its newest complete checkpoint.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time

from glassbox.schema import ConfigError

from ablation import spec as specs
from ablation import stats


def say(msg: str) -> None:
    print(msg, flush=True)


class Ablation:
    def __init__(self, spec, variants, plan, out: str):
        self.spec, self.variants, self.plan, self.out = spec, variants, plan, out
        self._spark = None
        self.corpora: dict[str, dict] = {}       # key -> record
        self.corpus_of: dict[tuple, str] = {}    # (variant, seed) -> key

    # --- Spark (or, for small corpora, the local executor), started only when a corpus has work --------------
    def spark(self):
        if self._spark is None:
            from pipeline.run.local import LocalSession, choose_executor, master_cores
            from pipeline.run.spark import get_spark

            # Spark's log settings of this repository (conf/log4j2.properties), as the tests use them
            conf = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conf")
            if os.path.isdir(conf):
                os.environ.setdefault("SPARK_CONF_DIR", conf)
            t0 = time.time()
            make_spark = lambda: get_spark(f"glassbox-ablate-{self.spec.name}", self.variants[0].config.spark)  # noqa: E731
            # as `make clean-dedup` chooses: the local processes when every variant's inputs are small
            choices = [choose_executor(v.config) for v in self.variants]
            if all(kind == "local" for kind, _ in choices):
                from pyspark import cloudpickle

                cores = master_cores(os.environ.get("SPARK_MASTER") or "local[*]")
                self._spark = LocalSession(cores, make_spark, cloudpickle.dumps, log=say)
                say(f"executor: local Python processes x{cores}, no JVM ({choices[0][1]})")
            else:
                self._spark = make_spark()
                say(f"spark: session started in {time.time() - t0:.1f}s ({self._spark.sparkContext.master}; "
                    f"{next(why for kind, why in choices if kind == 'spark')})")
        return self._spark

    def stop_spark(self) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None

    # --- corpora -----------------------------------------------------------------------------------------------
    def tokenizer_desc(self) -> dict:
        from glassbox.contracts import sha256_file

        from pipeline.run.runner import fingerprint

        if self.spec.tokenizer.path:
            return {"given": sha256_file(self.spec.tokenizer.path)}
        # trained on the base corpus: a corpus is named by that corpus's config too, so a later spec whose base
        # is another config never reuses shards cut by another tokenizer
        return {"trained_on_base": fingerprint(self.variants[0].raw)}

    def corpora_step(self) -> None:
        from ablation import corpus as corpora

        desc = self.tokenizer_desc()
        tok_path = os.path.join(self.out, "tokenizer.model")
        base = self.variants[0]
        base_raw = specs.load_file(self.spec.base)
        groups: dict[str, list] = {}
        for v in self.variants:
            for seed, cv in specs.corpus_variants(v, base_raw, self.spec.tokenizer.path).items():
                raw = json.loads(json.dumps(cv.raw))
                (raw.get("tokenize") or {}).pop("tokenizer", None)   # the key names the tokenizer by its content
                key = corpora.corpus_key(raw, desc)
                self.corpus_of[(v.name, seed)] = key
                if all(cv is not m for m in groups.setdefault(key, [])):
                    groups[key].append(cv)
        base_key = self.corpus_of[(base.name, base.seeds[0])]
        order = [base_key] + [k for k in groups if k != base_key]
        for key in order:
            members = groups[key]
            cdir = os.path.join(self.out, "corpora", key)
            seeds = sorted({s for (_, s), k in self.corpus_of.items() if k == key})
            record = corpora.read_record(cdir)
            names = ", ".join(v.name for v in members)
            if record and record.get("key") == key and all(os.path.isfile(record["manifests"].get(str(s), ""))
                                                           for s in seeds):   # a moved folder writes them again
                say(f"corpus {key} ({names}): finished earlier with the same config; reused")
            else:
                record = self.build_corpus(key, key == base_key, members, seeds, tok_path)
            if key == base_key and self.spec.tokenizer.path:
                shutil.copy2(self.spec.tokenizer.path, tok_path)
            self.corpora[key] = record
            kept = ", ".join(f"{s} {v['tokens']:,}" for s, v in record["sources"].items())
            say(f"  kept {record['documents']:,} documents, {record['tokens']:,} tokens ({kept})")
        self.stop_spark()
        self.tokenizer = tok_path

    def build_corpus(self, key: str, is_base: bool, members: list, seeds: list[int], tok_path: str) -> dict:
        """One corpus: seeded from the base corpus's stages (unless it is the base), the stages, the manifests."""
        from ablation import corpus as corpora

        cdir = os.path.join(self.out, "corpora", key)
        names = ", ".join(v.name for v in members)
        os.makedirs(cdir, exist_ok=True)
        if is_base:
            say(f"corpus {key} ({names}): building")
        else:
            if not self.spec.tokenizer.path:   # tokenized with the tokenizer trained on the base corpus
                members = [specs.resolve_variant(v.name, specs.VariantSpec(set=v.overrides, seeds=v.seeds,
                                                                           about=v.about),
                                                 specs.load_file(self.spec.base), self.spec.seeds, tok_path)
                           for v in members]
            base_dir = os.path.join(self.out, "corpora", self.corpus_of[(specs.BASE, self.variants[0].seeds[0])])
            offered = corpora.seed_from(base_dir, cdir)
            say(f"corpus {key} ({names}): " + (f"offered the base corpus's finished stages ({', '.join(offered)}); "
                                               "the stage runner keeps the unchanged ones" if offered
                                               else "resuming its own stages"))
        built = corpora.build_corpus(self.spark, members[0], cdir, say)
        if is_base and not self.spec.tokenizer.path:
            shutil.copy2(os.path.join(cdir, "tokenized", "tokenizer.model"), tok_path)
        manifests = corpora.write_manifests(cdir, built["counts"], seeds, self.plan, self.spec.proxy.max_epochs)
        return corpora.finish_record(cdir, key, built, manifests, [v.name for v in members])

    # --- proxies -------------------------------------------------------------------------------------------------
    def proxies_step(self) -> dict:
        """Every proxy trained, resumed or reused; `proxy.parallel` of them at a time."""
        from concurrent.futures import ThreadPoolExecutor

        from ablation import proxy

        jobs = []
        for v in self.variants:
            for seed in v.seeds:
                record = self.corpora[self.corpus_of[(v.name, seed)]]
                name = proxy.run_name(v.name, seed)
                run = os.path.join(self.out, "proxies", name)
                manifest = record["manifests"][str(seed)]
                check_same_manifest(run, manifest)
                jobs.append({"variant": v.name, "seed": seed, "run": run, "manifest": manifest, "name": name})
        parallel = min(self.spec.proxy.parallel, len(jobs))
        env = dict(os.environ)
        if parallel > 1 and "OMP_NUM_THREADS" not in env:
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // parallel))

        def one(i: int, job: dict) -> dict:
            got = proxy.train(job["run"], self.spec.proxy.config, job["manifest"], job["seed"], self.plan["steps"],
                              self.plan["world_size"], os.path.join(self.out, "logs", f"{job['name']}.log"), env)
            say(f"proxy {i + 1}/{len(jobs)} {job['name']}: {got['status']}"
                + (f" in {got['wall_s']:.0f}s" if got["status"] != "reused" else " (finished earlier)"))
            return got

        with ThreadPoolExecutor(max_workers=parallel) as pool:
            results = list(pool.map(lambda ij: one(*ij), enumerate(jobs)))
        return {j["name"]: {k: j[k] for k in ("variant", "seed", "run", "manifest")} | got
                for j, got in zip(jobs, results)}

    # --- evaluation ----------------------------------------------------------------------------------------------
    def evaluate_step(self, runs: dict) -> None:
        from ablation import heldout, proxy

        domains = {}
        for name, e in self.spec.evaluations.items():
            docs = heldout.read_documents(e.paths, e.format, e.text_field)
            domains[name] = heldout.windows(docs, self.tokenizer, self.plan["seq_len"], e.max_tokens)
        digests = {k: heldout.domain_digest(w) for k, w in domains.items()}
        self.eval_tokens = {k: int(w[:, 1:].size) for k, w in domains.items()}
        self.eval_bytes = heldout.domain_bytes(domains, self.tokenizer)
        for name, r in runs.items():
            cache = os.path.join(self.out, "evals", f"{name}.json")
            cached = _read_json(cache)
            step = proxy.finished_step(r["run"])
            if cached and cached.get("step") == step and cached.get("digests") == digests and all(
                    "bpb" in v for v in cached["losses"].values()):
                losses, params = cached["losses"], cached["params"]
            else:
                step, losses, params = heldout.proxy_losses(r["run"], domains, n_bytes=self.eval_bytes)
                os.makedirs(os.path.dirname(cache), exist_ok=True)
                _write_json(cache, {"step": step, "digests": digests, "losses": losses, "params": params})
            self.plan["params"] = params
            r["evals"] = {k: v["loss"] for k, v in losses.items()}
            r["evals_bpb"] = {k: v["bpb"] for k, v in losses.items()}
            rows = proxy.read_metrics(r["run"])
            r["curve"] = thin(proxy.curve(rows))
            r["final_train_loss"] = r["curve"][-1][1] if r["curve"] else None
            r["epochs"] = proxy.epochs(r["manifest"], rows, self.plan["tokens"])

    def harness_step(self, runs: dict) -> None:
        """lm-eval tasks on every proxy when the spec names tasks and the proxy has harness.min_params."""
        from ablation import harness, proxy

        h = self.spec.harness
        if not h.tasks or (self.plan.get("params") or 0) < h.min_params:
            return
        for i, (name, r) in enumerate(runs.items(), 1):
            r["harness"] = harness.proxy_scores(r["run"], proxy.finished_step(r["run"]), h.tasks, h.limit,
                                                os.path.join(self.out, "logs", f"{name}.harness.log"))
            say(f"lm-eval {i}/{len(runs)} {name}: " + ", ".join(f"{k} {v:.4g}" for k, v in r["harness"].items()))

    # --- statistics and output -----------------------------------------------------------------------------------
    def results(self, runs: dict, t0: float) -> dict:
        by_variant = {v.name: [runs[f"{v.name}-s{s}"] for s in v.seeds] for v in self.variants}
        seeds_of = {v.name: v.seeds for v in self.variants}
        evaluations = {}
        for dom in self.spec.evaluations:
            base_vals = [r["evals"][dom] for r in by_variant[specs.BASE]]
            # bits per byte: one tokenizer and the same windows for every proxy, so bpb is the loss times one
            # factor per domain (tokens / (ln 2 x bytes)) and every verdict is the same in either unit
            evaluations[dom] = {"tokens": self.eval_tokens[dom], "bytes": self.eval_bytes[dom],
                                "bpb_per_nat": self.eval_tokens[dom] / (math.log(2) * self.eval_bytes[dom]),
                                "variants": {}}
            for v in self.variants:
                vals = [r["evals"][dom] for r in by_variant[v.name]]
                entry = {"spread": stats.spread(vals).__dict__,
                         "spread_bpb": stats.spread([r["evals_bpb"][dom] for r in by_variant[v.name]]).__dict__}
                if v.name != specs.BASE:
                    entry["vs_base"] = stats.compare(vals, base_vals, v.seeds, self.variants[0].seeds,
                                                     self.spec.confidence).as_dict()
                    if v.seeds == self.variants[0].seeds:
                        entry["pairs"] = [[a, b] for a, b in zip(v.seeds, self.variants[0].seeds)]
                for other in v.against:
                    other_vals = [r["evals"][dom] for r in by_variant[other]]
                    entry.setdefault("vs", {})[other] = stats.compare(vals, other_vals, v.seeds, seeds_of[other],
                                                                      self.spec.confidence).as_dict()
                evaluations[dom]["variants"][v.name] = entry
        variants = {}
        for v in self.variants:
            keys = list(dict.fromkeys(self.corpus_of[(v.name, s)] for s in v.seeds))
            rec = self.corpora[keys[0]]
            variants[v.name] = {
                "overrides": v.overrides, "about": v.about, "seeds": v.seeds, "against": v.against,
                "corpus": keys[0],
                "corpus_dir": os.path.join(self.out, "corpora", keys[0]),
                "kept": kept_of([self.corpora[k] for k in keys]),
                "stages": rec["stages"],
                "proxies": [{**{k: r[k] for k in ("seed", "run", "manifest", "status", "wall_s", "evals", "evals_bpb",
                                                  "final_train_loss", "epochs", "curve")},
                             "harness": r.get("harness")} for r in by_variant[v.name]],
            }
        return {"name": self.spec.name, "spec": self.spec.path, "base_config": self.spec.base,
                "proxy": {"config": self.spec.proxy.config, **self.plan}, "confidence": self.spec.confidence,
                "tokenizer": self.tokenizer, "harness": self.harness_results(by_variant), "variants": variants,
                "evaluations": evaluations, "wall_s": round(time.time() - t0, 1)}

    def harness_results(self, by_variant: dict) -> dict | None:
        """Per task metric, as the held-out evaluations: spread over seeds, paired difference, verdict (higher is
        better except for perplexities and losses); or why the tasks did not run."""
        from ablation.harness import lower_is_better

        h = self.spec.harness
        if not h.tasks:
            return None
        params = self.plan.get("params") or 0
        if params < h.min_params:
            return {"tasks": h.tasks, "ran": False,
                    "why": f"the proxy has {params:,} parameters, below harness.min_params {h.min_params:,}: lm-eval "
                           "tasks are noise at this size; held-out loss per domain is the measure"}
        base = by_variant[specs.BASE]
        metrics = {}
        for key in base[0]["harness"]:
            low = lower_is_better(key.split("/", 1)[1])
            entry = {"lower_is_better": low, "variants": {}}
            base_vals = [r["harness"][key] for r in base]
            for v in self.variants:
                vals = [r["harness"][key] for r in by_variant[v.name]]
                e = {"spread": stats.spread(vals).__dict__}
                if v.name != specs.BASE:
                    e["vs_base"] = stats.compare(vals, base_vals, v.seeds, self.variants[0].seeds,
                                                 self.spec.confidence, low).as_dict()
                entry["variants"][v.name] = e
            metrics[key] = entry
        return {"tasks": h.tasks, "ran": True, "limit": h.limit, "metrics": metrics}


def kept_of(records: list[dict]) -> dict:
    """What a variant kept: its corpus's counts, or, with one corpus per seed (draw_per_seed), their means and each
    seed's."""
    if len(records) == 1:
        return {k: records[0][k] for k in ("documents", "tokens", "sources")}
    mean = lambda xs: round(sum(xs) / len(xs))  # noqa: E731
    sources = sorted({s for r in records for s in r["sources"]})
    return {"documents": mean([r["documents"] for r in records]), "tokens": mean([r["tokens"] for r in records]),
            "sources": {s: {k: mean([r["sources"].get(s, {}).get(k, 0) for r in records])
                            for k in ("documents", "tokens")} for s in sources},
            "per_seed": [{k: r[k] for k in ("documents", "tokens")} for r in records]}


def check_same_manifest(run: str, manifest: str) -> None:
    """A proxy run is reused or resumed only on the manifest it started on (an edited spec is a new ablation)."""
    rec = _read_json(os.path.join(run, "run.json"))
    if not rec:
        return
    want = _read_json(manifest)["content_hash"]
    have = (rec.get("manifest") or {}).get("content_hash")
    if have and have != want:
        raise ConfigError(f"{run} trained on another manifest ({have[:12]}, now {want[:12]}): the spec changed "
                          f"since it ran; remove {os.path.dirname(os.path.dirname(run))} or give the spec another name")


def thin(points: list, keep: int = 300) -> list:
    if len(points) <= keep:
        return points
    step = len(points) / keep
    picked = [points[int(i * step)] for i in range(keep)]
    return picked + ([points[-1]] if picked[-1] is not points[-1] else [])


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def _write_json(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def verdict_table(results: dict, what: str = "held-out loss (nats/token)", row: str = "domain",
                  value: str = "loss") -> str:
    conf = int(round(results["confidence"] * 100))
    dw = max(len(row), *(len(d) for d in results["evaluations"]))
    vw = max(7, *(len(v) for v in results["variants"]),
             *(len(o) + 5 for v in results["variants"].values() for o in v.get("against") or []))
    lines = [f"{what}, mean ± sd over seeds; difference from base with its {conf}% t-interval "
             "(paired on shared seeds, else Welch):",
             f"  {row:<{dw}}  {'variant':<{vw}}  {value:>26}  {'diff':>8}  {'interval':>20}  verdict"]
    for dom, e in results["evaluations"].items():
        for name, v in e["variants"].items():
            s = v["spread"]
            loss = f"{s['mean']:.4f} ± {s['std']:.4f}"
            if "spread_bpb" in v:                  # the mean in bits per byte, the figure that compares across domains
                loss = f"{v['spread_bpb']['mean']:.3f} bpb  {loss}"
            if "vs_base" in v:
                p = v["vs_base"]
                interval = "[{:+.4f}, {:+.4f}]".format(p["low"], p["high"])
                lines.append(f"  {dom:<{dw}}  {name:<{vw}}  {loss:>26}  {p['diff']:>+8.4f}  {interval:>20}  "
                             f"{p['verdict']}")
            else:
                lines.append(f"  {dom:<{dw}}  {name:<{vw}}  {loss:>26}  {'':>8}  {'':>20}  (base)")
            for other, p in (v.get("vs") or {}).items():
                interval = "[{:+.4f}, {:+.4f}]".format(p["low"], p["high"])
                lines.append(f"  {'':<{dw}}  {'  vs ' + other:<{vw}}  {'':>26}  {p['diff']:>+8.4f}  {interval:>20}  "
                             f"{p['verdict']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="glassbox ablate", description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="the ablation spec (examples/ablate/demo.yaml)")
    ap.add_argument("--out", default=None, help="output folder (default: the spec's out, else ablations/<name>)")
    ap.add_argument("--check", action="store_true", help="check the spec and every variant's config, run nothing")
    ap.add_argument("--seed-offset", type=int, default=0, metavar="N",
                    help="add N to every seed (base, variants, null control): the same spec again on other seeds, "
                         "to see whether its verdicts hold (output in <out>-seeds+N)")
    a = ap.parse_args(argv)
    t0 = time.time()
    try:
        spec, variants, plan = specs.check(a.spec)
    except ConfigError as e:
        print(f"ablate error: {e}", file=sys.stderr)
        return 2
    out = a.out or spec.out or os.path.join("ablations", spec.name)
    if a.seed_offset:
        if a.seed_offset < 0:
            print("ablate error: --seed-offset must be positive (seeds are non-negative)", file=sys.stderr)
            return 2
        spec.seeds = [s + a.seed_offset for s in spec.seeds]
        for v in variants:
            v.seeds = [s + a.seed_offset for s in v.seeds]
        out = a.out or f"{out}-seeds+{a.seed_offset}"
    seeds = sum(len(v.seeds) for v in variants)
    say(f"ablation {spec.name}: base + {len(variants) - 1} variant(s), {seeds} proxies of {plan['tokens']:,} tokens "
        f"({plan['steps']} steps of {plan['global_batch_size']} x {plan['seq_len']}); output in {out}")
    if a.check:
        for v in variants:
            say(f"  {v.name}: seeds {v.seeds}" + (f", set {v.overrides}" if v.overrides else ""))
        say("spec ok")
        return 0
    os.makedirs(out, exist_ok=True)
    job = Ablation(spec, variants, plan, out)
    try:
        job.corpora_step()
        runs = job.proxies_step()
    except ConfigError as e:
        print(f"ablate error: {e}", file=sys.stderr)
        return 2
    job.evaluate_step(runs)
    job.harness_step(runs)
    results = job.results(runs, t0)
    _write_json(os.path.join(out, "results.json"), results)
    from ablation.report import write_report

    page = write_report(results, os.path.join(out, "report.html"))
    say(verdict_table(results))
    h = results["harness"]
    if h and h["ran"]:
        say(verdict_table({"confidence": results["confidence"], "variants": results["variants"],
                           "evaluations": h["metrics"]}, "lm-eval scores (higher is better but for perplexities)",
                          "task/metric", "score"))
    elif h:
        say(f"lm-eval tasks {', '.join(h['tasks'])}: not run; {h['why']}")
    say(f"ablation {spec.name}: done in {time.time() - t0:.0f}s; {os.path.join(out, 'results.json')}, {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
