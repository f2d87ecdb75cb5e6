"""The grader's role packages keep to the imports their docstrings allow.

``grader.workshop`` (the room), ``grader.bench`` (measurements) and ``grader.authoring`` (writing
and publishing labs) are tools around the grading: the code that decides a grade imports none of
them, and no other part of the grader leans on the room or the benchmarks except where named here.
"""
from pathlib import Path

import pytest

from grader.proof.keys import imported_names, recipe_modules

ROOT = Path(__file__).resolve().parents[2]
# module -> the packages it may import although it lives outside them, and why
ALLOWED = {
    # make grade reads the refusals the room's collect wrote beside the submissions
    "grader/class_course.py": {"grader.workshop"},
}


def _grader_imports(path: Path) -> set[str]:
    return {n for n in imported_names(path) if n.startswith("grader.")}


def _outside(package: str) -> list[Path]:
    folder = ROOT / package.replace(".", "/")
    return [p for p in sorted((ROOT / "grader").rglob("*.py")) if folder not in p.parents]


@pytest.mark.parametrize("package", ["grader.workshop", "grader.bench"])
def test_only_named_modules_import_a_role_package(package):
    leaning = []
    for path in _outside(package):
        rel = str(path.relative_to(ROOT))
        hits = {n for n in _grader_imports(path) if n == package or n.startswith(package + ".")}
        if hits and package not in ALLOWED.get(rel, set()):
            leaning.append(f"{rel}: {sorted(hits)}")
    assert leaning == []


def test_the_grading_recipe_holds_no_tool_package():
    recipe = recipe_modules()
    assert recipe and "grader/autograde.py" in recipe
    assert [m for m in recipe if m.startswith(("grader/workshop/", "grader/bench/", "grader/authoring/"))] == []
