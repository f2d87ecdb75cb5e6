"""What the capstone's test cells need to judge a learner's script by what it did.

The script is run as a separate process against the lab's cluster (:func:`run_script`), then
judged by its printed result lines (:func:`result_lines`), the Tune experiment folder it left
(:func:`trials`), Ray's own record of the actors it started (:func:`worker_group_sizes`) and its
imports, read from the syntax tree (:func:`imported_modules`), never from the spelling of a line.
"""
from __future__ import annotations

import ast
import json
import os
import sys

from raylab.i18n import _

RESULT_KEYS = ("best_config", "best_checkpoint", "test_accuracy", "tune_results")
ALLOWED_THIRD_PARTY = {"ray", "torch", "numpy"}


def imported_modules(path) -> set[str]:
    """Top-level names of every module the script imports: ``import``, ``from ... import`` and
    ``__import__``/``importlib.import_module`` calls with a literal name, anywhere in the file."""
    with open(path) as f:
        tree = ast.parse(f.read(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if called in ("__import__", "import_module"):
                names.add(node.args[0].value.split(".")[0])
    return names


def disallowed_imports(path) -> list[str]:
    """Imported modules that are neither the standard library nor ray, torch or numpy."""
    return sorted(m for m in imported_modules(path)
                  if m not in ALLOWED_THIRD_PARTY and m not in sys.stdlib_module_names)


def run_script(path, data_dir, storage_dir, *, timeout_s: float, env: dict | None = None):
    """``python <path> <data_dir> <storage_dir>`` connected to this process's Ray cluster
    (``RAY_ADDRESS``), killed with its whole process group after ``timeout_s``."""
    import ray

    from raylab.child_process import run_snippet

    code = ("import runpy, sys\n"
            f"sys.argv = [{str(path)!r}, {str(data_dir)!r}, {str(storage_dir)!r}]\n"
            f"runpy.run_path({str(path)!r}, run_name='__main__')\n")
    child_env = {"RAY_ADDRESS": ray.get_runtime_context().gcs_address,
                 # a report that a rank skips fails the run instead of hanging it
                 "RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "60",
                 # the script is a plain program, not a cell nbgrader executes
                 "NBGRADER_EXECUTION": None}
    child_env.update(env or {})
    return run_snippet(code, timeout_s=timeout_s, env=child_env, cwd=os.path.dirname(os.path.abspath(path)))


def result_lines(stdout: str) -> dict:
    """``{key: value}`` for the lines ``key = value`` whose key is one of :data:`RESULT_KEYS`
    (the last one wins); ``best_config`` is parsed as JSON, ``test_accuracy`` as a float."""
    found = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition("=")
        key = key.strip()
        if sep and key in RESULT_KEYS:
            found[key] = value.strip()
    if "best_config" in found:
        try:
            found["best_config"] = json.loads(found["best_config"])
        except ValueError:
            pass
    if "test_accuracy" in found:
        try:
            found["test_accuracy"] = float(found["test_accuracy"])
        except ValueError:
            pass
    return found


def trials(experiment_dir) -> list[dict]:
    """Every trial folder of a Tune experiment: ``{"name", "config", "rows"}``, where ``rows`` are
    the results Tune recorded (``result.json``, one per report)."""
    out = []
    for name in sorted(os.listdir(experiment_dir)):
        folder = os.path.join(experiment_dir, name)
        params = os.path.join(folder, "params.json")
        if not (os.path.isdir(folder) and os.path.exists(params)):
            continue
        with open(params) as f:
            config = json.load(f)
        rows = []
        result = os.path.join(folder, "result.json")
        if os.path.exists(result):
            with open(result) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        out.append({"name": name, "config": config, "rows": rows})
    return out


def early_stopping_scheduler(experiment_dir) -> str | None:
    """The early-stopping scheduler a Tune experiment was run with, as ``"AsyncHyperBandScheduler
    on val_accuracy"`` (``ASHAScheduler`` is that class); None when it had none (Tune's default
    FIFOScheduler stops nothing) or the experiment's ``tuner.pkl`` cannot be read.

    Whether such a scheduler stops a trial depends on the order the trials run in: ASHA compares
    a trial with those that reached the same epoch before it, so a grid that runs its weakest
    settings first may stop none. A check of "early stopping" reads the configuration too."""
    import ray.cloudpickle
    from ray.tune.schedulers import FIFOScheduler, TrialScheduler

    try:
        with open(os.path.join(experiment_dir, "tuner.pkl"), "rb") as f:
            tune_config = ray.cloudpickle.load(f)["_tune_config"]
    except Exception:  # noqa: BLE001 - no readable Tuner state: nothing to report
        return None
    scheduler = getattr(tune_config, "scheduler", None)
    # every scheduler of Ray's derives from FIFOScheduler; only FIFOScheduler itself stops nothing
    if not isinstance(scheduler, TrialScheduler) or type(scheduler) is FIFOScheduler:
        return None
    metric = getattr(scheduler, "_metric", None) or getattr(tune_config, "metric", None)
    return f"{type(scheduler).__name__} on {metric}"


def actor_ids() -> set[str]:
    """Ids of every actor the cluster has ever had (alive or dead)."""
    import ray

    return set(ray._private.state.actors())


def worker_group_sizes(exclude: set[str] = frozenset()) -> list[int]:
    """For each Ray Train controller not in ``exclude``: how many Train workers it started.

    Read from the cluster's actor table, so it counts what Ray really ran: a worker's owner is
    its run's controller (same address and port)."""
    import ray

    actors = [a for a in ray._private.state.actors().values() if a["ActorID"] not in exclude]

    def where(address):
        return address["IPAddress"], address["Port"]

    sizes = {where(a["Address"]): 0 for a in actors if a["ActorClassName"] == "TrainController"}
    for a in actors:
        owner = where(a["OwnerAddress"])
        if a["ActorClassName"] == "RayTrainWorker" and owner in sizes:
            sizes[owner] += 1
    return sorted(sizes.values())


def shared_parts(records: list[dict], most: float = 0.5) -> list[str]:
    """Pairs of Train workers of one run that trained on the same part of the training split in
    their last whole epoch (``raylab.checks.capstone_probe``'s ``last_rows``, compared between workers
    that made as many reports): more than ``most`` of the smaller part in common. Parts dealt by
    rank (a slice, a ``DistributedSampler``) share nothing, or a padding row; two workers that
    both think they are rank 0 share everything. Workers with no recognised row are skipped."""
    found = []
    by_run: dict = {}
    for record in records:
        if record.get("last_rows"):
            # one worker group: its placement group (two runs may share a name)
            by_run.setdefault((record.get("group") or record.get("run"), record.get("reports")),
                              []).append(record)
    for (run, reports), workers in sorted(by_run.items(), key=lambda kv: str(kv[0])):
        for i, a in enumerate(workers):
            for b in workers[i + 1:]:
                common = len(set(a["last_rows"]) & set(b["last_rows"]))
                if common > most * min(len(a["last_rows"]), len(b["last_rows"])):
                    found.append(_("{run}: ranks {a} and {b} trained on {common} of the same points in "
                                   "epoch {epoch}").format(run=a.get("run"), a=a.get("rank"), b=b.get("rank"),
                                                           common=common, epoch=reports))
    return found
