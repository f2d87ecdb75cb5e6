"""`make new-lab`: a skeleton that already has the course's shape and mutants that apply."""
import re

import nbformat
import pytest

from grader import course, mutants, new_lab


@pytest.fixture
def scratch_course(tmp_path, monkeypatch):
    monkeypatch.setattr(course, "ROOT", tmp_path)
    monkeypatch.setattr(course, "SOLUTIONS", tmp_path / "solutions")
    monkeypatch.setattr(mutants, "MUTANTS_DIR", tmp_path / "grader" / "mutants")
    (tmp_path / "solutions" / "00_lab_setup").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "solutions" / "00_lab_setup" / "00_lab_setup.ipynb")
    (tmp_path / "grader" / "mutants").mkdir(parents=True)
    return tmp_path


def test_skeleton_has_the_labs_shape_and_its_mutants_apply(scratch_course):
    new_lab.create("11_ray_data")
    nb = nbformat.read(course.solution_path("11_ray_data"), as_version=4)
    title = nb.cells[0].source
    assert title.startswith("# 11 · Ray data")
    assert re.search(r"\*\*Your time:\*\* about \d+ minutes .*\*\*Machine time:\*\* about \d+ s", title)
    ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells]
    assert ids[1] == "lab11_setup" and ids[-1] == "lab11_teardown"
    exercises = mutants.load("11_ray_data")
    answers = mutants.answer_sources("11_ray_data")
    for answer, exercise in exercises.items():
        assert len(exercise.mutants) >= 2 and set(exercise.tests) <= set(ids)
        for mutant in exercise.mutants:
            assert mutants.apply(answers[answer], mutant) != answers[answer]


def test_names_and_numbers_are_checked(scratch_course):
    with pytest.raises(SystemExit, match="must look like"):
        new_lab.create("Ray Data")
    with pytest.raises(SystemExit, match="exists already"):
        new_lab.create("00_again")
