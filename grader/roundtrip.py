"""Autograde a lab's solution, its untouched learner copy and its mutants through real nbgrader.

``python -m grader.roundtrip 00_lab_setup`` prints one line per submission and per graded cell and
exits non-zero when the autograder is wrong in either direction: the solution below full marks,
the untouched learner copy above 0, a mutant at full marks on the exercise it breaks, a mutant
caught only by a crash instead of a check, a right answer that differs from the solution below
full marks, an error in any cell of the solution, a solution flagged for review, or processes left
behind. Every submission is graded by
``grader.autograde.autograde_submission``, the function the class grader calls, so this proves the
path that grades a class. ``tests/grader/test_autograde_roundtrip.py`` runs it for every lab.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader import autograde, course, gradebook, mutants, trim
from grader.grading_templates import Templates

# A mutant counts as caught only when a check says so, not when the notebook crashes.
CHECK_ERRORS = {"CheckFailed", "AssertionError"}


@dataclass
class Graded:
    student: str
    scores: dict  # grade_id -> (score, max)
    errors: dict  # grade_id -> (ename, evalue) of the first error output in that cell
    mutated: dict = field(default_factory=dict)  # answer grade_id -> mutant name
    failed_visibly: dict = field(default_factory=dict)  # grade_id -> the first failure is a visible line
    right: dict = field(default_factory=dict)  # answer grade_id -> name of a right answer that differs
    seconds: float = 0.0  # the autograde run's wall time


@dataclass
class RoundTrip:
    lab: str
    seconds: float
    graded: dict  # student -> Graded
    leftover_ray: list
    problems: list
    skipped: list = field(default_factory=list)  # demo cells left out of the wrong-answer rounds
    visible: dict = field(default_factory=dict)  # answer grade_id -> [caught visibly, mutants]


ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_LINE = re.compile(r"In\[\d+\], line (\d+)")
HIDDEN_MARK = "BEGIN HIDDEN TESTS"
# grader.nbgrader_ext.SentinelInject runs each test cell with one line (the tamper report) first.
INJECTED_LINES = 1


def failed_in_visible_part(source: str, traceback: list[str]) -> bool | None:
    """Whether a test cell's error was raised by a line a learner's Validate also runs (above the
    hidden-tests marker). None when the traceback names no line of the cell."""
    for entry in traceback:
        found = CELL_LINE.search(ANSI.sub("", entry))
        if found:
            line = int(found.group(1)) - 1 - INJECTED_LINES
            lines = source.splitlines()
            hidden_at = next((i for i, text in enumerate(lines) if HIDDEN_MARK in text), len(lines))
            return 0 <= line < hidden_at
    return None


def _first_errors(nb) -> dict:
    """grade_id -> (cell, its first error output), for every cell that raised."""
    found = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", cell.get("id"))
        error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        if error is not None:
            found[grade_id] = (cell, error)
    return found


def visible_catch(graded: dict, exercises: dict) -> dict:
    """answer grade_id -> [caught visibly, mutants] over every mutant round: a mutant is caught
    visibly when one of its exercise's test cells failed on a line Validate runs too."""
    counts = {}
    for g in graded.values():
        for answer, _name in g.mutated.items():
            seen = counts.setdefault(answer, [0, 0])
            seen[1] += 1
            seen[0] += any(g.failed_visibly.get(t) for t in exercises[answer].tests)
    return counts


def _workers() -> int:
    return max(1, int(os.environ.get("RAYLAB_ROUNDTRIP_WORKERS", "2")))


def _submissions(lab: str) -> dict:
    """student -> (answer sources or None, {answer: its mutant or right answer in this round})."""
    submissions = {"solution": (mutants.answer_sources(lab), {}),
                   "solution_trimmed": (mutants.answer_sources(lab), {}),
                   "untouched": (None, {})}
    for k, rnd in enumerate(mutants.rounds(lab)):
        submissions[f"mutants{k}"] = (mutants.round_answers(lab, rnd), rnd)
    return submissions


def not_graded(exercises: dict, mutated: dict) -> frozenset:
    """The answer and test cells of the exercises a mutant round does not touch (a round k past
    an exercise's last variant would grade its solution again): they may be left out of that
    round (``trim.round_skips``; exercises are independent, ``tests/labs/test_course_format.py``).
    Nothing for the solution and untouched rounds, which are judged on every cell."""
    if not mutated:
        return frozenset()
    return frozenset(cell for e in exercises.values() if e.answer not in mutated
                     for cell in (e.answer, *e.tests))


def _blank_answers(nb, skip: list[str]):
    """The submission with the answer cells in ``skip`` replaced by the trimmed-cell comment
    (nbgrader restores locked cells from the template, but runs answer cells as submitted)."""
    skip = set(skip)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") in skip:
            cell.source = trim.SKIPPED
    return nb


