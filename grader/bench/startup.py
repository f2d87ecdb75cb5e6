"""``make bench-startup``: where the seconds of an empty Ray Train ``fit()`` go, next to the floor.

An empty run (every worker reports once and returns) is timed several times on a fresh local
cluster per configuration, each configuration in its own Python process:

* ``plain``: ``ray.init(num_cpus=2)`` with Ray's defaults, as a learner's own script would start it;
* ``course``: the course's cluster (``raylab.start_cluster``: the same 2 CPUs, no dashboard, and
  the ``RAY_TRAIN_*`` settings of ``raylab.cluster.FAST_LOCAL_TRAIN_ENV``);
* ``preload`` (on request): ``course`` plus Ray's ``preload_python_modules`` (PyTorch and Ray
  Train's modules imported by every new worker process before it takes work). Measured on 2 cores
  (4 Dec 2026): 14.2 s against the course's 12.7 s. The import only moves from the "context +
  group" phase into the process start: the controller and every Train worker are new actor
  processes (Ray gives an actor a fresh process, not an idle task worker, even with the same
  runtime environment), and the 2 workers Ray prestarts at ``ray.init`` serve the first run only.

Each run is split into phases from the Train controller's own JSON log (``ray-train-sys-
controller-*.log`` under a private ``RAY_TMPDIR``) and the driver's clock around ``fit()``:

====================  ==========================================================================
controller start      ``fit()`` called -> the controller's first record (driver work, the
                      controller actor's new process and its imports)
scheduling            first record -> "Attempting to start training worker group" (placement-
                      group cleaner launched, resources requested)
worker processes      -> "worker actors created" (new worker processes, Ray and Train imports)
context + group       -> "Train context initialized" (PyTorch import, gloo process group)
launch                -> "Started training worker group" (callbacks, function launched)
training function     -> "Shutting down N workers" (the function and its reports, polled by the
                      controller every health-check interval)
teardown              -> ``fit()`` returns (workers and controller stopped, Result built)
====================  ==========================================================================

**Floor**: per configuration, in the same run, the wall time to start at once the processes its
runs start, as bare Python processes that import the same modules and exit. A Ray Train V2 run
starts one process per actor: the controller, the placement-group cleaner, the synchronization
actor (the report barrier), the dataset manager (created even without datasets), one per worker,
and with Ray's defaults the preemption watcher. The list is read back from the runs' own worker
logs (Ray writes ``:actor_name:`` into each), so a Ray version that starts other processes is
measured as it is, and one whose imports are unknown is an error. A fit within 2x the floor is
the issue's goal; the printed ratio uses the median of the warm runs (the first run of a cluster
also starts Train's state actor and Ray Data's autoscaling coordinator).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from grader.bench.train_logs import controller_records

CONFIGS = ("plain", "course", "preload")
# What the "preload" configuration asks every new Ray worker process to import before it takes
# work (Ray's preload_python_modules system config; its 2 prestarted workers do it at ray.init).
PRELOAD = ["torch", "ray.train.torch", "ray.train.v2._internal.execution.controller.controller",
           "ray.train.v2._internal.execution.worker_group.worker"]
MARKERS = (  # (phase that ends at this record, text of the record)
    ("scheduling", "Attempting to start training worker group"),
    ("worker processes", "worker actors created"),
    ("context + group", "Train context initialized"),
    ("launch", "Started training worker group"),
    ("training function", "Shutting down"),
)
PHASES = ("controller start",) + tuple(name for name, _ in MARKERS) + ("teardown",)
# What each process of a Train run imports before it takes work, by the actor class Ray names in
# its worker log (from ``python -X importtime`` in each process: the controller and the workers
# unpickle the trainer's TorchConfig, hence ray.train.torch.config and so PyTorch).
ACTOR_IMPORTS = {
    "TrainController": "import ray.train.torch.config, ray.train.v2._internal.execution.controller.controller",
    "PlacementGroupCleaner": "import ray.train.v2._internal.execution.controller.placement_group_cleaner",
    "SynchronizationActor": "import ray.train.v2._internal.execution.checkpoint.sync_actor",
    "DatasetManager": "import ray.train.v2._internal.data_integration.dataset_manager",
    "PreemptionWatcher": "import ray.train.v2._internal.execution.preemption",  # Ray's default; off in the course
    "RayTrainWorker": "import ray.train.torch.config, ray.train.v2._internal.execution.worker_group.worker",
}
ACTOR_NAME = re.compile(r"^:actor_name:(\S+)", re.MULTILINE)


def run_processes(workers: int) -> list[str]:
    """The actor processes one ``workers``-worker Train run starts on the course's cluster with
    Ray 2.58.0 (read from the worker logs by :func:`started_actors`; ``make bench-startup`` prints
    what each configuration's runs started and measures its floor from that)."""
    return ["TrainController", "PlacementGroupCleaner", "SynchronizationActor", "DatasetManager"] + \
        ["RayTrainWorker"] * workers


def started_actors(ray_tmp: Path) -> Counter:
    """How many processes of each actor class the clusters under ``ray_tmp`` started (one worker
    log per process; an actor's process writes ``:actor_name:<class>`` there)."""
    found = Counter()
    for log in Path(ray_tmp).glob("**/logs/worker-*.out"):
        names = set(ACTOR_NAME.findall(log.read_text(errors="replace")))
        found.update(names)
    return found


def per_run(started: Counter, runs: int) -> list[str]:
    """The processes each of ``runs`` runs started: classes started at least once per run (a
    cluster-wide actor started by the first run only is not a run's)."""
    return sorted(name for name, count in started.items() if count >= runs
                  for _ in range(count // runs))


# --- the floor -----------------------------------------------------------------------------------

def floor_seconds(processes: list[str], repeats: int = 3) -> float:
    """Median wall time to run, all at once, one bare Python process per process of a Train run
    (``processes``: actor classes, see :func:`run_processes`), each importing what that process
    imports, until the last one exits."""
    unknown = sorted(set(processes) - set(ACTOR_IMPORTS))
    if unknown:
        raise ValueError(f"no floor imports known for {unknown}: add them to ACTOR_IMPORTS")
    snippets = [ACTOR_IMPORTS[name] for name in processes]
    times = []
    for _ in range(repeats):
        start = time.monotonic()
        procs = [subprocess.Popen([sys.executable, "-c", s]) for s in snippets]
        codes = [p.wait() for p in procs]
        if any(codes):
            raise RuntimeError(f"a floor process failed: exit codes {codes}")
        times.append(time.monotonic() - start)
    return statistics.median(times)


# --- one configuration, in its own process -------------------------------------------------------

def _empty_train_fn(config):
    import ray.train

    ray.train.report({"done": 1})


def _child(config: str, runs: int, workers: int) -> dict:
    """Start the configuration's cluster, time ``runs`` empty fits, return driver timestamps."""
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    started = time.time()
    if config in ("course", "preload"):
        import raylab

        extra = {"_system_config": {"preload_python_modules": PRELOAD}} if config == "preload" else {}
        raylab.start_cluster(quiet=True, **extra)
    else:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    cluster_s = time.time() - started
    storage = tempfile.mkdtemp(prefix="bench-startup-")
    fits = []
    try:
        for index in range(runs):
            trainer = TorchTrainer(_empty_train_fn, scaling_config=ScalingConfig(num_workers=workers),
                                   run_config=RunConfig(name=f"empty-{index}", storage_path=storage))
            called = time.time()
            trainer.fit()
            fits.append({"name": f"empty-{index}", "called": called, "returned": time.time()})
    finally:
        ray.shutdown()
        shutil.rmtree(storage, ignore_errors=True)
    return {"config": config, "cluster_s": cluster_s, "fits": fits}


def phases(called: float, returned: float, records: list[tuple[float, str]]) -> dict[str, float]:
    """Seconds per phase of one run (see the module docstring); a phase whose record is missing
    is merged into the next one that is found."""
    out = {name: 0.0 for name in PHASES}
    first = records[0][0]
    out["controller start"] = first - called
    previous = first
    for name, text in MARKERS:
        when = next((t for t, message in records if text in message and t >= previous), None)
        if when is not None:
            out[name] = when - previous
            previous = when
    out["teardown"] = returned - previous
    out["total"] = returned - called
    return {name: round(value, 2) for name, value in out.items()}


def run_config(config: str, runs: int, workers: int) -> dict:
    """Run one configuration in a child process with a private RAY_TMPDIR; its phases per run."""
    ray_tmp = Path(tempfile.mkdtemp(prefix="rbs-", dir="/tmp"))  # short: Ray's socket paths
    env = dict(os.environ, RAY_TMPDIR=str(ray_tmp))
    for key in list(env):  # "plain" must see none of the course's Train settings
        if key.startswith("RAY_TRAIN_"):
            env.pop(key)
    try:
        proc = subprocess.run([sys.executable, "-m", "grader.bench.startup", "--child", config,
                               "--runs", str(runs), "--workers", str(workers)],
                              env=env, capture_output=True, text=True, timeout=600)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"{config}: the child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        child = json.loads(lines[-1])
        records = {run: rows for (_, run), rows in controller_records(ray_tmp).items()}
        child["phases"] = [phases(f["called"], f["returned"], records[f["name"]])
                           for f in child["fits"] if records.get(f["name"])]
        child["processes"] = per_run(started_actors(ray_tmp), runs)
        return child
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def warm_median(rows: list[dict]) -> dict[str, float]:
    """Median per phase over the warm runs (all but a cluster's first)."""
    warm = rows[1:] or rows
    return {name: round(statistics.median(r[name] for r in warm), 2) for name in PHASES + ("total",)}


def _names(processes: list[str]) -> str:
    return ", ".join(f"{c} x {n}" if c > 1 else n for n, c in Counter(processes).items())


def format_report(results: list[dict]) -> str:
    """``results``: one per configuration, with its runs' ``phases``, the ``processes`` one run
    started and the ``floor_s`` of starting those processes bare."""
    names = [r["config"] for r in results]
    medians = {r["config"]: warm_median(r["phases"]) for r in results}
    workers = results[0]["processes"].count("RayTrainWorker")
    lines = [f"Empty {workers}-worker fit(), seconds (median of warm runs)", "",
             "| phase | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for name in PHASES + ("total",):
        lines.append(f"| {name} | " + " | ".join(f"{medians[n][name]:.2f}" for n in names) + " |")
    lines.append("| first run (total) | " + " | ".join(
        f"{r['phases'][0]['total']:.2f}" for r in results) + " |")
    lines.append("| cluster start | " + " | ".join(f"{r['cluster_s']:.2f}" for r in results) + " |")
    lines.append("")
    for r in results:
        lines.append(f"{r['config']}: each run started {len(r['processes'])} processes ({_names(r['processes'])}); "
                     f"floor (the same processes started bare at once, each importing what it imports) "
                     f"{r['floor_s']:.2f} s; a warm run {medians[r['config']]['total']:.2f} s = "
                     f"{medians[r['config']]['total'] / r['floor_s']:.2f}x its floor")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=4, help="fits per configuration (first is cold)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--configs", nargs="+", default=["plain", "course"], choices=CONFIGS,
                        help="preload: the course's cluster with Ray's preload_python_modules (measured: "
                             "no faster, since every Train run starts new worker processes)")
    parser.add_argument("--child", choices=CONFIGS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.runs, args.workers)), flush=True)
        return 0
    results = [run_config(config, args.runs, args.workers) for config in args.configs]
    for r in results:  # each configuration's floor, from the processes its runs started
        r["floor_s"] = floor_seconds(r["processes"], repeats=5)
    print(format_report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
