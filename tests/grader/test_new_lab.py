"""`make new-lab`: a skeleton that already has the course's shape and mutants that apply, marked
in progress until its author deletes the mark, and left out of every release until then."""
import json
import re

import nbformat
import pytest

from grader.authoring import lab_status, new_lab
from grader.grading import course
from grader.proof import mutants

REPOSITORY = course.ROOT  # nbgrader runs here, with the course's configuration


@pytest.fixture
def scratch_course(tmp_path, monkeypatch):
    monkeypatch.setattr(course, "ROOT", tmp_path)
    monkeypatch.setattr(course, "SOLUTIONS", tmp_path / "solutions")
    (tmp_path / "solutions" / "00_lab_setup").mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "solutions" / "00_lab_setup" / "00_lab_setup.ipynb")
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


# The lab in progress (grader.authoring.lab_status): marked by make new-lab, checked as a draft, never released.

def test_a_new_lab_is_in_progress_until_the_mark_is_deleted(scratch_course):
    new_lab.create("11_ray_data")
    assert lab_status.in_progress("11_ray_data") and not lab_status.in_progress("00_lab_setup")
    assert lab_status.labs_in_progress() == ["11_ray_data"]
    assert lab_status.finished_labs() == ["00_lab_setup"]
    exercises = mutants.load("11_ray_data")
    assert list(exercises) == ["lab11_double_answer"], "the mark is not an exercise"
    path = course.mutants_path("11_ray_data")
    assert path == scratch_course / "solutions" / "11_ray_data" / "mutants.yaml"
    lines = path.read_text().splitlines()
    assert lines.count(lab_status.MARK) == 1
    path.write_text("\n".join(line for line in lines if line != lab_status.MARK) + "\n")
    assert not lab_status.in_progress("11_ray_data")
    assert lab_status.finished_labs() == ["00_lab_setup", "11_ray_data"]
    assert mutants.load("11_ray_data") == exercises


def test_a_status_other_than_in_progress_is_refused(scratch_course):
    course.mutants_path("00_lab_setup").write_text("status: done\n")
    with pytest.raises(ValueError, match="the only status is 'in progress'"):
        lab_status.in_progress("00_lab_setup")


def test_the_checklist_ends_with_deleting_the_mark_after_prove_and_bench(scratch_course, capsys):
    assert new_lab.main(["11_ray_data"]) == 0
    steps = re.split(r"\n  (?=\d\. )", capsys.readouterr().out)
    last = steps[-1]
    assert "remove the in-progress mark" in last and lab_status.MARK in last and "make release" in last
    earlier = "\n".join(steps[:-1])
    assert "make prove LAB=11_ray_data" in earlier and "grader.bench.labs 11_ray_data" in earlier


def test_the_skeleton_is_a_well_formed_draft(scratch_course, tmp_path, monkeypatch):
    """What the fast tests check of a draft holds for the skeleton: nbgrader generates a learner copy
    with the course's header and no solutions or hidden tests, every requirement is traced both
    ways, every mutant has a course-format name and still compiles."""
    from grader.proof import requirements

    new_lab.create("11_ray_data")
    monkeypatch.setattr(course, "ROOT", REPOSITORY)
    run = course.generate("11_ray_data", tmp_path / "grading", release_dir=tmp_path / "release",
                          source_dir=course.SOLUTIONS)
    assert run.returncode == 0, run.output[-2000:]
    learner = nbformat.read(tmp_path / "release" / "11_ray_data" / "11_ray_data.ipynb", as_version=4)
    assert re.search(r"^\*\*Your time:\*\* about \d+ minutes \(reading and exercises\)\. "
                     r"\*\*Machine time:\*\* about \d+ s on 2 CPU cores\.$", learner.cells[0].source, re.M)
    assert not [c for c in learner.cells if "BEGIN SOLUTION" in c.source or "HIDDEN TESTS" in c.source]
    exercises = mutants.load("11_ray_data")
    assert requirements.static_problems(exercises, requirements.test_sources("11_ray_data")) == []
    answers = mutants.answer_sources("11_ray_data")
    for answer, exercise in exercises.items():
        for m in exercise.variants:
            assert re.fullmatch(r"[a-z][a-z0-9_]+", m.name) and len(m.name) > 8, m.name
            compile(mutants.apply(answers[answer], m), m.name, "exec")


def test_release_leaves_a_lab_in_progress_out(scratch_course, monkeypatch, tmp_path):
    from grader.authoring import release

    released = []
    monkeypatch.setattr(release, "release", lambda labs, **kw: released.extend(labs))
    monkeypatch.setattr(release, "PUBLISHED", tmp_path / "published.json")
    new_lab.create("11_ray_data")
    assert release.main([]) == 0
    assert released == ["00_lab_setup"]
    assert list(json.loads((tmp_path / "published.json").read_text())) == ["00_lab_setup"]
    with pytest.raises(SystemExit, match="11_ray_data: in progress, so not released"):
        release.main(["11_ray_data"])
    assert released == ["00_lab_setup"]


def test_the_workshop_offers_no_lab_in_progress(scratch_course):
    from grader.workshop import up as workshop

    new_lab.create("11_ray_data")
    assert workshop.offered_labs([]) == ["00_lab_setup"]
    assert workshop.offered_labs(["00_lab_setup"]) == ["00_lab_setup"]
    with pytest.raises(SystemExit, match="in progress, so not offered to learners"):
        workshop.offered_labs(["11_ray_data"])
    with pytest.raises(SystemExit, match="no such lab: 99_nope"):
        workshop.offered_labs(["99_nope"])
