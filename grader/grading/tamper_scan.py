"""Flag every submission whose code uses a mechanism that can change how *later* cells run.

Learner code and test cells share one kernel, so code in an answer cell can reach the verdict of a
later test cell: an input transformer or an AST transformer rewrites the test before it runs, an
event hook (``pre_run_cell``...) runs code around it, a custom exception handler or a replaced
``showtraceback`` hides its failure, a patched check function, builtin or module changes what it
computes. No check *inside* the kernel can rule these out (the learner's code can patch the check
too), so this scan runs in the grader, on the graded notebook's sources, where learner code cannot
reach it. It reads the learner's cells (every cell that is not the course's: answer cells and
cells the learner added or edited) and flags, for review, any use of:

- the IPython shell (``get_ipython`` beyond a few harmless magics), IPython/ipykernel/Jupyter
  modules, tracing (``sys.settrace``/``setprofile``/``sys.monitoring``), ``sys.modules``/import
  hooks, ``builtins``;
- dynamic code and introspection that can do all of the above out of sight: ``exec``, ``eval``,
  ``compile``, ``__import__``, dynamic imports (``importlib`` beyond ``importlib.metadata``),
  ``ctypes``, ``marshal``, ``pickle`` loads, ``gc`` referrers, frames (``inspect.currentframe``,
  ``sys._getframe``...), dunder attributes such as ``__globals__``/``__code__``/``__dict__``;
- assigning an attribute of an imported module (``raylab.checks.f = ...``, ``np.isclose = ...``);
- rebinding, at the top level, a builtin name or a name a course cell imported (``print = ...``,
  ``check_exercise = lambda *a: None``).

Importing a toolbox module (``sys``, ``inspect``, ``importlib``, ``types``, ``traceback``) cannot
by itself change a later cell, and an environment report reads ``sys.version`` naturally: such a
module is flagged only for its risky members (``TOOLBOX``), or when it is handed around under
another name, where the scan could no longer see which member is used.

A flagged submission is graded as usual and listed for review; its grade is not changed, but the
LMS export holds it until an instructor has looked (``grader/classroom/review.py``). A
learner can still *write* a mechanism this list does not name (README's guarantees say what is
left); the round trips prove that no solution of the course is flagged.
"""
from __future__ import annotations

import ast
import builtins
import json
import re

from grader.grading import pyast

STATE_LINE = "[grader] registered before this test cell ran: "  # grader/grading/nbgrader_ext.py writes it

SAFE_MAGICS = {"time", "timeit", "matplotlib", "pinfo", "pinfo2", "who", "whos", "pwd", "env"}
RISKY_MODULES = {"IPython", "ipykernel", "jupyter_client", "zmq", "traitlets", "nbgrader", "ctypes",
                 "marshal", "builtins", "__builtin__", "gc", "dill", "cloudpickle", "pickle", "code",
                 "codeop", "runpy", "linecache"}
# Modules an honest answer imports for harmless members; what each offers that can change how a
# later cell runs (every member, for importlib, but its metadata and resources readers).
TOOLBOX = {
    "sys": {"settrace", "setprofile", "monitoring", "_getframe", "_current_frames", "modules",
            "meta_path", "path_hooks", "path_importer_cache", "excepthook", "displayhook",
            "addaudithook", "call_tracing", "setrecursionlimit"},
    "inspect": {"currentframe", "stack", "trace", "getouterframes", "getinnerframes"},
    "types": {"CodeType", "FunctionType", "CellType", "MethodType", "FrameType"},
    "traceback": set(),
    "importlib": None,  # None: every member is risky but those in IMPORTLIB_READERS
}
IMPORTLIB_READERS = {"metadata", "resources"}
RISKY_CALLS = {"exec", "eval", "compile", "__import__", "globals", "vars", "locals", "setattr",
               "delattr", "get_ipython", "breakpoint"}
RISKY_ATTRS = {"settrace", "setprofile", "_getframe", "modules", "meta_path", "path_hooks",
               "excepthook", "displayhook", "f_back", "f_globals", "f_locals", "gi_frame",
               "tb_frame", "input_transformers_post", "input_transformers_cleanup",
               "ast_transformers", "set_custom_exc", "showtraceback", "events", "run_cell",
               "user_ns", "loads", "get_referrers", "get_objects"}
RISKY_DUNDERS = {"__globals__", "__code__", "__dict__", "__builtins__", "__subclasses__", "__closure__",
                 "__defaults__", "__kwdefaults__", "__setattr__", "__getattribute__", "__import__",
                 "__reduce__", "__reduce_ex__", "__bases__", "__mro__", "__func__", "__wrapped__",
                 "__loader__", "__spec__"}
BUILTIN_NAMES = set(dir(builtins)) - {"_", "__name__", "__doc__"}
INPUT_HISTORY = re.compile(r"_i{1,3}|_i\d+")  # IPython's _i, _ii, _iii, _i7: sources of earlier cells


def _is_course_cell(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("locked") or (meta.get("grade") and not meta.get("solution")))


def _python(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _parse(source: str):
    try:
        return pyast.parse(_python(source))
    except (SyntaxError, ValueError, RecursionError):
        return None


def _imported_names(tree) -> tuple[set, dict]:
    """(names bound by imports, ``{name: what it was imported from}``)."""
    modules, names = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                bound = a.asname or a.name.split(".")[0]
                modules.add(bound)
                names[bound] = a.name if a.asname else bound
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
                modules.add(a.asname or a.name)  # may be a submodule: attribute writes count too
    return modules, names


def _top_level_bindings(tree) -> set:
    bound = set()
    for node in tree.body:
        targets = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, (ast.For, ast.With)):
            targets = [node.target] if isinstance(node, ast.For) else [i.optional_vars for i in node.items if i.optional_vars]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {a.asname or a.name.split(".")[0] for a in node.names}
        for t in targets:
            bound |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.NamedExpr):
            bound.add(node.target.id)
        elif isinstance(node, ast.Global):
            bound |= set(node.names)
    return bound


