"""Grading a whole class (grader/classroom/grade.py) on real submissions of lab 00.

One class of well-behaved and adversarial submissions is graded once (in parallel, sandboxed, in
a subprocess that is interrupted with SIGINT part-way and then resumed); the tests then check each
submission's outcome, the isolation, the feedback, the exports and the resume bookkeeping. A second
test grades on a real multi-node Ray cluster simulated on this machine.
"""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from grader.classroom import grade
from grader.grading import course, feedback_guard, isolation
from grader.proof import synthetic

pytestmark = pytest.mark.slow
LAB = "00_lab_setup"
CLASS = {
    "ada": "solution", "bob": "untouched", "cy": "mutants0", "dee": "invalid_json",
    "eve": "not_a_notebook", "fay": "no_notebook", "gus": "kernel_exit", "hal": "infinite_loop",
    "ivy": "huge_output", "jo": "ray_shutdown", "kai": "own_cluster", "lea": "tamper",
    "max": "snoop", "ned": "deleted_test_cell", "oz": "test_cell_edited", "pia": "cell_type_changed",
    "quin": "duplicated_test_cell",
}


# 60 s per cell: lab 00's slowest cell (the cluster start) takes ~20 s graded on a busy 2-core machine,
# and the infinite-loop submission costs one cell time-out of grading time.
def _cmd(subs, out):
    return [sys.executable, "-m", "grader.classroom.grade", str(subs), "--out", str(out), "--workers", "2",
            "--cell-timeout", "60", "--timeout", "600", "--labs", LAB]


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    subs, out = base / "submitted", base / "out"
    started = time.time()
    synthetic.build(subs, LAB, CLASS, paths={"solutions": course.SOLUTIONS, "root": course.ROOT,
                                             "submissions": subs, "out": out})
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # First run: interrupt it (SIGINT, as Ctrl-C) once two submissions have been graded.
    proc = subprocess.Popen(_cmd(subs, out), cwd=course.ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    first_log, graded_lines = [], 0
    for line in proc.stdout:
        first_log.append(line)
        graded_lines += bool(re.match(r"\[\d+/\d+\] ", line))
        if graded_lines >= 2 and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=900)
    first_log.append(rest)
    state_after_interrupt = json.loads((out / "state.json").read_text())
    # Second run: resumes and finishes.
    second = subprocess.run(_cmd(subs, out), cwd=course.ROOT, env=env, capture_output=True, text=True,
                            timeout=1800)
    state = json.loads((out / "state.json").read_text())
    # Third run: nothing to do.
    third = subprocess.run(_cmd(subs, out), cwd=course.ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
    return {"subs": subs, "out": out, "window": (started, time.time()),
            "first": "".join(first_log), "interrupted": state_after_interrupt,
            "second": second, "third": third, "state": state}


def _total(entry):
    return sum(s[0] or 0 for s in entry["scores"].values()), sum(s[1] or 0 for s in entry["scores"].values())


def test_interrupt_keeps_finished_grades_and_resume_finishes_the_class(graded_class):
    first, state = graded_class["interrupted"], graded_class["state"]
    assert "interrupted" in graded_class["first"]
    assert 2 <= len(first) < len(CLASS), "the interrupt should stop the run part-way"
    assert len(state) == len(CLASS), graded_class["second"].stdout[-3000:]
    for key, entry in first.items():  # finished before the interrupt: not regraded
        assert state[key] == entry
    assert f"{len(CLASS)} submission(s): 0 to grade" in graded_class["third"].stdout


def test_each_submission_is_graded_or_flagged_with_a_reason(graded_class):
    state = {k.split("/")[0]: v for k, v in graded_class["state"].items()}
    full = _total(state["ada"])
    assert state["ada"]["status"] == "graded" and full[0] == full[1] == 6, state["ada"]
    assert state["bob"]["status"] == "graded" and _total(state["bob"])[0] == 0
    assert state["cy"]["status"] == "graded" and _total(state["cy"])[0] == 0
    reasons = {"dee": "not valid JSON", "eve": "not a notebook", "fay": "no 00_lab_setup.ipynb",
               "gus": "kernel died"}
    for student, text in reasons.items():
        assert state[student]["status"] == "failed" and text in state[student]["reason"], state[student]
    # An endless loop is interrupted at the cell limit; the rest of the notebook is still graded.
    assert state["hal"]["status"] == "graded" and 0 < _total(state["hal"])[0] < 6
    assert state["ivy"]["status"] == "graded" and _total(state["ivy"])[0] >= 4  # capped, not fatal
    assert state["jo"]["status"] == "graded" and _total(state["jo"])[0] < 6  # Ray shut down under the tests
    assert state["kai"]["status"] == "graded"
    # Tampering with exception handling is caught: wrong answers stay at 0 and are flagged.
    assert _total(state["lea"])[0] == 0 and any("tampered" in f for f in state["lea"]["flags"])
    # Deleted, edited and duplicated test cells are restored from the gradebook and graded.
    assert state["ned"]["status"] == "graded" and _total(state["ned"]) == (6, 6)
    assert state["oz"]["status"] == "graded" and _total(state["oz"])[0] == 0
    assert state["quin"]["status"] == "graded" or (
        state["quin"]["reason"] and "Please see the" not in state["quin"]["reason"]), state["quin"]
    assert state["pia"]["status"] in ("graded", "failed") and (state["pia"]["reason"] or state["pia"]["scores"])


def test_no_process_of_any_submission_is_left(graded_class):
    """Sandboxed, a submission's processes run as a leased uid (grader/grading/isolation.py UID_BASE...)
    and die with its PID namespace; unsandboxed, they carry the grader's run id. (Other gradings
    on this machine lease uids too: only processes started while this class was graded count.)"""
    import psutil

    low, high = isolation.UID_BASE, isolation.UID_BASE + isolation.UID_SLOTS
    start, end = graded_class["window"]
    leftovers = []
    for proc in psutil.process_iter(["pid", "cmdline", "uids", "create_time"]):
        try:
            env = proc.environ()
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        ours = start <= proc.info["create_time"] <= end
        if ours and (low <= proc.info["uids"].real < high or env.get("RAYLAB_SCRATCH", "").startswith("/tmp/rg-")):
            leftovers.append(proc.info)
    assert not leftovers
    kai = graded_class["state"][f"kai/{LAB}"]
    assert kai["status"] == "graded", kai  # its own `ray start` ended with its kernel


@pytest.mark.skipif(not isolation.available()[0], reason="the kernel sandbox needs root and util-linux")
def test_isolation_refuses_every_read_and_write_the_snooper_tries(graded_class):
    nb = nbformat.read(graded_class["out"] / "autograded" / "max" / LAB / f"{LAB}.ipynb", as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "stream")
    line = next(l for l in text.splitlines() if l.startswith("SNOOP"))
    uid = int(line.split()[1])
    assert isolation.UID_BASE <= uid < isolation.UID_BASE + isolation.UID_SLOTS  # its own leased user
    assert "READ" not in line and "WROTE" not in line, line
    assert not (graded_class["out"] / "hacked.txt").exists()
    assert not (course.ROOT / "grader" / "hacked.txt").exists()
    assert graded_class["state"][f"max/{LAB}"]["status"] == "graded"  # and the class goes on


def test_feedback_has_scores_and_hints_but_no_hidden_tests(graded_class):
    # every lab's hidden-test lines but those the learner copies also show (a requirement marker
    # above visible and hidden checks alike is no leak): the guard's own definition
    hidden_lines = {line for line in feedback_guard.course_hidden_lines() if len(line) > 25}
    files = list((graded_class["out"] / "feedback").rglob("*.html"))
    assert len(files) >= 10
    for path in files:
        html = path.read_text()
        assert "HIDDEN TESTS" not in html
        leaked = [l for l in hidden_lines if l in html]
        assert not leaked, f"{path}: hidden test source in feedback: {leaked[:2]}"
    cy = (graded_class["out"] / "feedback" / "cy" / LAB / f"{LAB}.html").read_text()
    assert "Hint:" in cy and "Score" in cy


def test_exports(graded_class):
    exports = graded_class["out"] / "exports"
    with (exports / "lms_grades.csv").open() as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert set(rows) == set(CLASS)
    assert rows["ada"][LAB] == "6" and rows["ada"]["total"] == "6" and rows["ada"]["max_total"] == "6"
    assert rows["bob"][LAB] == "0" and LAB in rows["dee"]["needs_review"]
    # lea's grade is flagged (tampering): held back from the LMS until an instructor has reviewed it
    assert rows["lea"][LAB] == "" and rows["lea"]["held_for_review"] == LAB and rows["lea"]["max_total"] == "0"
    assert rows["ada"]["held_for_review"] == ""
    nbg = list(csv.DictReader((exports / "nbgrader_grades.csv").open()))
    assert {r["student_id"] for r in nbg} >= {"ada", "bob"}
    ada = next(r for r in nbg if r["student_id"] == "ada" and r["assignment"] == LAB)
    assert float(ada["score"]) == 6.0


def test_distributed_grading_on_a_multi_node_ray_cluster(tmp_path):
    """Grading as Ray tasks on an existing (simulated two-node) cluster, each task running its own
    local lab cluster inside its sandbox."""
    from ray.cluster_utils import Cluster

    subs, out = tmp_path / "submitted", tmp_path / "out"
    synthetic.build(subs, LAB, {"ada": "solution", "bob": "untouched"})
    cluster = Cluster()
    try:  # a head that fails to start (a loaded machine) must not leak its processes
        cluster.add_node(num_cpus=2, include_dashboard=False)
        cluster.add_node(num_cpus=2)
        grader = grade.ClassGrader(subs, out, workers=2, address=cluster.address, timeout_s=400,
                                        labs=[LAB], cell_timeout_s=90)
        start = time.monotonic()
        rows = grader.run()
        assert sorted(rows["graded"]) == [f"ada/{LAB}", f"bob/{LAB}"], rows
        assert _total(grader.state[f"ada/{LAB}"]) == (6, 6)
        assert _total(grader.state[f"bob/{LAB}"])[0] == 0
        assert time.monotonic() - start < 600
    finally:
        cluster.shutdown()


def test_round_trip_and_class_grader_give_identical_scores(graded_class, round_trips):
    """One autograde path (grader/grading/autograde.py): the round trip's grades of the solution and the
    first mutant round equal the class grader's grades of the same submissions (ada and cy)."""
    from grader.proof import roundtrip_report

    rt = round_trips(LAB)
    assert not rt.problems, roundtrip_report.report(rt)
    state = graded_class["state"]
    for student, kind in (("ada", "solution"), ("cy", "mutants0")):
        class_scores = {g: (s[0], s[1]) for g, s in state[f"{student}/{LAB}"]["scores"].items()}
        assert class_scores == rt.graded[kind].scores, (student, class_scores, rt.graded[kind].scores)
