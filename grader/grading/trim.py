"""Which demo cells of a lab can be left out when the round trip grades its wrong answers.

The round trip (``grader.proof.roundtrip``) grades the solution with every cell, so every demo is proven
to run. The untouched copy and the mutant rounds only have to show that the *tests* catch wrong
answers; a demo cell that defines nothing a test, an answer or another needed cell reads cannot
change that outcome, and skipping it saves minutes of Ray runs per round.

A cell is kept when it is graded, an answer, the setup or the teardown, when it touches the
process environment, when it cannot be parsed, or when a kept cell reads a name it binds (found
with ``ast``; reads inside function bodies count too, so the analysis errs on the side of keeping).
Importing again what an earlier cell already imported under the same name (``import raylab.plots``
after ``import raylab``, the same ``from m import x`` twice) binds the same object, so such a
re-import does not make its cell needed.
A mistake here cannot hide a wrong answer: a test that needed a skipped cell would fail with a
``NameError``, which the round trip reports as a problem (a crash is not a caught mutant).
"""
from __future__ import annotations

import ast
import copy

import nbformat

from grader.grading import cell_names

SKIPPED = "# (demo cell not run when grading: no test, answer or later cell reads what it makes)\n"
ALWAYS_KEPT_SUFFIXES = ("_setup", "_teardown")
SIDE_EFFECT_MARKERS = ("putenv", "unsetenv", "sys.path", "chdir(")
# Trimming pays only when a skippable cell runs something slow: a Train or Tune run, a child
# process, a simulated cluster, a timed wait, `ray status` (directly or through a function the
# notebook defines around it).
HEAVY_MARKERS = (".fit(", "run_snippet(", "run_in_child(", "Cluster(", ".wait(timeout", "cluster_status(",
                 "time.sleep(")
# An answer that looks names up at run time could read what a skipped cell binds without naming it:
# such a submission is graded with every cell.
DYNAMIC_LOOKUPS = ("globals(", "locals(", "vars(", "eval(", "exec(", "__main__", "get_ipython",
                   "sys.modules", "__builtins__", "_ih", "_oh", "In[", "Out[")


