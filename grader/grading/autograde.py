"""The one way this course autogrades a submission: :func:`autograde_submission`.

The round trips (``grader/proof/roundtrip.py``), the class grader (``grader/classroom/grade.py``, local
workers and Ray tasks alike) and the grading benchmark all call it, so what the round trips prove
(right answers keep their points, wrong ones lose them) is proven on the path that grades a class.

One call grades one submission with the real ``nbgrader autograde`` in a private work folder
holding a private copy of the lab's gradebook:

1. the notebook is checked (valid JSON, a notebook, copied nbgrader cells resolved: see
   ``grader/grading/submission_check.py``) and scanned for mechanisms that can change how later cells run
   (``grader/grading/tamper_scan.py``): those are flagged for review;
2. nbgrader runs in a loopback-only network namespace; the learner's kernel runs in the
   submission's sandbox (``grader/grading/isolation.py``); a wall-clock limit bounds the whole run;
3. every process of the submission is killed (found by its control group), the sandbox's files
   vanish with it; the feedback is generated, scanned for hidden-test text (redacted and
   flagged: ``grader/grading/feedback_guard.py``), and the work folder is removed.

The result is a plain, picklable dict, the same in a thread or in a Ray task on another node.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from grader.grading import course, edition, feedback_guard, isolation, submission_check, tamper_scan


@dataclass(frozen=True)
class Options:
    sandbox: bool | None = None  # None: whenever this machine can (isolation.available())
    isolate_network: bool = True
    timeout_s: float = 900.0  # the whole autograde run
    cell_timeout_s: float | None = None  # None: the course's nbgrader config (300 s)
    limits: isolation.Limits = field(default_factory=isolation.Limits)
    source_dir: Path | None = None  # another source folder (the round trips' trimmed variant)
    nbgrader_args: tuple = ()  # extra nbgrader options (tests grade a tiny course of their own)
    feedback: bool = True


# Variables the grading worker's nbgrader must not inherit: the address and session of a Ray
# cluster the worker itself may be a task of. The kernel's environment is built from an
# allow-list anyway (isolation.kernel_env); this only keeps nbgrader's own process clean.
def _worker_env(work: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("RAY_") and not k.startswith("RAY_TRAIN_")) and not k.startswith("RAYLAB_")}
    env.update({"RAYLAB_GRADING_DIR": str(work / "out"), "JUPYTER_PATH": str(work / "jupyter"),
                "JUPYTER_RUNTIME_DIR": str(work / "runtime"), "PYTHONUNBUFFERED": "1",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"})
    return env


def _result(lab: str, student: str) -> dict:
    return {"lab": lab, "student": student, "status": "failed", "reason": "", "scores": {},
            "flags": [], "autograded": None, "feedback": None, "seconds": 0.0,
            "leftover_killed": 0, "log_tail": ""}


def autograde_submission(lab: str, student: str, notebook: bytes, template_db: bytes,
                         options: Options = Options()) -> dict:
    """Autograde one submission; return its scores, flags, autograded notebook and feedback."""
    start = time.monotonic()
    result = _result(lab, student)
    checked = submission_check.check(notebook)
    if checked.problem:
        result["reason"] = checked.problem
        return result
    result["flags"] += checked.flags + tamper_scan.flags(checked.notebook)
    sandbox = isolation.available()[0] if options.sandbox is None else options.sandbox
    work = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp"))
    try:
        os.chmod(work, 0o700)
        _grade_in(work, lab, student, checked.data, template_db, options, sandbox, result,
                  lang=edition.language(checked.notebook))
    finally:
        result["seconds"] = round(time.monotonic() - start, 1)
        shutil.rmtree(work, ignore_errors=True)
    return result


def _grade_in(work: Path, lab: str, student: str, notebook: bytes, template_db: bytes,
              options: Options, sandbox: bool, result: dict, lang: str = "en") -> None:
    db, out = work / "db" / "gradebook.db", work / "out"
    overrides = _place(work, db, lab, student, notebook, template_db, options)
    env = _worker_env(work)
    cmd = [course.bin_path("nbgrader"), "autograde", lab, f"--student={student}", "--force", *overrides]
    if options.isolate_network:
        cmd = course.net_isolated(cmd)
    log = _run_contained(cmd, env, work, options, sandbox, result, edition.kernel_env(lang))
    graded_nb = out / "autograded" / student / lab / f"{lab}.ipynb"
    result["log_tail"] = log[-4000:]
    if not graded_nb.exists():
        result["reason"] = result["reason"] or nbgrader_reason(log)
        return
    result["autograded"] = graded_nb.read_text()
    result["flags"] += tamper_scan.output_flags(result["autograded"])
    result["scores"] = read_scores(db, lab, student)
    if options.feedback:
        _feedback(cmd_base=[course.bin_path("nbgrader"), "generate_feedback", lab, f"--student={student}",
                            "--force", *overrides, *edition.feedback_args(lang, work / "jupyter")],
                  env=env, html=out / "feedback" / student / lab / f"{lab}.html",
                  result=result)
    if not result["reason"]:
        result["status"] = "graded"


def _place(work: Path, db: Path, lab: str, student: str, notebook: bytes, template_db: bytes,
           options: Options) -> list[str]:
    """Write the private gradebook and the submission into ``work``; return nbgrader's options."""
    out, sub = work / "out", work / "sub"
    db.parent.mkdir()
    db.write_bytes(template_db)
    nb_path = sub / student / lab / f"{lab}.ipynb"
    nb_path.parent.mkdir(parents=True)
    nb_path.write_bytes(notebook)
    overrides = [f"--CourseDirectory.db_url=sqlite:///{db}",
                 f"--CourseDirectory.submitted_directory={sub}",
                 f"--CourseDirectory.autograded_directory={out / 'autograded'}",
                 f"--CourseDirectory.feedback_directory={out / 'feedback'}",
                 f"--Execute.kernel_name={isolation.KERNEL_NAME}",
                 # Kill the kernel once the last cell ran instead of asking it to exit: every
                 # process of the submission is killed right after anyway (its sandbox, or its run
                 # id), and a sandboxed kernel that imported matplotlib sometimes ignores the
                 # request, which cost 5 s (2.5 s wait, SIGTERM, 2.5 s, SIGKILL) per submission.
                 "--Execute.shutdown_kernel=immediate", *options.nbgrader_args]
    if options.source_dir is not None:
        overrides.append(f"--CourseDirectory.source_directory={Path(options.source_dir).resolve()}")
    if options.cell_timeout_s:
        overrides.append(f"--Execute.timeout={int(options.cell_timeout_s)}")
    return overrides


