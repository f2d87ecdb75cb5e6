"""raylab keeps its two halves apart and its modules small (fast: reads the source, imports nothing).

The top-level modules are the learner half (what lab notebooks call); ``raylab.checks`` is the
judging half (what test cells and tests call to judge an answer). The judging half may import the
learner half, never the other way round. No raylab module imports another in a cycle, counting
imports inside functions (a late import hides a cycle from Python, not from the reader), and no
module only re-exports another's names. Modules stay under 300 lines, functions under 60.

Imports are read with :mod:`ast` (relative imports resolved), not by running the modules.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from house_rules import cycles, too_long

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = SRC / "raylab"
JUDGING = "raylab.checks"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _named_module(dotted: str) -> str | None:
    """The raylab module ``dotted`` names: itself, or its longest prefix that is a module."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in MODULES:
            return ".".join(parts[:end])
    return None


def raylab_imports(source: str, name: str, *, package: bool = False) -> set[str]:
    """The raylab modules that module ``name`` (with ``source``) imports, anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {_named_module(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x / from ..m import y
                here = name.split(".") if package else name.split(".")[:-1]
                here = here[:len(here) - (node.level - 1)]
                base = ".".join(here + ([base] if base else []))
            for alias in node.names:  # from raylab import hints: the module raylab.hints
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else _named_module(base))
    return {m for m in found if m is not None and m != name}


def import_graph() -> dict[str, set[str]]:
    return {name: raylab_imports(path.read_text(), name, package=path.name == "__init__.py")
            for name, path in MODULES.items()}


def _learner_half(name: str) -> bool:
    return name != JUDGING and not name.startswith(JUDGING + ".")


def test_the_reader_sees_imports_inside_functions_and_relative_ones():
    graph = import_graph()
    # capstone_probe imports separate_nodes inside a function, cluster imports hints inside one
    assert "raylab.checks.separate_nodes" in graph["raylab.checks.capstone_probe"]
    assert "raylab.hints" in graph["raylab.cluster"]
    source = "def f():\n    from . import common\n    from ..tuning import max_overlap\n"
    assert raylab_imports(source, "raylab.checks.search") == {"raylab.checks.common", "raylab.tuning"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_learner_half_never_imports_the_judging_half():
    leaks = {name: sorted(m for m in imports if not _learner_half(m))
             for name, imports in import_graph().items() if _learner_half(name)}
    assert {name: found for name, found in leaks.items() if found} == {}


def test_no_import_cycle_among_raylab_modules():
    assert cycles(import_graph()) == []


def test_no_module_only_re_exports():
    shims = [str(p.relative_to(ROOT)) for p in MODULES.values()
             if re.search(r"noqa:[^\n]*\bF401\b", p.read_text())]
    assert shims == [], "import each name from the module that defines it"


def test_modules_and_functions_are_small():
    assert too_long(MODULES) == []
