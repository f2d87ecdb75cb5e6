"""What one learner's lab costs the machine, measured the way the hub limits it: in a control group.

``.venv/bin/python -m grader.workshop.sizing 07_train_tune_integration 09_capstone``
(as root, on cgroup v1 with the memory, cpuacct and pids hierarchies, like the reference machine;
run it through ``flock /tmp/team/heavy.lock``). Each lab's solution notebook runs headless
(``grader.run_solutions.run_notebook``, learner mode) in a child process that first joins a fresh
group, so the kernel, its Ray cluster and every process they start are inside. Reported per lab:

- ``peak_cgroup_mib``: ``memory.max_usage_in_bytes``, what the kernel charged the group at its
  peak (each page once: resident memory, page cache and the ``/dev/shm`` object store): the
  figure a per-learner memory limit must leave room for;
- ``peak_rss_sum_mib``: the largest sum of RSS of the group's processes (sampled every 0.2 s),
  what ``make bench`` reports (shared pages count once per process: an upper bound);
- ``cpu_s`` (``cpuacct.usage``) and ``cpu_s / wall_s``: how many cores the lab keeps busy;
- ``peak_tasks`` (``pids.peak`` or sampled ``pids.current``) and ``peak_processes``: what a task
  limit must leave room for; ``max_vms_gib``: the largest virtual size of one process (why the
  hub uses no RLIMIT_AS).
Results go to stdout as JSON lines and to ``.scratch/workshop-sizing-<time>.json``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from grader.grading import course

CG = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "cpuacct", "pids")
CHILD = r"""
import json, os, sys
for path in sys.argv[2:]:
    with open(path, "w") as handle:
        handle.write(str(os.getpid()))
from grader.authoring.run_solutions import run_notebook
from grader.grading import course
status, seconds, _ = run_notebook(course.solution_path(sys.argv[1]), grading=False)
print("RESULT " + json.dumps({"status": status, "seconds": seconds}), flush=True)
"""


def _own(ctl: str) -> str:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if ctl in controllers.split(","):
            return path
    raise RuntimeError(f"no cgroup v1 {ctl} hierarchy")


def measure(lab: str) -> dict:
    import psutil

    name = f"raylab-sizing-{uuid.uuid4().hex[:8]}"
    folders = {ctl: CG / ctl / _own(ctl).lstrip("/") / name for ctl in CONTROLLERS}
    for folder in folders.values():
        folder.mkdir()
    peak = {"rss": 0, "tasks": 0, "procs": 0, "vms": 0}
    done = threading.Event()

    def sample():
        while not done.wait(0.2):
            pids = [int(p) for p in (folders["memory"] / "cgroup.procs").read_text().split()]
            rss = vms = 0
            for pid in pids:
                try:
                    info = psutil.Process(pid).memory_info()
                    rss, vms = rss + info.rss, max(vms, info.vms)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            tasks = int((folders["pids"] / "pids.current").read_text())
            peak.update(rss=max(peak["rss"], rss), tasks=max(peak["tasks"], tasks),
                        procs=max(peak["procs"], len(pids)), vms=max(peak["vms"], vms))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, lab,
                               *[str(f / "cgroup.procs") for f in folders.values()]],
                              cwd=course.ROOT,
                              capture_output=True, text=True, timeout=900)
        wall = time.monotonic() - start
        done.set()
        thread.join()
        result = next((json.loads(line[7:]) for line in proc.stdout.splitlines()
                       if line.startswith("RESULT ")), {"status": f"failed: {proc.stderr[-300:]}"})
        pids_peak = folders["pids"] / "pids.peak"
        tasks = max(peak["tasks"], int(pids_peak.read_text()) if pids_peak.exists() else 0)
        return {
            "lab": lab, **result, "wall_s": round(wall, 1),
            "peak_cgroup_mib": round(int((folders["memory"] / "memory.max_usage_in_bytes").read_text()) / 2**20),
            "peak_rss_sum_mib": round(peak["rss"] / 2**20),
            "cpu_s": round(int((folders["cpuacct"] / "cpuacct.usage").read_text()) / 1e9, 1),
            "cores_busy": round(int((folders["cpuacct"] / "cpuacct.usage").read_text()) / 1e9 / wall, 2),
            "peak_tasks": tasks, "peak_processes": peak["procs"],
            "max_vms_gib": round(peak["vms"] / 2**30, 1),
            "load_before": os.getloadavg()[0],
        }
    finally:
        done.set()
        for folder in folders.values():
            _empty_and_remove(folder)


def _empty_and_remove(folder: Path) -> None:
    """Kill what the lab left in this control group (its own processes only), then remove it."""
    for pid in (folder / "cgroup.procs").read_text().split():
        try:
            os.kill(int(pid), 9)
        except ProcessLookupError:
            pass
    for _ in range(50):
        try:
            folder.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    labs = (argv if argv is not None else sys.argv[1:]) or ["07_train_tune_integration", "09_capstone"]
    rows = []
    for lab in labs:
        row = measure(lab)
        print(json.dumps(row), flush=True)
        rows.append(row)
    out = course.ROOT / ".scratch" / f"workshop-sizing-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"nproc": os.cpu_count(), "rows": rows}, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
