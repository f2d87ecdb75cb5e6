"""``make bench``: the course benchmark. Per lab: seconds, peak memory, and the share of Ray start-up.

Every solution notebook is executed headless (``grader.run_solutions.run_notebook``): in learner
mode (the default) without its hidden tests, as a learner's finished copy runs (nbgrader removes
them from the learner copy); with ``--grading`` with them and ``NBGRADER_EXECUTION`` set, as the
grader runs it. While a lab runs, a thread samples the resident memory of every
process this benchmark started (the kernel and the whole local Ray cluster below it) every 0.2 s.
The result is a markdown table on stdout and a JSON file under ``.scratch/`` (git-ignored).

How the start-up share is measured (also printed under the table):

* **Ray start-up**: the wall time of the cells that start the cluster (``raylab.setup(``,
  ``raylab.start_cluster(`` or ``ray.init(``), from nbclient's per-cell timestamps.
* **Train start-up**: every Ray Train run writes a JSON log (``ray-train-sys-controller-*.log``)
  into the cluster's session folder; the benchmark points ``RAY_TMPDIR`` at a private folder to
  find them. A run's start-up lasts from the controller's first record to its "Started training
  worker group" record (placement group, worker actors, process group, train function launched).
  For the first run inside a cell, the time from the start of the cell to the controller's first
  record is added (the driver building the trainer and launching the controller).
* Overlapping intervals (concurrent Tune trials) are merged before summing, so nothing counts
  twice. **Share** = (Ray start-up + Train start-up) / the lab's wall time, which includes the
  kernel's own start and stop.
* **Process floor** (printed before and after the labs): the wall time to start, all at once, the
  six processes of a 2-worker Train run on the course's cluster (controller, placement-group
  cleaner, synchronization actor, dataset manager, two workers) as bare Python processes importing
  what they import (``grader.bench.startup.floor_seconds``). The machine's speed on the day:
  compare figures only between runs with about the same floor.
* **Where the seconds go** (a second table): each code cell's seconds and the Train runs it
  started (a run belongs to the cell running when its controller wrote its first record), summed
  by kind of cell: ``setup`` (starts the cluster), ``exercise`` (an answer cell or a test cell that
  a learner's Validate runs), ``demo`` (every other code cell); the rest of the wall time is the
  kernel's own start and stop. Under it, the course in **process floors** (total seconds over the
  mean floor): the figure that compares across days on a shared host.
* **Peak memory** is the largest sum of RSS over those processes. Shared pages (the object store
  in /dev/shm, the torch libraries) count once per process, so it is an upper bound.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.authoring.run_solutions import run_notebook
from grader.bench.cells import KINDS, cell_intervals, merged_length, startup_intervals, time_by_kind
from grader.bench.startup import floor_seconds, run_processes
from grader.bench.train_logs import train_runs
from grader.grading import course
from raylab.cluster import env_vars

SCRATCH = course.ROOT / ".scratch"
METHOD = (
    "Method: Ray start-up = wall time of the cells that start the cluster (raylab.setup / ray.init). "
    "Train start-up = per Train run, controller's first log record -> 'Started training worker "
    "group' (from the run's JSON controller log), plus cell start -> controller's first record for "
    "the first run of a cell. Overlaps merged. Share = start-up / lab wall time. Peak memory = "
    "largest sum of RSS of the kernel and every Ray process it started, sampled every 0.2 s "
    "(shared pages counted per process: an upper bound)."
)


@dataclass
class LabBench:
    lab: str
    status: str
    seconds: float
    peak_rss_mib: float
    ray_start_s: float = 0.0
    train_start_s: float = 0.0
    train_runs: int = 0
    startup_s: float = 0.0       # union of the Ray and Train start-up intervals
    slowest_cells: list = field(default_factory=list)
    # seconds and Train runs per kind of cell (time_by_kind): what a shorter lab would have to cut
    by_kind: dict = field(default_factory=dict)

    @property
    def startup_share(self) -> float:
        return self.startup_s / self.seconds if self.seconds else 0.0


# --- memory ------------------------------------------------------------------------------------

class MemorySampler(threading.Thread):
    """Peak of the summed RSS of this process's descendants (kernel + the Ray cluster it starts)."""

    def __init__(self, interval_s: float = 0.2, run_id: str | None = None):
        super().__init__(daemon=True)
        self.interval_s = interval_s
        self.run_id = run_id
        self.peak_bytes = 0
        self.samples = 0
        self._halt = threading.Event()
        self._strays: set[int] = set()

    def _pids(self, tick: int) -> set[int]:
        import psutil

        pids = {p.pid for p in psutil.Process().children(recursive=True)}
        if self.run_id and tick % 10 == 0:  # Ray processes that left our tree (rare; costly to find)
            from raylab.processes import ray_processes

            self._strays = {p["pid"] for p in ray_processes(self.run_id)}
        return pids | self._strays

    def run(self) -> None:
        import psutil

        tick = 0
        while not self._halt.is_set():
            total = 0
            for pid in self._pids(tick):
                try:
                    total += psutil.Process(pid).memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
            self.peak_bytes = max(self.peak_bytes, total)
            self.samples += 1
            tick += 1
            self._halt.wait(self.interval_s)

    def stop(self) -> float:
        """Stop sampling; return the peak in MiB."""
        self._halt.set()
        self.join(timeout=5)
        return self.peak_bytes / 2**20


