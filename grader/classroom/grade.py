"""Grade a whole class: ``make grade SUBMISSIONS=path`` (``python -m grader.classroom.grade``).

Input is nbgrader's collected layout, ``SUBMISSIONS/<student>/<lab>/<lab>.ipynb`` (what
``nbgrader collect`` and ``nbgrader zip_collect`` produce). For every (student, lab):

1. a worker autogrades the one submission through the course's one autograde path
   (``grader/grading/autograde.py``, the one the round trips prove): real ``nbgrader autograde`` on a
   private copy of the lab's gradebook, the learner's code in the submission's own sandbox
   (``grader/grading/isolation.py``), a wall-clock limit, every process of the submission killed at the
   end, feedback scanned for hidden-test text;
2. the coordinator merges the scores into the one class gradebook, serially (no SQLite write
   races), and records the unit in ``state.json`` (an interrupted run resumes where it stopped and
   never regrades a finished submission unless its file changed);
3. at the end: nbgrader's CSV export, an LMS CSV (one row per learner, one column per lab), the
   quiz's per-question scores, and a summary table (graded / failed with reason / needs review).

Workers run in parallel on this machine (``--workers``), or as Ray tasks on an existing Ray
cluster (``--address``). A broken submission is flagged with a clear reason; it never stops the
rest of the class.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from grader.classroom import course_folder, exports
from grader.classroom.progress import Progress, print_summary
from grader.classroom.units import Unit, digest, discover
from grader.grading import autograde, course, gradebook, isolation
from grader.grading.templates import Templates

DEFAULT_TIMEOUT_S = 900
# Half the cores, at least 2 (docs/instructor.md's figure on 2 cores): a lab saturates 2 cores only part of
# the time (kernel and Ray start-up, nbgrader and feedback are mostly waiting).
DEFAULT_WORKERS = max(2, (os.cpu_count() or 2) // 2)


def grade_unit(lab: str, student: str, notebook: bytes, template_db: bytes,
               options: autograde.Options) -> dict:
    """One submission, as a local thread or a Ray task runs it (a module-level function, so Ray
    can ship it): the course's one autograde path."""
    return autograde.autograde_submission(lab, student, notebook, template_db, options)