def _run_contained(cmd: list[str], env: dict, work: Path, options: Options, sandbox: bool,
                   result: dict, kernel_extra: dict) -> str:
    """Run nbgrader with the learner's kernel in the sandbox (or, without root, tagged by a run
    id), kill whatever the submission left behind, and note it; return nbgrader's log.
    ``kernel_extra``: the kernel's variables beyond the allow-list (the edition's language)."""
    run_id = uuid.uuid4().hex
    if sandbox:
        box = isolation.Sandbox(work, options.limits, env=kernel_extra)
    else:  # no root: processes are found by a run id in their environment (learner code can evade it)
        box = None
        scratch = work / "scratch"
        scratch.mkdir()
        isolation.write_plain_kernelspec(work / "jupyter", {"RAYLAB_RUN_ID": run_id, "RAYLAB_SCRATCH": str(scratch),
                                                            **kernel_extra})
        result["flags"].append("graded without the sandbox (not root): see README's guarantees")
    with box if box is not None else _Nothing():
        if box is not None:
            box.write_kernelspec(work / "jupyter")
            if box.missing_limits:
                result["not_enforced"] = box.missing_limits
        log, timed_out = _run(cmd, env, options.timeout_s)
    if box is not None:
        result["leftover_killed"] = box.leftover
        if box.oom:
            result["flags"].append("the memory limit was reached (a process was killed)")
    else:
        result["leftover_killed"] = _kill_by_run_id(run_id)
    if result["leftover_killed"]:
        result["flags"].append(f"{result['leftover_killed']} leftover process(es) killed")
    if timed_out:
        result["reason"] = f"wall-clock limit of {options.timeout_s:.0f} s reached"
    return log


def stock_autograde(lab: str, grading_dir: Path, *nbgrader_args: str, student: str | None = None,
                    timeout: float | None = None) -> course.NbgraderRun:
    """``nbgrader autograde`` as nbgrader ships it: every submission of ``grading_dir/submitted``
    in one sequential run, the course's configuration, no sandbox and no checks around it. Only
    for comparisons (the grading benchmark, and tests of what nbgrader itself does); a class is
    graded by :func:`autograde_submission`."""
    args = ["autograde", lab, "--force", *nbgrader_args]
    if student:
        args.append(f"--student={student}")
    return course.nbgrader(*args, grading_dir=grading_dir, isolate_network=True, timeout=timeout)


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def _run(cmd: list[str], env: dict, timeout_s: float) -> tuple[str, bool]:
    proc = subprocess.Popen(cmd, cwd=course.ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    try:
        return proc.communicate(timeout=timeout_s)[0], False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate()[0], True


def _feedback(cmd_base: list[str], env: dict, html: Path, result: dict) -> None:
    fb = subprocess.run(cmd_base, cwd=course.ROOT, env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True, errors="replace", timeout=300)
    if not html.exists():
        result["flags"].append("feedback could not be generated: " + nbgrader_reason(fb.stdout))
        return
    lines = feedback_guard.course_hidden_lines() | feedback_guard.notebook_hidden_lines(result["autograded"])
    text, redacted = feedback_guard.redact(html.read_text(errors="replace"), lines)
    if redacted:
        result["flags"].append(f"hidden-test text removed from the feedback ({redacted} place(s))")
    result["feedback"] = text


def nbgrader_reason(log: str) -> str:
    """A reason a learner understands, from nbgrader's log (it logs to stderr: pass both)."""
    for needle, reason in (("Kernel died", "the kernel died (os._exit, a crash or out of memory)"),
                           ("DeadKernelError", "the kernel died (os._exit, a crash or out of memory)"),
                           ("missing a key", "not a notebook nbgrader can read"),
                           ("cell type", "a graded cell's type was changed"),
                           ("CellTimeoutError", "a cell ran past the per-cell time limit")):
        if needle in log:
            return reason
    generic = ("Please see the", "There was an error processing", "Removing failed")
    lines = [l for l in log.strip().splitlines()
             if ("ERROR" in l or "Error" in l) and not any(g in l for g in generic)]
    text = (lines[-1].strip() if lines else log.strip())[-200:]
    return "nbgrader failed: " + (text or "no message (exit without output)")


def read_scores(db: Path, lab: str, student: str) -> dict:
    """``{grade_id: [auto_score, max_score, needs_manual_grade]}`` from a gradebook file."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gb:
        sub = gb.find_submission_notebook(lab, lab, student)
        return {g.name: [g.auto_score, g.max_score, bool(g.needs_manual_grade)] for g in sub.grades}


def _kill_by_run_id(run_id: str) -> int:
    import psutil

    killed = 0
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("RAYLAB_RUN_ID") == run_id:
                proc.kill()
                killed += 1
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return killed