def _collect(lab: str, results: dict, submissions: dict, grading_dir: Path, not_run: dict | None = None):
    """(graded, leftover processes, problems of the grading itself) from the autograde results.
    Scores of test cells a round left out (``not_run``) are dropped: nothing ran there."""
    graded, leftover, problems = {}, [], []
    for student, res in results.items():
        if res["status"] != "graded":
            problems.append(f"{student}: not graded ({res['reason']}):\n{res['log_tail'][-3000:]}")
        if res["leftover_killed"]:
            leftover.append(f"{student}: {res['leftover_killed']} process(es)")
            problems.append(f"{student}: {res['leftover_killed']} process(es) left after grading")
        if student.startswith("solution") and [f for f in res["flags"] if "without the sandbox" not in f]:
            problems.append(f"{student}: flagged for review: {res['flags']}")
        if not res["scores"]:
            problems.append(f"{student}: no scores")
            continue
        gradebook.merge(grading_dir / "gradebook.db", lab, student, res["scores"])
        left_out = (not_run or {}).get(student, set())
        scores = {g: (s[0], s[1]) for g, s in res["scores"].items() if g not in left_out}
        autograded = nbformat.reads(res["autograded"], as_version=4) if res["autograded"] else None
        raised = _first_errors(autograded) if autograded else {}
        errors = {g: (out.get("ename"), out.get("evalue", "")[:300]) for g, (_, out) in raised.items()}
        visible = {g: failed_in_visible_part(cell.source, out.get("traceback", []))
                   for g, (cell, out) in raised.items()}
        rnd = submissions[student][1]
        graded[student] = Graded(student, scores, errors, {a: m.name for a, m in rnd.items() if not m.right},
                                 visible, {a: m.name for a, m in rnd.items() if m.right}, res["seconds"])
    return graded, leftover, problems


def run(lab: str, grading_dir: Path | None = None, workers: int | None = None) -> RoundTrip:
    """Grade the lab's submissions through :func:`grader.autograde.autograde_submission` with the
    class grader's templates (``grader.grading_templates``), ``workers`` at a time; every score is
    also merged into ``grading_dir/gradebook.db`` (one gradebook with every submission, for exports).

    Every submission is built from the released learner copy, as a learner's is. The solution is
    graded twice: with every cell (so every demo is proven to run), and like any other submission,
    without the demo cells its answers do not need (full marks there prove that nothing a test
    depends on was left out). The untouched copy and the mutants are graded like a class."""
    start = time.monotonic()
    workers = workers or _workers()
    grading_dir = Path(grading_dir or tempfile.mkdtemp(prefix=f"roundtrip-{lab}-"))
    # Always trimmed, however many workers: the solution is graded once with every cell below,
    # and the other submissions are graded as the class grader grades them.
    templates = Templates(grading_dir)
    try:
        templates.prepare([lab])
    except SystemExit as exc:
        return RoundTrip(lab, 0.0, {}, [], [str(exc)])
    release = grading_dir / "release" / lab / f"{lab}.ipynb"
    submissions = _submissions(lab)
    exercises = mutants.load(lab)
    built = {student: mutants.submission(lab, answers, release=release)
             for student, (answers, _) in submissions.items()}
    chosen = {student: templates.for_submission(lab, nbformat.writes(nb).encode(),
                                                not_graded(exercises, submissions[student][1]))
              for student, nb in built.items()}
    skipped = chosen["solution_trimmed"][1]
    chosen["solution"] = (templates.full(lab), [])
    if not skipped:
        del submissions["solution_trimmed"]
    built = {student: nbformat.writes(_blank_answers(nb, chosen[student][1])).encode()
             for student, nb in built.items()}

    def grade(student):
        options = autograde.Options(feedback=False)
        return student, autograde.autograde_submission(lab, student, built[student], chosen[student][0], options)

    # The class grader's path (grader/autograde.py), one submission per call, `workers` at a time.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = dict(pool.map(grade, submissions))
    not_run = {student: set(chosen[student][1]) for student in submissions}
    graded, leftover, problems = _collect(lab, results, submissions, grading_dir, not_run)
    problems += judge(graded, exercises, skipped)
    return RoundTrip(lab, round(time.monotonic() - start, 1), graded, leftover, problems, skipped,
                     visible_catch(graded, exercises))


