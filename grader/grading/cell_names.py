"""What a notebook code cell binds and reads, found with ``ast`` and ``symtable``.

:mod:`grader.grading.trim` uses it to find the demo cells nothing graded reads. The analysis errs on
the side of reading: reads inside function bodies count, and a cell that cannot be parsed binds and
reads nothing it can vouch for (the caller keeps it).
"""
from __future__ import annotations

import ast

from grader.grading import pyast

# What a cell may do with ``os.environ`` and still be skippable: read it. Any other use (an item
# assigned or deleted, a mutating method, the mapping handed to a function or bound to a name) may
# change the environment later cells run in, so the cell is kept.
ENVIRON_READS = ("get", "items", "keys", "values", "copy", "__contains__", "__getitem__")


def clean(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))


def parse_cell(source: str):
    try:
        return pyast.parse(clean(source))
    except SyntaxError:
        return None


def bound(tree) -> set[str]:
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


def imports_of(tree) -> dict[str, set[tuple]]:
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


def only_imported(tree, name: str, imports: dict) -> bool:
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


def external_reads(source: str, tree) -> set[str]:
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
    return reads | (_global_reads_in_nested_scopes(table) - bound(tree))
