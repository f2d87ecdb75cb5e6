"""The round trip's rules: pure functions of graded results that say whether the autograder is
right in both directions (``grader.proof.roundtrip`` grades, these judge). Unit-tested on fabricated
results in ``tests/grader/test_roundtrip_rules.py``."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.proof import requirements

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
    left_out: frozenset = frozenset()  # cells this submission was graded without (trimmed demos, ...)
    solved: frozenset = frozenset()  # answer grade_ids graded in the solution's own form
    lines: dict = field(default_factory=dict)  # grade_id -> line of the cell its first error names


ANSI = re.compile(r"\x1b\[[0-9;]*m")
CELL_LINE = re.compile(r"In\[\d+\], line (\d+)")
HIDDEN_MARK = "BEGIN HIDDEN TESTS"
# grader.grading.nbgrader_ext.SentinelInject runs each test cell with one line (the tamper report) first.
INJECTED_LINES = 1


def error_line(traceback: list[str]) -> int | None:
    """The line of the test cell (1-based, as the learner sees the cell) a traceback names
    first; None when it names none."""
    for entry in traceback:
        found = CELL_LINE.search(ANSI.sub("", entry))
        if found:
            return int(found.group(1)) - INJECTED_LINES
    return None


def failed_in_visible_part(source: str, traceback: list[str]) -> bool | None:
    """Whether a test cell's error was raised by a line a learner's Validate also runs (above the
    hidden-tests marker). None when the traceback names no line of the cell."""
    line = error_line(traceback)
    if line is None:
        return None
    lines = source.splitlines()
    hidden_at = next((i for i, text in enumerate(lines) if HIDDEN_MARK in text), len(lines))
    return 0 <= line - 1 < hidden_at


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


# What Validate catches, as last measured: grader/visible_catch.json holds, per lab and exercise,
# [mutants whose first failure is a visible line, mutants]. The round trips check that no exercise
# falls below it; tests/grader/test_visible_catch.py checks the record itself (every exercise,
# the mutant files' counts, at least one visible catch each, 80 % of all mutants).
VISIBLE_GOAL = 0.80
VISIBLE_RECORD = Path(__file__).resolve().parents[1] / "visible_catch.json"


def visible_record() -> dict:
    """lab -> answer grade_id -> [caught visibly, mutants], as recorded."""
    return json.loads(VISIBLE_RECORD.read_text())


def write_visible_record(lab: str, visible: dict, path: Path = VISIBLE_RECORD) -> None:
    """Record a lab's counts (``make prove`` only: the record is a proof result), one lab a line."""
    record = json.loads(path.read_text()) if path.exists() else {}
    record[lab] = {answer: list(counts) for answer, counts in visible.items()}
    lines = [f"  {json.dumps(name)}: {json.dumps(record[name])}" for name in sorted(record)]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def _graded_of_entries(entries) -> dict:
    """Stored gradings (``grader.proof.ledger.Entry``) as :class:`Graded`: the mutants each one
    graded and which test cells failed on a line Validate runs."""
    graded = {}
    for e in entries:
        mutated = {a: v.split(": ", 1)[1] for a, v in e.variants.items() if v.startswith("mutant: ")}
        visible = {gid: err[3] for gid, err in e.result["errors"].items()}
        graded[e.student] = Graded(e.student, {}, {}, mutated, visible)
    return graded


def visible_catch_of_entries(entries, exercises: dict) -> dict:
    """:func:`visible_catch` of stored gradings: the record a lab's ledger implies."""
    return visible_catch(_graded_of_entries(entries), exercises)


def visible_misses(entries, exercises: dict) -> list[tuple[str, str]]:
    """(answer grade_id, mutant name) of every mutant graded in these stored gradings that no test
    cell of its exercise failed on a line Validate runs: the mutants only hidden tests catch."""
    return sorted((answer, name) for g in _graded_of_entries(entries).values()
                  for answer, name in g.mutated.items()
                  if not any(g.failed_visibly.get(t) for t in exercises[answer].tests))


def visible_problems(visible: dict, recorded: dict, not_graded: dict | None = None) -> list[str]:
    """What a round trip's visible catch counts (:func:`visible_catch`) say against the record:
    an exercise none of whose mutants Validate shows, an exercise whose mutant count differs from
    the record, or one that Validate now catches fewer of. ``not_graded``: answer -> mutants the
    round trip left out (a shallower depth); each may have been one of the recorded catches, so
    the graded ones must still hold the rest, and an exercise may show none only if every
    recorded catch could be among those left out."""
    problems = []
    not_graded = not_graded or {}
    for answer, (caught, total) in visible.items():
        left_out = not_graded.get(answer, 0)
        if not caught and not left_out:
            problems.append(f"{answer}: none of its {total} mutants fails a check Validate runs")
        if answer not in recorded:
            problems.append(f"{answer}: not in grader/visible_catch.json (record it: {caught}/{total})")
            continue
        was_caught, was_total = recorded[answer]
        if total + left_out != was_total:
            problems.append(f"{answer}: {total} mutants graded" + (f" and {left_out} left out" if left_out else "")
                            + f", {was_total} recorded in grader/visible_catch.json")
        elif caught < was_caught - left_out:
            problems.append(f"{answer}: Validate catches {caught} of {total} mutants, {was_caught} before"
                            + (f" ({left_out} more recorded, not graded at this depth)" if left_out else ""))
    problems += [f"{answer}: recorded in grader/visible_catch.json but no mutant of it was graded"
                 for answer in recorded if answer not in visible]
    return problems