class ClassGrader:
    def __init__(self, submissions: Path, out: Path, *, workers: int, address: str | None,
                 timeout_s: float, retry_failed: bool = False, labs: list[str] | None = None,
                 cell_timeout_s: float | None = None, course_root: Path | None = None,
                 limits: isolation.Limits | None = None, trim_demos: bool = True):
        """``course_root``: grade another course folder (its ``solutions/``) with this course's
        nbgrader configuration (the tests' tiny courses); ``limits``: per-submission limits;
        ``trim_demos``: leave out demo cells nothing reads (grader.grading.templates)."""
        self.submissions, self.out = submissions.resolve(), out.resolve()
        self.course_args = (f"--CourseDirectory.root={Path(course_root).resolve()}",) if course_root else ()
        self.limits = limits or isolation.Limits()
        self.workers, self.address, self.timeout_s = workers, address, timeout_s
        self.retry_failed = retry_failed
        self.cell_timeout_s = cell_timeout_s
        self.labs = labs or course.labs()
        self.state_path = self.out / "state.json"
        self.state = json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
        self.sandbox, self.sandbox_note = isolation.available()
        self.templates = Templates(self.out, self.course_args, course_root, trim_demos)
        self._stop = threading.Event()
        self.skipped: dict[str, list[str]] = {}  # unit key -> demo cells its grading left out

    # --- bookkeeping ---------------------------------------------------------------------------
    def done(self, unit: Unit) -> bool:
        entry = self.state.get(unit.key)
        if not entry or entry.get("digest") != digest(unit.path):
            return False
        return entry["status"] == "graded" or not self.retry_failed

    def record(self, unit: Unit, result: dict) -> None:
        """Merge one result into the class gradebook and the state file (coordinator only)."""
        self._merge(result)
        for kind, suffix in (("autograded", ".ipynb"), ("feedback", ".html")):
            if result.get(kind):
                dest = self.out / kind / unit.student / unit.lab / f"{unit.lab}{suffix}"
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(result[kind])
        self.state[unit.key] = {k: result.get(k) for k in ("status", "reason", "scores", "flags", "seconds")}
        self.state[unit.key]["demo_cells_not_run"] = self.skipped.get(unit.key, [])
        self.state[unit.key]["digest"] = digest(unit.path)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=1, sort_keys=True))
        tmp.replace(self.state_path)  # atomic: an interrupt never leaves a half-written state

    def _merge(self, result: dict) -> None:
        if result["lab"] in self.labs:
            gradebook.merge(self.out / "gradebook.db", result["lab"], result["student"], result["scores"])

    # --- running -------------------------------------------------------------------------------
    def run(self) -> dict:
        units = discover(self.submissions, self.labs)
        todo = [u for u in units if not self.done(u)]
        skipped = len(units) - len(todo)
        gradable = {u.lab for u in todo if u.problem is None}
        self.templates.prepare(gradable)
        print(f"[grader] {len(units)} submission(s): {len(todo)} to grade, {skipped} already graded; "
              f"sandbox: {self.sandbox_note}", flush=True)
        for unit in [u for u in todo if u.problem]:
            self.record(unit, {"lab": unit.lab, "student": unit.student, "status": "failed",
                               "reason": unit.problem, "scores": {}, "flags": [], "seconds": 0.0})
        todo = [u for u in todo if not u.problem]
        previous = signal.signal(signal.SIGINT, self._interrupt) if threading.current_thread() is threading.main_thread() else None
        try:
            if self.address:
                self._run_ray(todo)
            else:
                self._run_local(todo)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        self.export()
        return self.summary(units)

    def _interrupt(self, *_):
        print("\n[grader] interrupted: finishing nothing new; finished grades are kept. "
              "Rerun the same command to resume.", flush=True)
        self._stop.set()

    def _args(self, unit: Unit) -> tuple:
        notebook = unit.path.read_bytes()
        template, self.skipped[unit.key] = self.templates.for_submission(unit.lab, notebook)
        return (unit.lab, unit.student, notebook, template)

    def _options(self) -> autograde.Options:
        return autograde.Options(sandbox=self.sandbox, timeout_s=self.timeout_s,
                                 cell_timeout_s=self.cell_timeout_s, limits=self.limits,
                                 nbgrader_args=self.course_args)

    def _run_local(self, todo):
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            self._schedule(
                todo,
                submit=lambda unit: pool.submit(grade_unit, *self._args(unit), self._options()),
                wait_some=lambda handles: wait(handles, timeout=1.0, return_when=FIRST_COMPLETED)[0],
                fetch=lambda future: future.result())

    def _run_ray(self, todo):
        import ray

        ray.init(address=self.address, log_to_driver=False)
        try:
            # Each task decides on its own node whether that node can sandbox (sandbox=None).
            remote = ray.remote(num_cpus=2, max_retries=0)(grade_unit)
            options = dataclasses.replace(self._options(), sandbox=None)
            self._schedule(
                todo,
                submit=lambda unit: remote.remote(*self._args(unit), options),
                wait_some=lambda handles: ray.wait(handles, num_returns=1, timeout=1.0)[0],
                fetch=ray.get)
        finally:
            ray.shutdown()

    def _schedule(self, todo, *, submit, wait_some, fetch) -> None:
        """The one scheduling loop: keep ``workers`` submissions running, record each as it ends,
        and after Ctrl-C start nothing new but let the running ones finish."""
        progress = Progress(len(todo))
        queue, pending = list(todo), {}
        while (queue or pending) and not (self._stop.is_set() and not pending):
            while queue and len(pending) < self.workers and not self._stop.is_set():
                unit = queue.pop(0)
                pending[submit(unit)] = unit
            for handle in wait_some(list(pending)):
                unit = pending.pop(handle)
                result = _result_or_failure(lambda: fetch(handle), unit)
                self.record(unit, result)
                progress.step(unit, result)

    # --- outputs -------------------------------------------------------------------------------
    def export(self) -> None:
        exports.write_all(self.out, self.state, self.labs, self.course_args)
        folder = course_folder.course_of(self.submissions)
        if folder is not None:  # the workshop hub's collect: one gradebook, refusals reported
            course_folder.publish(folder, self.out, self.state, self.labs)
            course_folder.report_refusals(folder, self.out / "exports")

    def summary(self, units: list[Unit]) -> dict:
        return print_summary(units, self.state, self.out / "exports")


def _result_or_failure(get, unit: Unit) -> dict:
    try:
        return get()
    except Exception as exc:  # noqa: BLE001 - a worker crash is this submission's problem only
        return {"lab": unit.lab, "student": unit.student, "status": "failed",
                "reason": f"grading worker crashed: {type(exc).__name__}: {str(exc)[:200]}",
                "scores": {}, "flags": [], "seconds": 0.0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("submissions", type=Path, help="folder laid out as <student>/<lab>/<lab>.ipynb")
    parser.add_argument("--out", type=Path, default=course.ROOT / ".grading" / "class",
                        help="class gradebook, feedback and exports (default: .grading/class)")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS,
                        help=f"submissions graded at once (default: half the cores, at least 2: {DEFAULT_WORKERS} here)")
    parser.add_argument("--address", help="grade on an existing Ray cluster (e.g. auto or host:6379)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="wall-clock limit per submission, seconds")
    parser.add_argument("--cell-timeout", type=float, help="per-cell limit, seconds (default: the course config's)")
    parser.add_argument("--retry-failed", action="store_true", help="regrade submissions that failed before")
    parser.add_argument("--labs", nargs="*", help="only these labs")
    parser.add_argument("--full", action="store_true",
                        help="run every cell, also the demo cells no test reads (slower; same scores)")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder")
    grader = ClassGrader(args.submissions, args.out, workers=args.workers, address=args.address,
                         timeout_s=args.timeout, retry_failed=args.retry_failed, labs=args.labs,
                         cell_timeout_s=args.cell_timeout, trim_demos=not args.full)
    grader.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