def _findings(tree, course_modules: set, course_names: dict) -> set[str]:
    found = set()
    own_modules, own_imports = _imported_names(tree)
    modules = course_modules | own_modules
    found |= _toolbox_findings(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in RISKY_MODULES:
                    found.add(f"imports {name}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RISKY_CALLS:
            found.add(f"calls {node.func.id}()")
        elif isinstance(node, ast.Attribute):
            if node.attr in RISKY_ATTRS:
                if not (node.attr == "loads" and isinstance(node.value, ast.Name) and node.value.id == "json"):
                    found.add(f"uses .{node.attr}")
            if node.attr in RISKY_DUNDERS:
                found.add(f"uses {node.attr}")
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                base = node.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in modules:
                    found.add(f"assigns {ast.unparse(node)} (an attribute of an imported module)")
        elif isinstance(node, ast.Name) and (node.id in ("__builtins__", "__builtin__", "In", "_ih", "Out", "_oh")
                                             or INPUT_HISTORY.fullmatch(node.id)):
            found.add(f"uses {node.id}")  # the shell's record of earlier cells (test cells included)
    for name in _top_level_bindings(tree) & (BUILTIN_NAMES | set(course_names)):
        if name in course_names and own_imports.get(name) == course_names[name]:
            continue  # the same import again (``import ray`` in an answer cell): harmless
        found.add(f"rebinds {name!r} ({'a builtin' if name in BUILTIN_NAMES else 'imported by the course'})")
    return found


def _risky_member(module: str, member: str) -> bool:
    risky = TOOLBOX[module]
    return member not in IMPORTLIB_READERS if risky is None else member in risky


def _toolbox_findings(tree) -> set[str]:
    """Risky members of the toolbox modules: imported by name, reached as ``module.member``, or
    out of sight because the module itself is passed around (``m = sys``, ``getattr(sys, ...)``)."""
    found, aliases = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                root, _, rest = a.name.partition(".")
                if root in TOOLBOX:
                    aliases[a.asname or root] = root
                    if rest and _risky_member(root, rest.split(".")[0]):
                        found.add(f"imports {a.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            root, _, rest = node.module.partition(".")
            if root in TOOLBOX:
                members = [rest.split(".")[0]] if rest else [a.name for a in node.names]
                found |= {f"imports {node.module}.{m}" if rest else f"imports {m} from {root}"
                          for m in members if m == "*" or _risky_member(root, m)}
    reached = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            reached.add(id(node.value))
            if _risky_member(aliases[node.value.id], node.attr):
                found.add(f"uses {aliases[node.value.id]}.{node.attr}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in aliases and id(node) not in reached \
                and isinstance(node.ctx, ast.Load):
            found.add(f"hands the module {aliases[node.id]} around")
    return found


def flags(nb) -> list[str]:
    """Review flags for an nbformat notebook (the graded one: course cells as restored)."""
    course_modules, course_names = set(), {}
    learner = []
    for index, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code":
            continue
        tree = _parse(cell.source)
        if _is_course_cell(cell):
            if tree is not None:
                m, n = _imported_names(tree)
                course_modules |= m
                course_names.update(n)
        else:
            learner.append((index, cell.source, tree))
    out = []
    for index, source, tree in learner:
        if tree is None:
            continue  # it cannot run either: a SyntaxError in the cell
        found = _findings(_without_safe_magics(tree), course_modules, course_names)
        if found:
            out.append(f"cell {index} uses a mechanism that can change how later cells run: "
                       + "; ".join(sorted(found)[:4]) + " (grade kept; review)")
    return out


def _without_safe_magics(tree):
    """Drop ``get_ipython().run_line_magic('<safe>', ...)`` statements (``%time`` and friends)."""
    class Strip(ast.NodeTransformer):
        def visit_Expr(self, node):
            call = node.value
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr in ("run_line_magic", "run_cell_magic")
                    and isinstance(call.func.value, ast.Call) and isinstance(call.func.value.func, ast.Name)
                    and call.func.value.func.id == "get_ipython" and call.args
                    and isinstance(call.args[0], ast.Constant) and call.args[0].value in SAFE_MAGICS):
                return None
            return node
    return Strip().visit(tree)


def output_flags(autograded_text: str) -> list[str]:
    """Flags the in-kernel checks left in the graded notebook (grader/grading/nbgrader_ext.py)."""
    import nbformat

    nb = nbformat.reads(autograded_text, as_version=4)
    out = []
    for cell in nb.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error" and o.get("ename") == "TestCellTampered":
                out.append(f"test cell {grade_id} tampered with")
            if o.get("output_type") == "stream" and o.get("text", "").startswith(STATE_LINE):
                findings = o["text"][len(STATE_LINE):].strip()
                out.append(f"test cell {grade_id}: {STATE_LINE.replace('[grader] ', '')}{findings}")
    flags_fb = [f for f in out if "tampered" in f] + [f for f in out if "tampered" not in f]
    return list(dict.fromkeys(flags_fb))


def scan_file(path) -> list[str]:
    import nbformat

    return flags(nbformat.read(path, as_version=4))


if __name__ == "__main__":
    import sys

    for p in sys.argv[1:]:
        print(p, json.dumps(scan_file(p), indent=1))