def solution_problems(graded: dict) -> list[str]:
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
    if not any(s[0] is not None or s[1] for s in graded.get("solution", Graded("", {}, {})).scores.values()):
        problems.append("the lab has no autograded cells")
    return problems


def _full_marks(g: Graded, tests) -> bool:
    """Every one of these test cells ran, scored its maximum and raised nothing."""
    return all(t in g.scores and g.scores[t][0] is not None and g.scores[t][0] >= g.scores[t][1]
               and t not in g.errors for t in tests)


def trim_problems(graded: dict, exercises: dict, skipped: list) -> list[str]:
    """When grading leaves demo cells out (``skipped``: those the solution is graded without),
    every exercise must keep full marks in some submission graded without at least those cells,
    in a right form: the solution's own (``solved``) or a right answer that differs from it. That
    proves none of its checks reads a skipped demo, so a wrong answer never looks caught because
    a demo was left out, and a class graded without the demos gets the scores it would get with them.
    A right answer is as good a witness as the solution for the checks; the answers themselves are
    trimmed by the same analysis (``grader/grading/trim.py``, unit-tested)."""
    if not skipped:
        return []
    proven = set()
    for g in graded.values():
        if g.student == "solution" or not set(skipped) <= set(g.left_out):
            continue
        proven |= {answer for answer in set(g.right) | set(g.solved) if _full_marks(g, exercises[answer].tests)}
    return [f"{answer}: never graded in a right form with the demo cells left out "
            f"({', '.join(skipped)}); nothing shows its checks do not read them"
            for answer in exercises if answer not in proven]


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


# A submission of another edition: student -> (its language, the English submission whose answers it holds).
EDITIONS = {"solution_ja": ("ja", "solution")}


def edition_copy(lang: str, lab: str) -> Path:
    """The learner copy of the lab in the edition of ``lang``, as ``make release`` publishes it."""
    return Path(__file__).resolve().parents[2] / f"notebooks-{lang}" / lab / f"{lab}.ipynb"


def edition_problems(graded: dict, unpublished=()) -> list[str]:
    """The same answers in another edition's copy must get the English scores, cell for cell, and
    raise in no cell the English one does not: an edition changes the language of the words around
    a grade, never a grade. ``unpublished``: the languages with no copy of the lab (the release
    leaves out a stale translation), whose grading nothing here proves."""
    problems = [f"no {lang} copy of the lab in notebooks-{lang}/: its grading is unproven; "
                "bring the translation up to date and make release" for lang in unpublished]
    for student, (lang, english) in EDITIONS.items():
        g, e = graded.get(student), graded.get(english)
        if g is None or e is None:
            continue
        for grade_id in sorted(set(g.scores) | set(e.scores)):
            if tuple(g.scores.get(grade_id, ())) != tuple(e.scores.get(grade_id, ())):
                problems.append(f"{student}: {grade_id} scored {_score(g, grade_id)} in the {lang} edition, "
                                f"{_score(e, grade_id)} in English (the autograder grades the editions differently)")
        problems += [f"{student}: error in cell {gid} in the {lang} edition only: {ename}: {evalue[:200]}"
                     for gid, (ename, evalue) in g.errors.items() if gid not in e.errors]
    return problems


def _score(g: Graded, grade_id: str) -> str:
    score = g.scores.get(grade_id)
    return "nothing" if score is None else f"{score[0]}/{score[1]}"


def judge(graded: dict, exercises: dict, skipped: list, sources: dict | None = None,
          unpublished=()) -> list[str]:
    """Every way the autograder can be wrong, as readable problems (empty: right both ways).
    ``sources`` (test cell grade_id -> source): also trace each mutant to the requirement it
    breaks (``grader.proof.requirements``); ``unpublished``: :func:`edition_problems`."""
    linked = requirements.link_problems(graded, exercises, sources) if sources is not None else []
    return (solution_problems(graded) + trim_problems(graded, exercises, skipped)
            + untouched_problems(graded) + mutant_problems(graded, exercises) + linked
            + right_problems(graded, exercises) + edition_problems(graded, unpublished))
