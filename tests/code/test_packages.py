"""The grader's role packages keep to the imports their docstrings allow, and stay small.

``grader.grading`` (the code that can change a grade) imports no other part of the grader;
``grader.proof`` and ``grader.classroom`` lean on it; the tools around them (``workshop``, ``bench``,
``authoring``) are imported by nothing that decides a grade.
"""
import ast
from pathlib import Path

import pytest

from grader.proof.keys import imported_names, recipe_modules
from house_rules import cycles, too_long

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("grading", "proof", "classroom", "workshop", "bench", "authoring")
# package -> the other grader packages its modules may import (each package's docstring says why)
MAY_IMPORT = {
    "grading": set(),
    "proof": {"grading"},
    "classroom": {"grading"},
    "workshop": {"grading", "authoring"},
    "bench": {"grading", "proof", "classroom", "authoring"},
    "authoring": {"grading", "proof"},
}
# module -> a package it may import beyond its own package's row, and why
EXCEPTIONS = {
    # make grade reads the refusals the room's collect wrote beside the submissions
    "grader/classroom/course_folder.py": {"workshop"},
}


def _modules() -> list[Path]:
    return sorted(p for p in (ROOT / "grader").rglob("*.py") if "__pycache__" not in p.parts)


def _package(path: Path) -> str:
    return path.relative_to(ROOT / "grader").parts[0]


def _imported_packages(path: Path) -> set[str]:
    return {name.split(".")[1] for name in imported_names(path)
            if name.startswith("grader.") and name.split(".")[1] in PACKAGES}


def test_every_grader_module_lives_in_a_role_package():
    loose = [p.name for p in (ROOT / "grader").glob("*.py") if p.name != "__init__.py"]
    assert loose == []
    assert sorted(p.name for p in (ROOT / "grader").iterdir() if (p / "__init__.py").exists()) == sorted(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_what_its_row_allows(package):
    leaning = []
    for path in _modules():
        if path.parent == ROOT / "grader" or _package(path) != package:
            continue
        rel = str(path.relative_to(ROOT))
        extra = _imported_packages(path) - {package} - MAY_IMPORT[package] - EXCEPTIONS.get(rel, set())
        if extra:
            leaning.append(f"{rel}: {sorted(extra)}")
    assert leaning == []


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_says_what_it_may_import(package):
    doc = ast.get_docstring(ast.parse((ROOT / "grader" / package / "__init__.py").read_text())) or ""
    assert "May import" in doc


def test_the_grading_recipe_is_the_grading_package():
    recipe = recipe_modules()
    assert "grader/grading/autograde.py" in recipe and "grader/grading/nbgrader_ext.py" in recipe
    assert [m for m in recipe if not m.startswith("grader/grading/") and m != "grader/__init__.py"] == []


def _launches_nbgrader_autograde(tree) -> bool:
    """A list of arguments that holds "autograde", or a call whose first argument is "autograde"
    (``nbgrader("autograde", ...)``): nbgrader's subcommand."""
    for node in ast.walk(tree):
        items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else \
            node.args[:1] if isinstance(node, ast.Call) else []
        if any(isinstance(i, ast.Constant) and i.value == "autograde" for i in items):
            return True
    return False


def test_one_module_launches_nbgrader_autograde():
    launchers = [str(p.relative_to(ROOT)) for folder in ("grader", "src", "tests")
                 for p in sorted((ROOT / folder).rglob("*.py"))
                 if _launches_nbgrader_autograde(ast.parse(p.read_text()))]
    assert launchers == ["grader/grading/autograde.py"]


def test_the_launcher_detector_sees_the_usual_spellings():
    for source in ('cmd = ["nbgrader", "autograde", lab]', 'course.nbgrader("autograde", lab)',
                   'args = ("autograde", lab, "--force")'):
        assert _launches_nbgrader_autograde(ast.parse(source)), source
    for source in ('env = {"NBGRADER_EXECUTION": "autograde"}', 'setenv("NBGRADER_EXECUTION", "autograde")'):
        assert not _launches_nbgrader_autograde(ast.parse(source)), source


def test_no_import_cycle_among_grader_modules():
    names = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in _modules()}
    edges = {name: {n for n in imported_names(path) if n in names and n != name} for name, path in names.items()}
    assert cycles(edges) == []


def test_modules_and_functions_stay_readable():
    assert too_long({str(p.relative_to(ROOT)): p for p in _modules()}) == []
