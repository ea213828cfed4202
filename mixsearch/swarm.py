"""The proxy swarm: N mixtures drawn around the natural token shares, one proxy trained on each at one token
budget, each scored in bits per byte on the target domains; one JSONL row per finished proxy.

The draws are a function of the spec alone (``swarm.seed``, ``n``, ``concentration``, the domains' tokens), so a
rerun draws the same mixtures. A row is appended to ``swarm.jsonl`` only when its proxy is trained and scored, under
a lock, whole lines only; a rerun skips every run already in the file (its proxy is never trained again), reuses a
proxy that finished training but was not yet scored, and lets the trainer resume or restart the others
(`ablation/proxy.py`, the same machinery as `glassbox ablate`). ``swarm.json`` beside it fixes what the rows mean
(domains, draws, budget, proxy config, targets' digests): a rerun with another spec under the same name is refused.

A proxy's row holds the weights it trained on: the manifest's final shares (after any repetition cap), not the
draw. With a frozen virtual domain (`mixsearch/reuse.py`) the weights are over {virtual domain, new sources}; the
manifest spreads the virtual domain's share over its members in their frozen proportions.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time

import numpy as np

from mixsearch.manifests import mixture_manifest, search_counts
from mixsearch.rows import SwarmError
from mixsearch.spec import SearchSpec

SWARM_FILE, SWARM_META = "swarm.jsonl", "swarm.json"


def say(msg: str) -> None:
    print(msg, flush=True)


class Domains:
    """The search's domains over a corpus's sources: plain sources, and at most one frozen virtual domain."""

    def __init__(self, spec: SearchSpec, counts: dict):
        self.frozen = spec.frozen
        members = dict(self.frozen["weights"]) if self.frozen else {}
        s = sum(members.values())
        self.members = {k: v / s for k, v in members.items()} if members else {}
        self.names = ([self.frozen["name"]] if self.frozen else []) + [d for d in spec.domains if d not in self.members]
        self.names = sorted(self.names)
        tokens = {d: int(counts["sources"][d]["tokens"]) for d in spec.domains if d not in self.members}
        if self.frozen:
            tokens[self.frozen["name"]] = sum(int(counts["sources"][m]["tokens"]) for m in self.members)
        self.tokens = tokens

    def natural(self) -> np.ndarray:
        t = np.array([self.tokens[d] for d in self.names], float)
        return t / t.sum()

    def expand(self, w: dict[str, float]) -> dict[str, float]:
        """Search weights -> source weights (a virtual domain's share spread over its members)."""
        out = {}
        for d, v in w.items():
            if self.frozen and d == self.frozen["name"]:
                for m, f in self.members.items():
                    out[m] = out.get(m, 0.0) + v * f
            else:
                out[d] = out.get(d, 0.0) + v
        return out

    def collapse(self, source_w: dict[str, float]) -> dict[str, float]:
        out = {d: 0.0 for d in self.names}
        for s, v in source_w.items():
            out[self.frozen["name"] if self.frozen and s in self.members else s] += v
        return out


def draw(spec: SearchSpec, doms: Domains) -> list[np.ndarray]:
    """The swarm's mixtures: Dirichlet(concentration x natural shares), seeded by the spec."""
    rng = np.random.default_rng(spec.swarm.seed)
    alpha = spec.swarm.concentration * doms.natural()
    out = []
    for _ in range(spec.swarm.n):
        w = rng.dirichlet(alpha)
        if spec.swarm.min_share:
            w = np.maximum(w, spec.swarm.min_share)
            w /= w.sum()
        out.append(w)
    return out


def read_done(path: str) -> dict[str, dict]:
    """{run: row} of the swarm file's complete lines (a torn last line, from a kill mid-write, is ignored)."""
    done = {}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and "run" in row:
                    done[row["run"]] = row
    return done


def _append(path: str, row: dict, lock: threading.Lock) -> None:
    line = json.dumps(row, sort_keys=True) + "\n"
    with lock:
        # a torn line left by a kill gets a newline first, so this row starts on its own line
        if os.path.isfile(path) and os.path.getsize(path):
            with open(path, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                torn = fh.read(1) != b"\n"
        else:
            torn = False
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(("\n" if torn else "") + line)
            fh.flush()
            os.fsync(fh.fileno())


class Targets:
    """The target domains' held-out windows under the corpus's tokenizer, their bytes and digests."""

    def __init__(self, spec: SearchSpec, tokenizer: str, seq_len: int):
        from ablation import heldout

        self.windows = {}
        for name, e in spec.targets.items():
            docs = heldout.read_documents(e.paths, e.format, e.text_field)
            self.windows[name] = heldout.windows(docs, tokenizer, seq_len, e.max_tokens)
        self.bytes = heldout.domain_bytes(self.windows, tokenizer)
        self.digests = {k: heldout.domain_digest(w) for k, w in self.windows.items()}

    def score(self, run: str) -> dict[str, float]:
        from ablation import heldout

        _, losses, _ = heldout.proxy_losses(run, self.windows, n_bytes=self.bytes)
        return {k: round(v["bpb"], 6) for k, v in losses.items()}


def plan_of(spec: SearchSpec) -> dict:
    """Steps and tokens of every proxy (ablation's proxy plan: budget / (global batch x seq_len))."""
    from ablation.spec import proxy_plan

    class _P:                      # ablation.spec.proxy_plan reads .proxy and .seeds
        proxy, seeds = spec.proxy, [spec.swarm.seed]

    return proxy_plan(_P)


def meta_of(spec: SearchSpec, doms: Domains, plan: dict, counts: dict, targets: Targets, mixtures) -> dict:
    with open(spec.proxy.config, "rb") as fh:
        cfg_sha = hashlib.sha256(fh.read()).hexdigest()
    from mixsearch.split import record

    return {"domains": doms.names, "frozen": spec.frozen, "tokens": plan["tokens"], "steps": plan["steps"],
            "split": record(spec.split_plans) if spec.split_plans else None,
            "proxy_config_sha256": cfg_sha, "tokenizer_sha256": counts["tokenizer"]["sha256"],
            "targets": targets.digests, "target_bytes": targets.bytes,
            "swarm": {"n": spec.swarm.n, "concentration": spec.swarm.concentration, "seed": spec.swarm.seed,
                      "min_share": spec.swarm.min_share},
            "natural": dict(zip(doms.names, map(float, doms.natural()))),
            "draws": [dict(zip(doms.names, map(float, w))) for w in mixtures]}


def check_meta(path: str, meta: dict) -> None:
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as fh:
        old = json.load(fh)
    for k in ("domains", "frozen", "split", "tokens", "steps", "proxy_config_sha256", "tokenizer_sha256", "targets",
              "swarm"):
        if old.get(k) != meta.get(k):
            raise SwarmError(f"{path}: this swarm was drawn with another {k} ({old.get(k)!r} -> {meta.get(k)!r}); "
                             "its rows would mean something else. Give the spec another name (or out:), or delete "
                             "the folder to start over")


def proxy_env(parallel: int) -> dict:
    env = dict(os.environ)
    if parallel > 1 and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // parallel))
    return env


def train_and_score(jobs: list[dict], spec: SearchSpec, plan: dict, targets: Targets, out: str, swarm_path: str | None,
                    label: str = "proxy") -> dict[str, dict]:
    """Train (or resume, or reuse) each job's proxy, `proxy.parallel` at a time, and score it; a row per job, each
    appended to ``swarm_path`` as soon as it is scored (when given). -> {name: row}."""
    from concurrent.futures import ThreadPoolExecutor

    from ablation import proxy

    parallel = max(1, min(spec.proxy.parallel, len(jobs)))
    env = proxy_env(parallel)
    lock = threading.Lock()
    results: dict[str, dict] = {}

    failed: dict[str, str] = {}

    def one(i: int, job: dict) -> None:
        try:
            got = proxy.train(job["run"], spec.proxy.config, job["manifest"], job["seed"], plan["steps"],
                              plan["world_size"], os.path.join(out, "logs", f"{job['name']}.log"), env)
        except RuntimeError as e:        # the others go on; a rerun trains this one again
            failed[job["name"]] = str(e)
            say(f"{label} {i + 1}/{len(jobs)} {job['name']}: FAILED (its log: "
                f"{os.path.join(out, 'logs', job['name'] + '.log')})")
            return
        losses = targets.score(job["run"])
        row = {"run": job["name"], "weights": job["weights"], "tokens": plan["tokens"], "seed": job["seed"],
               "losses": losses, **job.get("extra", {})}
        if swarm_path:
            _append(swarm_path, row, lock)
        results[job["name"]] = row
        say(f"{label} {i + 1}/{len(jobs)} {job['name']}: {got['status']}"
            + (f" in {got['wall_s']:.0f}s" if got["status"] != "reused" else " (finished earlier)")
            + "; bpb " + ", ".join(f"{k} {v:.4f}" for k, v in losses.items()))

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(lambda ij: one(*ij), enumerate(jobs)))
    if failed:
        first = next(iter(failed.values()))
        raise RuntimeError(f"{len(failed)} of {len(jobs)} proxies failed ({', '.join(sorted(failed))}); the others "
                           f"are done and kept, rerun the same command to train the failed ones again. The first:\n"
                           f"{first}")
    return results


def run_swarm(spec: SearchSpec, only: list[int] | None = None) -> dict:
    """The whole swarm, resumable; -> {"path", "rows", "trained", "skipped", "wall_s"}."""
    t0 = time.time()
    out = spec.out_dir
    counts = search_counts(spec)
    doms = Domains(spec, counts)
    plan = plan_of(spec)
    tokenizer = os.path.join(spec.data, "tokenized", counts["tokenizer"]["path"])
    targets = Targets(spec, tokenizer, plan["seq_len"])
    mixtures = draw(spec, doms)
    os.makedirs(out, exist_ok=True)
    meta = meta_of(spec, doms, plan, counts, targets, mixtures)
    check_meta(os.path.join(out, SWARM_META), meta)
    with open(os.path.join(out, SWARM_META), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1, sort_keys=True)
    swarm_path = os.path.join(out, SWARM_FILE)
    done = read_done(swarm_path)
    if only is not None and any(not 0 <= i < len(mixtures) for i in only):
        raise SwarmError(f"--only {only}: swarm indices run from 0 to {len(mixtures) - 1}")
    jobs = []
    man_dir = os.path.join(out, "manifests")
    for i, w in enumerate(mixtures):
        name = f"p{i:03d}"
        if name in done or (only is not None and i not in only):
            continue
        seed = spec.swarm.seed + i
        source_w = doms.expand(dict(zip(doms.names, map(float, w))))
        manifest = mixture_manifest(spec.data, counts, f"swarm-{name}", source_w, plan["tokens"], plan["seq_len"],
                                    seed, spec.proxy.max_epochs, man_dir)
        with open(manifest, encoding="utf-8") as fh:
            final = {k: float(v["weight"]) for k, v in json.load(fh)["sources"].items()}
        realized = doms.collapse(final)
        jobs.append({"name": name, "seed": seed, "run": os.path.join(out, "proxies", name), "manifest": manifest,
                     "weights": {k: round(v, 8) for k, v in realized.items()},
                     "extra": {"drawn": {k: round(float(v), 8) for k, v in zip(doms.names, w)}}})
    say(f"swarm {spec.name}: {len(mixtures)} mixtures over {', '.join(doms.names)} (Dirichlet concentration "
        f"{spec.swarm.concentration:g} around the natural shares), {plan['tokens']:,} tokens per proxy "
        f"({plan['steps']} steps); {len(done)} in {swarm_path} already, {len(jobs)} to go")
    train_and_score(jobs, spec, plan, targets, out, swarm_path)
    rows = read_done(swarm_path)
    return {"path": swarm_path, "rows": len(rows), "trained": len(jobs), "skipped": len(done),
            "wall_s": round(time.time() - t0, 1)}