# --- running -----------------------------------------------------------------------------------

def bench_lab(lab: str, *, grading: bool = False, timeout: int = 600) -> LabBench:
    run_id = f"bench-{uuid.uuid4().hex[:12]}"
    ray_tmp = Path(tempfile.mkdtemp(prefix="rb-", dir="/tmp"))  # short: Ray's socket paths
    workdir = Path(tempfile.mkdtemp(prefix=f"raylab-bench-{lab}-"))
    with env_vars(RAY_TMPDIR=ray_tmp, RAYLAB_RUN_ID=run_id, RAYLAB_SCRATCH=workdir / "scratch"):
        sampler = MemorySampler(run_id=run_id)
        sampler.start()
        try:
            # learner mode: a learner's finished copy has no hidden tests; grading runs them
            status, seconds, nb = run_notebook(course.solution_path(lab), grading=grading,
                                               timeout=timeout, workdir=workdir, hidden_tests=grading)
        finally:
            peak = sampler.stop()
    cells = cell_intervals(nb)
    runs = train_runs(ray_tmp)
    ray_iv, train_iv = startup_intervals(cells, runs)
    slowest = sorted(((end - start, index) for index, start, end, _ in cells), reverse=True)[:3]
    result = LabBench(
        lab=lab, status=status, seconds=round(seconds, 1), peak_rss_mib=round(peak, 0),
        ray_start_s=round(merged_length(ray_iv), 1), train_start_s=round(merged_length(train_iv), 1),
        train_runs=len(runs), startup_s=round(merged_length(ray_iv + train_iv), 1),
        slowest_cells=[{"cell": index, "seconds": round(s, 1)} for s, index in slowest],
        by_kind=time_by_kind(nb, cells, runs))
    shutil.rmtree(ray_tmp, ignore_errors=True)
    shutil.rmtree(workdir, ignore_errors=True)
    return result


def format_table(rows: list[LabBench]) -> str:
    """The benchmark as a markdown table, with a total row."""
    lines = ["| lab | status | seconds | peak memory (MiB) | Ray start-up (s) | Train start-up (s) "
             "| Train runs | start-up share |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.lab} | {r.status} | {r.seconds:.1f} | {r.peak_rss_mib:.0f} | "
                     f"{r.ray_start_s:.1f} | {r.train_start_s:.1f} | {r.train_runs} | "
                     f"{r.startup_share:.0%} |")
    if rows:
        seconds = sum(r.seconds for r in rows)
        startup = sum(r.startup_s for r in rows)
        share = startup / seconds if seconds else 0.0
        lines.append(f"| **total** | {sum(r.status == 'ok' for r in rows)}/{len(rows)} ok | "
                     f"{seconds:.1f} | {max(r.peak_rss_mib for r in rows):.0f} (max) | "
                     f"{sum(r.ray_start_s for r in rows):.1f} | {sum(r.train_start_s for r in rows):.1f} | "
                     f"{sum(r.train_runs for r in rows)} | {share:.0%} |")
    return "\n".join(lines)


