"""Each exercise's requirements, traced to the checks that enforce them and the mutants that break them.

An exercise in ``solutions/<lab>/mutants.yaml`` lists every requirement its prompt states
(``requirements: {id: one line}``), and each of its mutants says which of them it breaks
(``breaks: [id, ...]``). In the exercise's test cells a comment line ``# requirement: <id>`` names
the requirement of every line below it, up to the next such comment, so each check names what it
enforces. Two ways this can go wrong, both found here:

- a requirement without a check: a wrong answer waiting to pass (:func:`static_problems`);
- a check without a requirement: a right answer waiting to fail (:func:`static_problems`).

The proof adds the third: a mutant must first fail on a line whose requirement it breaks, so it is
caught by a check about its mistake, not by accident (:func:`link_problems`, judged on every
grading, stored or fresh).
"""
from __future__ import annotations

import ast
import re

import nbformat

from grader.grading import course

MARKER = re.compile(r"^\s*# requirement: ([a-z0-9_]+)\s*$")
# Lines IPython reads but Python does not (magics, shell escapes) are blanked before parsing.
MAGIC = re.compile(r"^\s*[%!].*$", re.MULTILINE)
# The classes of wrong answers a mutant may be tagged with (``mistake:``).
MISTAKES = frozenset({
    "which_checkpoint", "multi_node_ranks", "multi_worker_recovery", "gpu_path", "value_timing",
    "edge_case", "prescribed_mechanism", "non_default_setting", "exact_config", "error_path",
    "data_leakage",
})


def markers(source: str) -> list[tuple[int, str]]:
    """(1-based line, requirement id) of every marker comment in a test cell, in order."""
    return [(n, m.group(1)) for n, text in enumerate(source.splitlines(), 1) if (m := MARKER.match(text))]


def requirement_at(source: str, line: int) -> str | None:
    """The requirement whose marker governs ``line`` of a test cell (None above the first)."""
    found = None
    for at, requirement in markers(source):
        if at > line:
            break
        found = requirement
    return found


def check_calls(source: str) -> list[tuple[int, str]]:
    """(line, name) of every call in a test cell whose name starts with ``check`` or ``_check``:
    the course's checks (``raylab.checks``) and the check helpers of its modules."""
    calls = []
    for node in ast.walk(ast.parse(MAGIC.sub("", source))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name.startswith(("check", "_check")):
                calls.append((node.lineno, name))
    return sorted(calls)


def test_sources(lab: str) -> dict[str, str]:
    """grade_id -> source of every autograded test cell of the lab's solution notebook (hidden
    tests included), as the grader runs it."""
    nb = nbformat.read(course.solution_path(lab), as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}


def static_problems(exercises: dict, sources: dict) -> list[str]:
    """Requirements without a check, checks without a requirement, markers and mutants naming a
    requirement the exercise does not list, mutants that name none, unknown mistake classes."""
    problems = []
    for answer, exercise in exercises.items():
        listed = set(exercise.requirements)
        if not listed:
            problems.append(f"{answer}: lists no requirements")
        enforced = set()
        for test_id in exercise.tests:
            source = sources.get(test_id, "")
            for line, requirement in markers(source):
                if requirement not in listed:
                    problems.append(f"{test_id} line {line}: marker names {requirement!r}, "
                                    f"not a requirement of {answer}")
            for line, name in check_calls(source):
                requirement = requirement_at(source, line)
                if requirement is None:
                    problems.append(f"{test_id} line {line}: {name}(...) sits below no requirement marker")
                enforced.add(requirement)
        problems += [f"{answer}: requirement {r!r} has no check below its marker" for r in sorted(listed - enforced)]
        for mutant in exercise.mutants:
            if not mutant.breaks:
                problems.append(f"{answer}/{mutant.name}: names no requirement it breaks")
            problems += [f"{answer}/{mutant.name}: breaks {r!r}, not a requirement of {answer}"
                         for r in mutant.breaks if r not in listed]
            if mutant.mistake is not None and mutant.mistake not in MISTAKES:
                problems.append(f"{answer}/{mutant.name}: unknown mistake class {mutant.mistake!r}")
    return problems


def link_problems(graded: dict, exercises: dict, sources: dict) -> list[str]:
    """A mutant must first fail, in each test cell of its exercise, on a line whose requirement
    it breaks. A failure the traceback places on no line of the cell is not judged here."""
    problems = []
    for g in graded.values():
        for answer, name in g.mutated.items():
            mutant = next(m for m in exercises[answer].mutants if m.name == name)
            for test_id in exercises[answer].tests:
                line = g.lines.get(test_id)
                if line is None:
                    continue
                requirement = requirement_at(sources.get(test_id, ""), line)
                if requirement not in mutant.breaks:
                    problems.append(f"mutant {answer}/{name}: first failed {test_id} line {line}, under "
                                    f"requirement {requirement!r}, which it does not break "
                                    f"(breaks {list(mutant.breaks)})")
    return problems


def table(lab: str) -> str:
    """Markdown: every requirement of every exercise of ``lab``, its checks (visible or hidden,
    by line) and the mutants that break it: what an instructor reads to see what is graded."""
    from grader.proof import mutants

    sources = test_sources(lab)
    rows = ["| exercise | requirement | what the prompt asks | checks (line: v visible, h hidden) | mutants that break it |",
            "|---|---|---|---|---|"]
    for answer, exercise in mutants.load(lab).items():
        for requirement, says in exercise.requirements.items():
            checks = []
            for test_id in exercise.tests:
                source = sources.get(test_id, "")
                hidden_at = next((n for n, text in enumerate(source.splitlines(), 1) if "BEGIN HIDDEN TESTS" in text),
                                 None)
                checks += [f"{line}{'h' if hidden_at and line > hidden_at else 'v'}"
                           for line, _ in check_calls(source) if requirement_at(source, line) == requirement]
            breaking = [m.name for m in exercise.mutants if requirement in m.breaks]
            rows.append(f"| {answer[:-len('_answer')]} | {requirement} | {says} | {' '.join(checks)} | "
                        f"{', '.join(breaking) or '-'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    import sys

    for name in sys.argv[1:] or course.labs():
        print(f"\n## {name}\n\n{table(name)}")