def _meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def skippable(nb, also: frozenset | set = frozenset()) -> list[str]:
    """grade_ids of the code cells a wrong-answer round may leave out, in notebook order.

    ``also``: graded or answer cells that may be left out too (the cells of exercises a mutant
    round does not grade); like a demo, each is kept when a kept cell reads a name it binds."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    info = []
    for cell in cells:
        meta, tree = _meta(cell), cell_names.parse_cell(cell.source)
        grade_id = meta.get("grade_id", "")
        graded = (meta.get("grade") or meta.get("solution")) and grade_id not in also
        candidate = (tree is not None and not graded
                     and not grade_id.endswith(ALWAYS_KEPT_SUFFIXES)
                     and not any(marker in cell.source for marker in SIDE_EFFECT_MARKERS)
                     and not cell_names.changes_environ(tree))
        imports = cell_names.imports_of(tree) if tree else {}
        bound = cell_names.bound(tree) if tree else set()
        info.append({"id": grade_id, "candidate": candidate, "bound": bound,
                     "read": cell_names.external_reads(cell_names.clean(cell.source), tree) if tree else set(),
                     "reimports": {n: imports[n] for n in bound if tree and cell_names.only_imported(tree, n, imports)}})
    needed = [not i["candidate"] for i in info]
    # Walk back from every needed cell to the cells that last bound the names it reads. A cell
    # that only re-imports what an earlier cell imported under that name is passed over.
    stack = [k for k, keep in enumerate(needed) if keep]
    while stack:
        k = stack.pop()
        for name in info[k]["read"]:
            for j in range(k - 1, -1, -1):
                if name in info[j]["bound"]:
                    again = info[j]["reimports"].get(name)
                    before = next((i for i in range(j - 1, -1, -1) if name in info[i]["bound"]), None)
                    if (again and not needed[j] and before is not None
                            and again <= info[before]["reimports"].get(name, set())):
                        continue
                    if not needed[j]:
                        needed[j] = True
                        stack.append(j)
                    break
    return [i["id"] for i, keep in zip(info, needed) if not keep]


def _heavy_functions(nb) -> set[str]:
    """Names of the functions the notebook defines whose bodies run something slow, directly or
    through another such function (``run_ddp`` wraps ``trainer.fit()``)."""
    bodies = {}
    for cell in nb.cells:
        tree = cell_names.parse_cell(cell.source) if cell.cell_type == "code" else None
        for node in (tree.body if tree else []):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bodies[node.name] = ast.get_source_segment(cell_names.clean(cell.source), node) or ""
    heavy = {name for name, body in bodies.items() if any(m in body for m in HEAVY_MARKERS)}
    grew = True
    while grew:
        more = {name for name, body in bodies.items() if name not in heavy
                and any(f"{h}(" in body for h in heavy)}
        heavy |= more
        grew = bool(more)
    return heavy


def is_heavy(source: str, heavy_functions: set[str] = frozenset()) -> bool:
    return (any(marker in source for marker in HEAVY_MARKERS)
            or any(f"{name}(" in source for name in heavy_functions))


def heavy_skippable(nb) -> list[str]:
    """The skippable demo cells, if at least one of them runs something heavy (else none)."""
    skip = skippable(nb)
    functions = _heavy_functions(nb)
    heavy = [c for c in nb.cells if _meta(c).get("grade_id") in skip and is_heavy(c.source, functions)]
    return skip if heavy else []


def grading_skips(solution_nb, submission_nb) -> list[str]:
    """The demo cells a class grader may leave out of one submission's autograde run.

    The analysis runs on the instructor's notebook with the learner's answer cells in place (the
    locked cells are restored from the gradebook anyway), so a demo cell that the learner's own
    answer reads is kept even when the solution does not read it. Answers that cannot be parsed or
    that look names up at run time (``globals()``, ``eval``, ...) get every cell.
    """
    merged = _with_answers(solution_nb, submission_nb)
    return [] if merged is None else heavy_skippable(merged)


def round_skips(solution_nb, submission_nb, not_graded: set[str]) -> list[str]:
    """The cells one mutant round may leave out: every demo cell nothing kept reads (heavy or
    not), and the answer and test cells of the exercises the round does not grade
    (``not_graded``: their grade_ids), unless a kept cell reads what they bind. Same safety
    rules as :func:`grading_skips` (answers that look names up at run time keep every cell)."""
    merged = _with_answers(solution_nb, submission_nb)
    return [] if merged is None else skippable(merged, also=set(not_graded))


def _with_answers(solution_nb, submission_nb):
    """The solution notebook with the submission's answer cells in place (None: an answer that
    cannot be parsed or that looks names up at run time)."""
    answers = {_meta(c)["grade_id"]: c.source for c in submission_nb.cells
               if _meta(c).get("solution") and _meta(c).get("grade_id")}
    for source in answers.values():
        if cell_names.parse_cell(source) is None or any(lookup in source for lookup in DYNAMIC_LOOKUPS):
            return None
    merged = copy.deepcopy(solution_nb)
    for cell in merged.cells:
        grade_id = _meta(cell).get("grade_id")
        if _meta(cell).get("solution") and grade_id in answers:
            cell.source = answers[grade_id]
    return merged


def trimmed(nb, skip: list[str] | None = None):
    """A copy of ``nb`` whose skippable demo cells (or the ``skip`` ones) only hold a comment."""
    out = copy.deepcopy(nb)
    skip = set(skippable(out) if skip is None else skip)
    for cell in out.cells:
        if cell.cell_type == "code" and _meta(cell).get("grade_id") in skip:
            cell.source = SKIPPED
            cell.outputs = []
    return out


def main(argv=None) -> int:
    import sys

    from grader.grading import course

    for lab in (argv or sys.argv[1:]) or course.labs():
        nb = nbformat.read(course.solution_path(lab), as_version=4)
        print(f"{lab}: {', '.join(skippable(nb)) or '(nothing to skip)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