def format_kinds(rows: list[LabBench]) -> str:
    """Where each lab's seconds go: the cluster's start, the learner's exercises (answers and the
    visible tests that run them), the course's demonstrations; the rest is the kernel's own start
    and stop. Train runs in parentheses."""
    lines = ["| lab | setup (s) | exercises (s, Train runs) | demos (s, Train runs) | kernel and rest (s) |",
             "|---|---:|---:|---:|---:|"]
    totals = {kind: [0.0, 0] for kind in KINDS}
    rest_total = 0.0
    for r in rows:
        kinds = {kind: r.by_kind.get(kind, {"seconds": 0.0, "train_runs": 0}) for kind in KINDS}
        rest = r.seconds - sum(k["seconds"] for k in kinds.values())
        rest_total += rest
        for kind, k in kinds.items():
            totals[kind][0] += k["seconds"]
            totals[kind][1] += k["train_runs"]
        lines.append(f"| {r.lab} | {kinds['setup']['seconds']:.1f} | {kinds['exercise']['seconds']:.1f} "
                     f"({kinds['exercise']['train_runs']}) | {kinds['demo']['seconds']:.1f} "
                     f"({kinds['demo']['train_runs']}) | {rest:.1f} |")
    if rows:
        lines.append(f"| **total** | {totals['setup'][0]:.1f} | {totals['exercise'][0]:.1f} "
                     f"({totals['exercise'][1]}) | {totals['demo'][0]:.1f} ({totals['demo'][1]}) | "
                     f"{rest_total:.1f} |")
    return "\n".join(lines)


def machine() -> dict:
    import psutil

    try:
        import ray

        ray_version = ray.__version__
    except ImportError:
        ray_version = None
    return {"python": platform.python_version(), "ray": ray_version,
            "cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "platform": platform.platform()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="assignment ids (default: all)")
    parser.add_argument("--grading", action="store_true", help="run as nbgrader does (grading mode)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the JSON (default: .scratch/bench-<time>.json)")
    args = parser.parse_args(argv)
    labs = args.labs or course.labs()
    mode = "grading" if args.grading else "learner"
    info = machine()
    print(f"Benchmark ({mode} mode) on {info['affinity']} CPU(s), {info['memory_gib']} GiB, "
          f"Python {info['python']}, Ray {info['ray']}", flush=True)
    # The same machine is not equally fast every day (a shared host): figures compare only between
    # runs with about the same floor (5 Dec 2026, four of the six processes: 3.7 s at 04:27, 7.0 s at 09:05
    # with graded labs 1.6x slower).
    info["process_floor_s"] = [round(floor_seconds(run_processes(2)), 2)]
    print(f"Process floor (the 6 processes of a 2-worker Train run, started bare, importing what "
          f"they import): {info['process_floor_s'][0]:.2f} s", flush=True)
    rows = []
    for lab in labs:
        row = bench_lab(lab, grading=args.grading)
        rows.append(row)
        print(f"  {lab:<36} {row.status:<10} {row.seconds:>7.1f} s  peak {row.peak_rss_mib:>6.0f} MiB",
              flush=True)
    info["process_floor_s"].append(round(floor_seconds(run_processes(2)), 2))
    print(f"Process floor after the labs: {info['process_floor_s'][1]:.2f} s")
    print()
    print(format_table(rows))
    print()
    print(format_kinds(rows))
    mean_floor = sum(info["process_floor_s"]) / len(info["process_floor_s"])
    total = sum(r.seconds for r in rows)
    # a figure that compares across days: the course in units of the machine's floor that day
    info["course_in_floors"] = round(total / mean_floor, 1)
    print(f"\nThe labs took {total:.1f} s = {info['course_in_floors']} process floors "
          f"(mean floor {mean_floor:.2f} s).")
    print()
    print(METHOD)
    out = args.json or SCRATCH / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"mode": mode, "machine": info, "method": METHOD,
                               "labs": [dict(asdict(r), startup_share=round(r.startup_share, 3))
                                        for r in rows]}, indent=2))
    print(f"\nJSON: {out}")
    return 0 if all(r.status == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
