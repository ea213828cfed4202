"""lm-evaluation-harness tasks on an exported model, with everything that shaped the scores written beside them.

Runs ``lm_eval.simple_evaluate`` with the Hugging Face backend (``model="hf"``, fp32, CPU unless ``--device``)
on tasks found in train/evaluation/tasks/ (offline, shipped with the repo) and in any ``--include-path``. The
result file (``<export>/eval/harness.json`` by default) holds the scores and stderr per task, and: harness
name and version, task names and versions, num_fewshot per task, limit, batch size, the generation parameters
(the command's ``--gen-kwargs`` and each task's ``generation_kwargs``), every seed, the model directory with
the run and step it was exported from, and the time taken.

Offline by default: ``HF_HUB_OFFLINE=1`` and ``HF_DATASETS_OFFLINE=1`` are set, so a task whose data is on
the hub fails at once instead of waiting on the network. With the hub reachable, ``--online --tasks
hellaswag,arc_easy`` runs the harness's own tasks (their datasets are downloaded to the ``datasets`` cache).

lm-eval is an optional dependency: ``pip install -e '.[eval]'`` (``lm-eval[hf]==0.4.13``; it keeps torch
and transformers as installed).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import yaml

TASKS_DIR = Path(__file__).resolve().parent / "tasks"
DEFAULT_TASKS = ("glassbox_cloze", "glassbox_wikitext")
INSTALL = "pip install -e '.[eval]'   (installs lm-eval[hf]==0.4.13)"


class HarnessUnavailable(RuntimeError):
    pass


def import_lm_eval():
    try:
        import lm_eval
        from lm_eval.tasks import TaskManager
    except ImportError as e:
        raise HarnessUnavailable(f"the harness subcommand needs the lm-eval package (lm-evaluation-harness), "
                                 f"which is not importable ({e}); install it with: {INSTALL}") from None
    try:
        import accelerate  # noqa: F401  (the harness's hf backend imports it)
    except ImportError:
        raise HarnessUnavailable("lm-eval's hf backend needs the accelerate package; install it with: "
                                 f"{INSTALL}") from None
    return lm_eval, TaskManager


def local_tasks(dest: Path) -> Path:
    """train/evaluation/tasks/*.yaml copied to ``dest`` with relative ``data_files`` made absolute (the datasets json
    loader resolves them against the working directory, not the YAML)."""
    dest.mkdir(parents=True, exist_ok=True)
    for src in sorted(TASKS_DIR.glob("*.yaml")):
        cfg = yaml.safe_load(src.read_text())
        files = (cfg.get("dataset_kwargs") or {}).get("data_files")
        if isinstance(files, dict):
            cfg["dataset_kwargs"]["data_files"] = {
                split: str((src.parent / f).resolve()) if not os.path.isabs(f) else f for split, f in files.items()}
        (dest / src.name).write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return dest


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=str))


def run_harness(export_dir, tasks, *, num_fewshot=None, limit=None, batch_size=4, device="cpu", seed=1234,
                gen_kwargs=None, include_paths=(), online=False, bootstrap_iters=1000) -> dict:
    export_dir = Path(export_dir).resolve()
    if not (export_dir / "config.json").is_file():
        raise ValueError(f"{export_dir}: not a model directory (no config.json); export a run first "
                         "(glassbox export RUN_DIR)")
    if not online:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
    lm_eval, TaskManager = import_lm_eval()
    tmp = Path(tempfile.mkdtemp(prefix="glassbox-tasks-"))
    t0 = time.perf_counter()
    try:
        manager = TaskManager(include_path=[str(local_tasks(tmp / "tasks"))] + [str(p) for p in include_paths])
        unknown = [t for t in tasks if t not in manager.all_tasks]
        if unknown:
            local = sorted(p.stem for p in TASKS_DIR.glob("*.yaml"))
            raise ValueError(f"unknown task(s) {unknown}; shipped offline tasks: {', '.join(local)}"
                             + ("" if online else "; the harness's own tasks need --online (the hub)"))
        out = lm_eval.simple_evaluate(
            model="hf", model_args=f"pretrained={export_dir},dtype=float32", tasks=list(tasks),
            num_fewshot=num_fewshot, limit=limit, batch_size=batch_size, device=device, gen_kwargs=gen_kwargs,
            task_manager=manager, random_seed=seed, numpy_random_seed=seed, torch_random_seed=seed,
            fewshot_random_seed=seed, bootstrap_iters=bootstrap_iters, log_samples=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    configs = out.get("configs") or {}
    record = {}
    rec_path = export_dir / "glassbox_export.json"
    if rec_path.is_file():
        rec = json.loads(rec_path.read_text())
        record = {"run_dir": rec.get("run_dir"), "step": rec.get("step"), "layout": rec.get("layout")}
    return _jsonable({
        "harness": {"package": "lm-eval", "version": getattr(lm_eval, "__version__", None)},
        "model_dir": str(export_dir), "exported_from": record, "backend": "hf", "dtype": "float32",
        "device": device, "tasks": list(tasks), "num_fewshot": num_fewshot, "n_shot": out.get("n-shot"),
        "limit": limit, "batch_size": batch_size,
        "generation": {"gen_kwargs": gen_kwargs,
                       "per_task": {t: c.get("generation_kwargs") for t, c in configs.items()
                                    if c.get("output_type") == "generate_until"}},
        "seeds": {"random": seed, "numpy": seed, "torch": seed, "fewshot": seed},
        "bootstrap_iters": bootstrap_iters,
        "results": out.get("results"), "versions": out.get("versions"), "n_samples": out.get("n-samples"),
        "task_configs": {t: {k: c.get(k) for k in ("output_type", "dataset_path", "dataset_kwargs", "test_split",
                                                   "metric_list", "generation_kwargs", "num_fewshot")}
                         for t, c in configs.items()},
        "seconds": time.perf_counter() - t0, "time": time.time(),
    })


def format_table(result: dict) -> str:
    rows = [f"lm-eval {result['harness']['version']} on {result['model_dir']} (limit {result['limit']}, "
            f"seed {result['seeds']['random']})"]
    for task, metrics in (result.get("results") or {}).items():
        vals = [f"{k.removesuffix(',none')} " + (f"{v:.4g}" if isinstance(v, (int, float)) else str(v))
                for k, v in metrics.items() if k not in ("alias", "name", "sample_len") and "stderr" not in k]
        rows.append(f"  {task}: " + ", ".join(vals))
    return "\n".join(rows)
