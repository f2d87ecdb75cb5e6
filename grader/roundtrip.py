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
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from grader import autograde, course, gradebook, mutants, trim
from grader.grading_templates import Templates
from grader.roundtrip_rules import (Graded, failed_in_visible_part, judge, visible_catch, visible_problems,
                                    visible_record)


@dataclass
class RoundTrip:
    lab: str
    seconds: float
    graded: dict  # student -> Graded
    leftover_ray: list
    problems: list
    skipped: list = field(default_factory=list)  # demo cells left out of the wrong-answer rounds
    visible: dict = field(default_factory=dict)  # answer grade_id -> [caught visibly, mutants]
    not_graded: dict = field(default_factory=dict)  # answer grade_id -> mutants this depth left out


def _first_errors(nb) -> dict:
    """grade_id -> (cell, its first error output), for every cell that raised."""
    found = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", cell.get("id"))
        error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        if error is not None:
            found[grade_id] = (cell, error)
    return found


def _workers() -> int:
    return max(1, int(os.environ.get("RAYLAB_ROUNDTRIP_WORKERS", "2")))


# The test suite's depth (tests/conftest.py): every exercise's first mutant and every right answer,
# which fits the suite inside CI's 90 minutes on 2 cores on a slow day (72.5 minutes measured; a
# run grading two each was on course for about 78 and was stopped); `make prove` grades every mutant.
SUITE_MUTANTS_PER_EXERCISE = 1


def suite_depth() -> int | None:
    """Mutants per exercise the test suite grades: RAYLAB_PROOF=full grades them all."""
    return None if os.environ.get("RAYLAB_PROOF", "").lower() == "full" else SUITE_MUTANTS_PER_EXERCISE


def _submissions(lab: str, mutants_per_exercise: int | None = None) -> dict:
    """student -> (answer sources or None, {answer: its mutant or right answer in this round})."""
    submissions = {"solution": (mutants.answer_sources(lab), {}),
                   "solution_trimmed": (mutants.answer_sources(lab), {}),
                   "untouched": (None, {})}
    for k, rnd in enumerate(mutants.rounds(lab, mutants_per_exercise)):
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


def _collect(lab: str, results: dict, submissions: dict, grading_dir: Path, not_run: dict | None = None,
             solved: dict | None = None):
    """(graded, leftover processes, problems of the grading itself) from the autograde results.
    Scores of test cells a round left out (``not_run``) are dropped: nothing ran there. ``solved``:
    student -> the answers that submission holds in the solution's own form."""
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
                                 visible, {a: m.name for a, m in rnd.items() if m.right}, res["seconds"],
                                 frozenset(left_out), (solved or {}).get(student, frozenset()))
    return graded, leftover, problems


def run(lab: str, grading_dir: Path | None = None, workers: int | None = None,
        mutants_per_exercise: int | None = None) -> RoundTrip:
    """Grade the lab's submissions through :func:`grader.autograde.autograde_submission` with the
    class grader's templates (``grader.grading_templates``), ``workers`` at a time; every score is
    also merged into ``grading_dir/gradebook.db`` (one gradebook with every submission, for exports).
    ``mutants_per_exercise``: grade only each exercise's first mutants (None: every one); the
    right answers are always graded.

    Every submission is built from the released learner copy, as a learner's is. The solution is
    graded with every cell (so every demo is proven to run). The untouched copy, the mutants and
    the right answers are graded like a class, without the demo cells their answers do not need;
    every exercise must keep full marks graded that way, as a right answer or, for an exercise
    without one, in the solution's form (``solution_trimmed``): nothing a test depends on was left
    out (``roundtrip_rules.trim_problems``)."""
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
    submissions = _submissions(lab, mutants_per_exercise)
    exercises = mutants.load(lab)
    built = {student: mutants.submission(lab, answers, release=release)
             for student, (answers, _) in submissions.items()}
    # The demo cells a submission in the solution's form is graded without. Each exercise must keep
    # its points graded without them (roundtrip_rules.trim_problems); a right answer in a mutant
    # round shows it, so the trimmed solution round grades only the exercises that have none.
    skipped = templates.skips(lab, nbformat.writes(built["solution_trimmed"]).encode())
    witnessless = {a: None for a, e in exercises.items() if not e.right}
    if not skipped or not witnessless:
        del submissions["solution_trimmed"], built["solution_trimmed"]
    rounds = {student: submissions[student][1] for student in submissions}
    if "solution_trimmed" in submissions:
        rounds["solution_trimmed"] = witnessless
    chosen = {student: templates.for_submission(lab, nbformat.writes(nb).encode(),
                                                not_graded(exercises, rounds[student]))
              for student, nb in built.items() if student != "solution"}
    chosen["solution"] = (templates.full(lab), [])
    built = {student: nbformat.writes(_blank_answers(nb, chosen[student][1])).encode()
             for student, nb in built.items()}

    def grade(student):
        options = autograde.Options(feedback=False)
        return student, autograde.autograde_submission(lab, student, built[student], chosen[student][0], options)

    # The class grader's path (grader/autograde.py), one submission per call, `workers` at a time.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = dict(pool.map(grade, submissions))
    not_run = {student: set(chosen[student][1]) for student in submissions}
    solved = {"solution": frozenset(exercises), "solution_trimmed": frozenset(rounds.get("solution_trimmed", ()))}
    graded, leftover, problems = _collect(lab, results, submissions, grading_dir, not_run, solved)
    problems += judge(graded, exercises, skipped)
    return RoundTrip(lab, round(time.monotonic() - start, 1), graded, leftover, problems, skipped,
                     visible_catch(graded, exercises), mutants.not_graded(lab, mutants_per_exercise))


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
    if rt.not_graded:
        left = sum(len(names) for names in rt.not_graded.values())
        lines.append(f"  mutants not graded at this depth: {left} (make prove grades every one)")
    lines += [f"  PROBLEM: {p}" for p in rt.problems] or ["  OK: autograder right in both directions"]
    return "\n".join(lines)


def validate_problems(rt: RoundTrip) -> list[str]:
    """What Validate misses against grader/visible_catch.json (``roundtrip_rules.visible_problems``);
    nothing for the quiz, which keeps its key hidden (Validate checks only an answer's form)."""
    if rt.lab.endswith("_quiz"):
        return []
    ungraded = {answer: len(names) for answer, names in rt.not_graded.items()}
    return visible_problems(rt.visible, visible_record().get(rt.lab, {}), ungraded)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*")
    parser.add_argument("--mutants", type=int, default=None, metavar="N",
                        help="grade only each exercise's first N mutants (default: every one)")
    args = parser.parse_args(argv)
    bad = 0
    for lab in args.labs or course.labs():
        rt = run(lab, mutants_per_exercise=args.mutants)
        print(report(rt), flush=True)
        visible = validate_problems(rt)
        for problem in visible:
            print(f"  VISIBLE: {problem}")
        bad += bool(rt.problems or visible)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
