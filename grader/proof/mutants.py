"""Realistic wrong answers ("mutants") and the submissions built from them.

``solutions/<lab>/mutants.yaml`` maps each answer cell of a lab to the test cells that grade it and to
at least two named mutants. A mutant is a list of exact text replacements applied to the solution
of that answer cell; each ``old`` text must occur exactly once, so a mutant cannot silently stop
applying when a solution is edited::

    environment_report_answer:
      tests: [environment_report_tests]
      requirements:
        python_of_this_kernel: report the Python version of the interpreter running the notebook
      mutants:
        - name: reports_documented_python_not_installed
          why: copies the version the course documents instead of asking the interpreter
          breaks: [python_of_this_kernel]
          core: true                # the mistake the exercise exists to teach (required)
          mistake: value_timing     # optional: its class of mistake (grader.proof.requirements.MISTAKES)
          replace:
            - ['platform.python_version()', '"3.12.0"']

An exercise may also list ``right:`` answers in the same format: answers that differ from the
solution but meet the prompt (another API spelling of the same setting, another file name the
prompt leaves open). They must get full marks, so a test that insists on what the prompt never
asked fails the round trip::

      right:
        - name: rank_from_torch_distributed
          why: the prompt asks for rank 0, not for the API that tells it
          replace:
            - ['ray.train.get_context().get_world_rank()', 'torch.distributed.get_rank()']

A lab an author is still writing also holds the line ``status: in progress`` (not an exercise:
``grader.authoring.lab_status`` reads it).

``requirements`` lists what the exercise's prompt asks, and ``breaks`` says which of those a
mutant violates; ``grader.proof.requirements`` traces both to the test cells' checks. Every mutant says
whether it is ``core``: true when it is the mistake the exercise exists to teach (Validate must
show it: ``tests/grader/test_visible_catch.py``), false for a side requirement, hard-coding, an
edge case or paperwork. Right answers carry no ``core``.

Submissions are built the way a learner makes them: the released notebook with answer cells
filled in. Round ``k`` fills every answer cell with the ``k``-th of its mutants followed by its
right answers, so one autograde run checks one variant of every exercise; an exercise with fewer
variants is not graded in that round (the round trip leaves its cells out). That is sound because
exercises are independent: ``tests/labs/test_course_format.py`` checks that no answer or test cell
uses a name defined by another exercise's answer cell.

A round trip may grade only each exercise's first mutant(s) (``mutants_per_exercise``: a quick
look while writing mutants, ``python -m grader.proof.prove --mutants N``), or only the mutants it
names (``--only NAME,NAME``); neither is ever recorded; the right answers are
always graded. The proof (``make prove``, ``make test``) grades every mutant.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

from grader.grading import course

# The top-level key of a lab's status (grader.authoring.lab_status), the one key that is not an answer cell.
STATUS_KEY = "status"
SOLUTION_REGION = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n", re.MULTILINE)


@dataclass
class Mutant:
    answer: str
    name: str
    why: str
    replace: list[tuple[str, str]]
    right: bool = False  # a right answer that differs from the solution (must keep its points)
    breaks: tuple = ()  # the exercise's requirements it violates (grader.proof.requirements)
    mistake: str | None = None  # its class of mistake, when it has one (requirements.MISTAKES)
    core: bool = False  # the mistake the exercise exists to teach (Validate must show it)


@dataclass
class Exercise:
    answer: str
    tests: list[str]
    mutants: list[Mutant]
    right: list[Mutant] = field(default_factory=list)
    requirements: dict = field(default_factory=dict)  # id -> what the prompt asks, in one line

    @property
    def variants(self) -> list[Mutant]:
        """Every submission this exercise adds to the round trip: wrong answers, then right ones."""
        return self.mutants + self.right


def load(lab: str) -> dict[str, Exercise]:
    path = course.mutants_path(lab)
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    data.pop(STATUS_KEY, None)
    exercises = {}
    for answer, spec in data.items():
        mutants = [_mutant(lab, answer, m) for m in spec.get("mutants", [])]
        right = [_mutant(lab, answer, m, right=True) for m in spec.get("right", [])]
        exercises[answer] = Exercise(answer, list(spec["tests"]), mutants, right,
                                     dict(spec.get("requirements") or {}))
    return exercises


def _mutant(lab: str, answer: str, spec: dict, right: bool = False) -> Mutant:
    where = f"solutions/{lab}/mutants.yaml: {answer}/{spec.get('name')}"
    if right and "core" in spec:
        raise ValueError(f"{where}: a right answer carries no 'core' (only wrong answers do)")
    if not right and not isinstance(spec.get("core"), bool):
        raise ValueError(f"{where}: a wrong answer needs 'core: true' (the mistake the exercise "
                         f"exists to teach) or 'core: false', got {spec.get('core')!r}")
    breaks = spec.get("breaks") or ()
    return Mutant(answer, spec["name"], spec.get("why", ""), [tuple(r) for r in spec["replace"]], right,
                  (breaks,) if isinstance(breaks, str) else tuple(breaks), spec.get("mistake"),
                  bool(spec.get("core")))


def strip_solution_markers(source: str) -> str:
    """What a learner's finished cell looks like: the solution without nbgrader's markers."""
    return SOLUTION_REGION.sub("", source)


def answer_sources(lab: str) -> dict[str, str]:
    """``{grade_id: learner-style source}`` of every answer cell in the solution notebook."""
    nb = nbformat.read(course.solution_path(lab), as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: strip_solution_markers(c.source)
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}


def apply(source: str, mutant: Mutant) -> str:
    for old, new in mutant.replace:
        count = source.count(old)
        if count != 1:
            raise ValueError(f"mutant {mutant.answer}/{mutant.name}: {old!r} occurs {count} times "
                             "in the solution (must be exactly once)")
        source = source.replace(old, new)
    return source


def submission(lab: str, answers: dict[str, str] | None,
               release: Path | None = None) -> nbformat.NotebookNode:
    """The released notebook (or the one at ``release``) with the given answer cells filled in
    (``None``: left as released)."""
    nb = copy.deepcopy(nbformat.read(release or course.release_path(lab), as_version=4))
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if answers and grade_id in answers:
            cell.source = answers[grade_id]
    return nb


def graded_variants(exercise: Exercise, mutants_per_exercise: int | None = None,
                    only: frozenset | None = None) -> list[Mutant]:
    """The variants of an exercise a round trip grades: its first ``mutants_per_exercise``
    mutants (all when None), or those named in ``only``, and every right answer."""
    chosen = [m for m in exercise.mutants if only is None or m.name in only]
    return chosen[:mutants_per_exercise] + exercise.right


def rounds(lab: str, mutants_per_exercise: int | None = None,
           only: frozenset | None = None) -> list[dict[str, Mutant]]:
    """Round k: ``{answer_grade_id: its k-th graded variant}`` (mutants first, then right answers)
    over every exercise that has one (:func:`graded_variants`)."""
    variants = {a: graded_variants(e, mutants_per_exercise, only) for a, e in load(lab).items()}
    depth = max((len(v) for v in variants.values()), default=0)
    return [{a: v[k] for a, v in variants.items() if k < len(v)} for k in range(depth)]


def not_graded(lab: str, mutants_per_exercise: int | None = None,
               only: frozenset | None = None) -> dict[str, list[str]]:
    """answer grade_id -> the names of its mutants :func:`rounds` leaves out (at that depth, or
    not named in ``only``)."""
    left = {a: [m.name for m in e.mutants if m not in graded_variants(e, mutants_per_exercise, only)]
            for a, e in load(lab).items()}
    return {a: names for a, names in left.items() if names}


def round_answers(lab: str, mutants: dict[str, Mutant]) -> dict[str, str]:
    answers = answer_sources(lab)
    for answer, mutant in mutants.items():
        answers[answer] = apply(answers[answer], mutant)
    return answers
