"""How long a lab takes a learner: an estimate from what the lab asks of them, for its header.

A newcomer to Ray (a PyTorch engineer) worked through the course once and timed it: 16.6 hours
where the headers then promised 13.4, with the largest gaps in the labs that ask the most reading
and code (issue 31). The estimate counts the same things in each solution notebook and prices
them at a newcomer's pace:

- reading: the prose of every markdown cell at :data:`WORDS_PER_MINUTE` (technical English, read
  by engineers for whom it is often a second language);
- the demo code the learner reads and runs: :data:`DEMO_LINES_PER_MINUTE`;
- each exercise: :data:`MINUTES_PER_EXERCISE` to read the prompt, run the checks and fix a first
  mistake, plus :data:`MINUTES_PER_ANSWER_LINE` per line of the reference answer (blank-page
  programs, where the learner designs the whole script, :data:`MINUTES_PER_BLANK_PAGE_LINE`);
  a quiz question: :data:`MINUTES_PER_QUIZ_QUESTION`;
- the machine: each run of the lab as ``make bench`` measured it (docs/workshop.md), twice.

The prices are the newcomer's: applied to the course as they ran it (commit 37ccda1, 6 Dec 2026),
the estimate comes to 17.0 hours against their 16.6 (the headers then said 13.4).

``python -m grader.authoring.lab_time`` prints the estimate of every lab beside its header;
``tests/labs/test_course_format.py`` requires each header within :data:`TOLERANCE` of it.
"""
from __future__ import annotations

import math
import re
import sys

import nbformat

from grader.authoring import lab_status
from grader.grading import course

WORDS_PER_MINUTE = 150
DEMO_LINES_PER_MINUTE = 10
MINUTES_PER_EXERCISE = 10
MINUTES_PER_ANSWER_LINE = 0.5
MINUTES_PER_BLANK_PAGE_LINE = 1.0
MINUTES_PER_QUIZ_QUESTION = 1.5
TOLERANCE = 0.2
QUIZ = "10_quiz"
# Exercises whose answer is a whole program written from an empty file (their grade ids).
BLANK_PAGE = {"capstone_script_answer", "resilient_script_answer"}
_ANSWER = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
_WORD = re.compile(r"\w+")


def _answer_lines(cell) -> int:
    """Lines of the reference answer in an answer cell (comments and blank lines not counted); a
    written answer (markdown) counts one line per ten words."""
    if cell.cell_type == "markdown":
        return len(cell.source.split()) // 10
    return sum(1 for block in _ANSWER.findall(cell.source) for line in block.splitlines()
               if line.strip() and not line.strip().startswith("#"))


def estimate_minutes(nb, machine_seconds: float, quiz: bool = False) -> float:
    """A newcomer's minutes for a solution notebook ``nb`` (see the module's docstring)."""
    minutes = 2 * machine_seconds / 60
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            if quiz:
                minutes += MINUTES_PER_QUIZ_QUESTION
                continue
            per_line = MINUTES_PER_BLANK_PAGE_LINE if meta.get("grade_id") in BLANK_PAGE else MINUTES_PER_ANSWER_LINE
            minutes += MINUTES_PER_EXERCISE + per_line * _answer_lines(cell)
        elif cell.cell_type == "markdown":
            minutes += len(_WORD.findall(cell.source)) / WORDS_PER_MINUTE
        elif cell.cell_type == "code" and not meta.get("grade"):
            minutes += len(cell.source.splitlines()) / DEMO_LINES_PER_MINUTE
    return minutes


def header_minutes(estimate: float) -> int:
    """What a header states for an estimate: rounded up to 5 minutes."""
    return int(5 * math.ceil(estimate / 5))


def agrees(stated: float, estimate: float) -> bool:
    """A header's time is honest when it is within :data:`TOLERANCE` of the estimate."""
    return abs(stated - estimate) <= TOLERANCE * estimate


def estimates(machine: dict[str, float]) -> dict[str, float]:
    """lab -> estimated minutes of every finished lab, with ``machine`` (lab -> seconds)."""
    return {lab: estimate_minutes(nbformat.read(course.solution_path(lab), as_version=4),
                                  machine.get(lab, 0.0), quiz=lab == QUIZ)
            for lab in lab_status.finished_labs()}


def measured_learner_seconds(guide: str) -> dict[str, float]:
    """The learner-run column of docs/workshop.md's per-lab table (what ``make bench`` measured)."""
    row = re.compile(r"^\| `(\d\d_[a-z0-9_]+)` \| (\d+(?:\.\d+)?) \|", re.MULTILINE)
    return {lab: float(seconds) for lab, seconds in row.findall(guide)}


def machine_seconds() -> dict[str, float]:
    return measured_learner_seconds((course.ROOT / "docs" / "workshop.md").read_text())


def main(argv=None) -> int:
    machine = machine_seconds()
    found = estimates(machine)
    print(f"{'lab':36} {'estimate':>9} {'header':>7}")
    for lab, minutes in found.items():
        print(f"{lab:36} {minutes:8.0f}m {header_minutes(minutes):6d}m")
    print(f"{'total':36} {sum(found.values()) / 60:8.1f}h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
