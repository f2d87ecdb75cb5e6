"""Which demo cells of a lab can be left out when the round trip grades its wrong answers.

The round trip (``grader.roundtrip``) grades the solution with every cell, so every demo is proven
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

from grader import pyast

SKIPPED = "# (demo cell not run when grading: no test, answer or later cell reads what it makes)\n"
ALWAYS_KEPT_SUFFIXES = ("_setup", "_teardown")
SIDE_EFFECT_MARKERS = ("putenv", "unsetenv", "sys.path", "chdir(")
# What a cell may do with ``os.environ`` and still be skippable: read it. Any other use (an item
# assigned or deleted, a mutating method, the mapping handed to a function or bound to a name) may
# change the environment later cells run in, so the cell is kept.
ENVIRON_READS = ("get", "items", "keys", "values", "copy", "__contains__", "__getitem__")
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


def _clean(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))


def _tree(source: str):
    try:
        return pyast.parse(_clean(source))
    except SyntaxError:
        return None


def _bound(tree) -> set[str]:
    """Names a cell binds at the top level of the notebook's namespace."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                    names.add(sub.id)
                elif isinstance(sub, (ast.Global,)):
                    names.update(sub.names)
    return names


def _imports(tree) -> dict[str, set[tuple]]:
    """name -> what the cell's top-level imports bind to it: ("module", top-level package) for
    ``import a.b`` / ``import a``, ("from", module, attribute) for ``from m import x``."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name if alias.asname else alias.name.split(".")[0]
                found.setdefault(alias.asname or target, set()).add(("module", target))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:
                found.setdefault(alias.asname or alias.name, set()).add(("from", node.module, alias.name))
    return found


def _is_environ(node, environ_names: set[str]) -> bool:
    """``os.environ`` (any module alias of ``os``) or a name ``from os import environ`` bound."""
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return True
    return isinstance(node, ast.Name) and node.id in environ_names


def changes_environ(tree) -> bool:
    """True when the cell (function bodies included: they may run in this process later) does
    anything to ``os.environ`` but read it: ``os.environ["X"]`` and ``os.environ.get("X")`` in a
    Ray worker's function, or a print of a variable, leave the kernel's environment as it was."""
    if tree is None:
        return False
    environ_names = {alias.asname or alias.name for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module == "os"
                     for alias in node.names if alias.name == "environ"}
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if not _is_environ(node, environ_names):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load):
            continue  # os.environ["X"]
        if (isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in ENVIRON_READS
                and isinstance(parents.get(parent), ast.Call) and parents[parent].func is parent):
            continue  # os.environ.get("X"), .items(), ...
        if isinstance(parent, ast.Compare) and node in parent.comparators:
            continue  # "X" in os.environ
        return True
    return False


def _only_imported(tree, name: str, imports: dict) -> bool:
    """True when the cell binds ``name`` by import statements only (no assignment, def, ...)."""
    if name not in imports:
        return False
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return False
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, (ast.Store, ast.Del)):
                return False
            if isinstance(sub, (ast.Import, ast.ImportFrom, ast.Global)):
                return False  # nested imports/global statements: do not reason about them
    return True


def _module_level(tree):
    """The nodes of the cell's own scope, without the bodies of functions, lambdas, classes and
    comprehensions (those have scopes of their own)."""
    scoped = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
              ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, scoped):
            # decorators, defaults and the first iterable are evaluated in the cell's scope
            for sub in getattr(node, "decorator_list", []):
                todo.append(sub)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo.extend(node.args.defaults + [d for d in node.args.kw_defaults if d])
            if hasattr(node, "generators"):
                todo.append(node.generators[0].iter)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _global_reads_in_nested_scopes(table) -> set[str]:
    names = set()
    for child in table.get_children():
        for sym in child.get_symbols():
            if sym.is_referenced() and sym.is_global():
                names.add(sym.get_name())
        names |= _global_reads_in_nested_scopes(child)
    return names


def _external_reads(source: str, tree) -> set[str]:
    """Names the cell reads that an earlier cell must have bound."""
    first = {}
    for node in _module_level(tree):
        if isinstance(node, ast.Name):
            key = (node.lineno, node.col_offset)
            if node.id not in first or key < first[node.id][0]:
                first[node.id] = (key, isinstance(node.ctx, ast.Load))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                key = (node.lineno, node.col_offset)
                if name not in first or key < first[name][0]:
                    first[name] = (key, False)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            key = (node.lineno, node.col_offset)
            if node.name not in first or key < first[node.name][0]:
                first[node.name] = (key, False)
    # `x += 1` reads x first although the node is a Store
    for node in _module_level(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            first[node.target.id] = ((node.lineno, node.col_offset), True)
    reads = {name for name, (_, is_load) in first.items() if is_load}
    import symtable

    try:
        table = symtable.symtable(source, "cell", "exec")
    except SyntaxError:
        return reads | set(first)
    return reads | (_global_reads_in_nested_scopes(table) - _bound(tree))


def skippable(nb, also: frozenset | set = frozenset()) -> list[str]:
    """grade_ids of the code cells a wrong-answer round may leave out, in notebook order.

    ``also``: graded or answer cells that may be left out too (the cells of exercises a mutant
    round does not grade); like a demo, each is kept when a kept cell reads a name it binds."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    info = []
    for cell in cells:
        meta, tree = _meta(cell), _tree(cell.source)
        grade_id = meta.get("grade_id", "")
        graded = (meta.get("grade") or meta.get("solution")) and grade_id not in also
        candidate = (tree is not None and not graded
                     and not grade_id.endswith(ALWAYS_KEPT_SUFFIXES)
                     and not any(marker in cell.source for marker in SIDE_EFFECT_MARKERS)
                     and not changes_environ(tree))
        imports = _imports(tree) if tree else {}
        bound = _bound(tree) if tree else set()
        info.append({"id": grade_id, "candidate": candidate, "bound": bound,
                     "read": _external_reads(_clean(cell.source), tree) if tree else set(),
                     "reimports": {n: imports[n] for n in bound if tree and _only_imported(tree, n, imports)}})
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
        tree = _tree(cell.source) if cell.cell_type == "code" else None
        for node in (tree.body if tree else []):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bodies[node.name] = ast.get_source_segment(_clean(cell.source), node) or ""
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
        if _tree(source) is None or any(lookup in source for lookup in DYNAMIC_LOOKUPS):
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

    from grader import course

    for lab in (argv or sys.argv[1:]) or course.labs():
        nb = nbformat.read(course.solution_path(lab), as_version=4)
        print(f"{lab}: {', '.join(skippable(nb)) or '(nothing to skip)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