# --- the rules: pure functions of the graded results ----------------------------------------------
def solution_problems(graded: dict, skipped: list) -> list[str]:
    """The solution (and its trimmed form) must score full marks with no error in any cell."""
    problems = []
    for sol in (graded.get("solution"), graded.get("solution_trimmed")):
        if not sol:
            continue
        for grade_id, (score, max_score) in sol.scores.items():
            if score is not None and score < max_score:
                problems.append(f"{sol.student}: {grade_id} scored {score}/{max_score}")
        for grade_id, (ename, evalue) in sol.errors.items():
            problems.append(f"{sol.student}: error in cell {grade_id}: {ename}: {evalue}")
    if skipped and "solution_trimmed" not in graded:
        problems.append("the solution was not graded with the demo cells left out")
    if not any(s[0] is not None or s[1] for s in graded.get("solution", Graded("", {}, {})).scores.values()):
        problems.append("the lab has no autograded cells")
    return problems


def untouched_problems(graded: dict) -> list[str]:
    """The learner copy as released must score 0 everywhere."""
    untouched = graded.get("untouched")
    return [f"untouched learner copy: {grade_id} scored {score}"
            for grade_id, (score, _) in (untouched.scores.items() if untouched else []) if score]


def mutant_problems(graded: dict, exercises: dict) -> list[str]:
    """Each mutant must lose points on every test cell of its exercise, through a failed check
    (CheckFailed/AssertionError), not a crash: a crash is no proof that the tests catch it."""
    problems = []
    for g in graded.values():
        for answer, name in g.mutated.items():
            for test_id in exercises[answer].tests:
                score, max_score = g.scores.get(test_id, (None, None))
                ename = g.errors.get(test_id, (None, ""))[0]
                if score is None or score >= max_score:
                    problems.append(f"mutant {answer}/{name}: {test_id} scored {score}/{max_score}")
                elif ename not in CHECK_ERRORS:
                    # the first failing cell is usually the cause (a setup that could not start
                    # Ray leaves every later name undefined)
                    first_id, (first_name, first_value) = next(iter(g.errors.items()))
                    cause = (f"; the first error was in {first_id}: {first_name}: {first_value[:200]}"
                             if first_id != test_id else "")
                    problems.append(f"mutant {answer}/{name}: {test_id} failed with {ename}, "
                                    f"not a check (a crash is not proof the tests catch it){cause}")
    return problems


def right_problems(graded: dict, exercises: dict) -> list[str]:
    """Each right answer that differs from the solution must keep every point of its exercise,
    with no error in its test cells (a test that insists on what the prompt never asked)."""
    problems = []
    for g in graded.values():
        for answer, name in g.right.items():
            for test_id in exercises[answer].tests:
                score, max_score = g.scores.get(test_id, (None, None))
                if score is None or score < max_score:
                    error = g.errors.get(test_id)
                    problems.append(f"right answer {answer}/{name}: {test_id} scored {score}/{max_score}"
                                    + (f" ({error[0]}: {error[1][:200]})" if error else ""))
    return problems


def judge(graded: dict, exercises: dict, skipped: list) -> list[str]:
    """Every way the autograder can be wrong, as readable problems (empty: right both ways)."""
    return (solution_problems(graded, skipped) + untouched_problems(graded)
            + mutant_problems(graded, exercises) + right_problems(graded, exercises))


def report(rt: RoundTrip) -> str:
    lines = [f"{rt.lab}: {rt.seconds:.0f} s, {len(rt.graded)} submissions"]
    if rt.skipped:
        lines.append(f"  demo cells left out of the wrong-answer rounds: {', '.join(rt.skipped)}")
    for student, g in rt.graded.items():
        total = sum(s or 0 for s, _ in g.scores.values())
        top = sum(m or 0 for _, m in g.scores.values())
        lines.append(f"  {student:<16} {total:g}/{top:g}  ({g.seconds:.0f} s)")
        for answer, name in g.mutated.items():
            lines.append(f"      mutant {answer}: {name}")
        for answer, name in g.right.items():
            lines.append(f"      right answer {answer}: {name}")
        for grade_id, (score, max_score) in g.scores.items():
            err = g.errors.get(grade_id)
            lines.append(f"      {grade_id:<34} {score}/{max_score}" + (f"  {err[0]}: {err[1][:90]!r}" if err else ""))
    if rt.visible:
        caught, total = (sum(v[i] for v in rt.visible.values()) for i in (0, 1))
        lines.append(f"  visible catch rate: {caught}/{total} mutants ({100 * caught / max(total, 1):.0f} %) "
                     "fail a check Validate runs"
                     + (" (a quiz keeps its key hidden: Validate checks only an answer's form)"
                        if rt.lab.endswith("_quiz") else ""))
        lines += [f"      {answer:<34} {c}/{t}" for answer, (c, t) in rt.visible.items()]
    lines += [f"  PROBLEM: {p}" for p in rt.problems] or ["  OK: autograder right in both directions"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*")
    args = parser.parse_args(argv)
    bad = 0
    for lab in args.labs or course.labs():
        rt = run(lab)
        print(report(rt), flush=True)
        bad += bool(rt.problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
