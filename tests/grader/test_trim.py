"""grader.grading.trim: which demo cells the wrong-answer rounds of a round trip may leave out."""
import nbformat
import pytest

from grader.grading import course, trim


def _nb(*cells):
    """cells: (grade_id, source) for demo cells, or (grade_id, source, kind) with kind in
    {"answer", "tests"}."""
    nb = nbformat.v4.new_notebook()
    for grade_id, source, *kind in cells:
        meta = {"grade_id": grade_id, "locked": True, "grade": False, "solution": False}
        if kind == ["answer"]:
            meta.update(locked=False, solution=True)
        elif kind == ["tests"]:
            meta.update(grade=True, points=1)
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["nbgrader"] = meta
        nb.cells.append(cell)
    return nb


def test_a_demo_nothing_reads_is_skippable_and_setup_teardown_are_kept():
    nb = _nb(("x_setup", "lab = 1"),
             ("demo_print", "result = 2 * 21\nprint(result)"),
             ("ans", "def f():\n    return lab", "answer"),
             ("t", "assert f() == 1", "tests"),
             ("x_teardown", "del lab"))
    assert trim.skippable(nb) == ["demo_print"]


def test_names_read_by_tests_answers_and_function_bodies_keep_their_cells():
    nb = _nb(("x_setup", "import os"),
             ("demo_data", "DATA = [1, 2, 3]"),
             ("demo_fn", "def helper():\n    return sum(DATA)"),
             ("demo_other", "for r in range(3):\n    print(r)"),
             ("ans", "def g():\n    return helper()", "answer"),
             ("t", "assert g() == 6\nassert [r for r in range(2)] == [0, 1]", "tests"))
    # demo_fn is read by the answer; demo_fn's body reads DATA; the test's comprehension variable
    # `r` is its own, so demo_other is not needed
    assert trim.skippable(nb) == ["demo_other"]


def test_only_the_latest_binding_before_a_reader_is_needed():
    nb = _nb(("demo_a", "value = 1"),
             ("demo_b", "value = 2"),
             ("t", "assert value == 2", "tests"))
    assert trim.skippable(nb) == ["demo_a"]


def test_a_cell_that_reads_before_it_rebinds_needs_the_earlier_binding():
    nb = _nb(("demo_a", "total = 1"),
             ("demo_b", "total += 1"),
             ("t", "assert total == 2", "tests"))
    assert trim.skippable(nb) == []


def test_environment_changes_and_unparsable_cells_are_kept():
    nb = _nb(("demo_env", "import os\nos.environ['X'] = '1'"),
             ("demo_magic", "%time 1 + 1"),
             ("demo_broken", "def (:"),
             ("t", "assert True", "tests"))
    assert trim.skippable(nb) == ["demo_magic"]  # the magic line is dropped; the rest is empty


@pytest.mark.parametrize("source", [
    "import os\nos.environ['X'] = '1'",
    "import os\ndel os.environ['X']",
    "import os\nos.environ.update(X='1')",
    "import os\nos.environ.setdefault('X', '1')",
    "import os\nos.environ.pop('X', None)",
    "import os\nenv = os.environ\nenv['X'] = '1'",
    "from os import environ as e\ne['X'] = '1'",
    "import os\ndef later():\n    os.environ['X'] = '1'",
    "import os\nos.putenv('X', '1')",
])
def test_a_cell_that_may_change_the_environment_is_kept(source):
    nb = _nb(("demo_env", source), ("t", "assert True", "tests"))
    assert trim.skippable(nb) == []


def test_a_cell_that_only_reads_the_environment_is_skippable():
    reads = ("import os\n"
             "def on_worker(config):\n"
             "    return f\"{os.environ['MASTER_ADDR']}:{os.environ.get('MASTER_PORT')}\"\n"
             "print(os.environ.get('RAY_TRAIN_V2_ENABLED'), 'HOME' in os.environ, len(os.environ.copy()))")
    nb = _nb(("demo_reads", reads), ("t", "assert True", "tests"))
    assert trim.skippable(nb) == ["demo_reads"]


def test_trimmed_copy_replaces_only_skipped_sources():
    nb = _nb(("x_setup", "lab = 1"), ("demo", "print('slow')"), ("t", "assert lab", "tests"))
    out = trim.trimmed(nb)
    assert [c.source for c in out.cells] == ["lab = 1", trim.SKIPPED, "assert lab"]
    assert nb.cells[1].source == "print('slow')"  # the original is untouched


@pytest.mark.parametrize("lab", course.labs())
def test_every_lab_keeps_its_graded_cells_setup_and_teardown(lab):
    nb = nbformat.read(course.solution_path(lab), as_version=4)
    skipped = set(trim.skippable(nb))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if meta.get("grade") or meta.get("solution") or meta["grade_id"].endswith(("_setup", "_teardown")):
            assert meta["grade_id"] not in skipped


def test_a_cell_that_only_re_imports_what_an_earlier_cell_imported_is_not_needed():
    nb = _nb(("x_setup", "import raylab\nfrom ray.train import RunConfig"),
             ("demo_heavy", "import raylab.plots\nfrom ray.train import RunConfig\nrun = RunConfig()"),
             ("t", "assert raylab and RunConfig", "tests"))
    assert trim.skippable(nb) == ["demo_heavy"]


def test_a_re_import_is_needed_when_it_undoes_a_different_binding():
    nb = _nb(("x_setup", "import raylab"),
             ("demo_shadow", "raylab = None"),
             ("demo_again", "import raylab"),
             ("t", "assert raylab is not None", "tests"))
    # demo_again restores the module that demo_shadow replaced: it is needed, demo_shadow is not
    assert trim.skippable(nb) == ["demo_shadow"]


def test_an_import_under_another_name_or_with_an_assignment_is_a_new_binding():
    nb = _nb(("x_setup", "import numpy"),
             ("demo_alias", "import math as numpy"),
             ("demo_assign", "import json\njson = json.dumps"),
             ("t", "assert numpy and json", "tests"))
    assert trim.skippable(nb) == []


def _lab(answer_source):
    return _nb(("x_setup", "import raylab"),
               ("demo_fit", "result = trainer.fit()\nprint(result.metrics)"),
               ("ans", answer_source, "answer"),
               ("t", "assert f() == 1", "tests"))


def test_a_class_grader_skips_the_heavy_demo_only_when_the_learners_answer_does_not_read_it():
    solution = _lab("def f():\n    return 1")
    assert trim.grading_skips(solution, _lab("def f():\n    return 2 - 1")) == ["demo_fit"]
    # the learner's answer reads what the demo made: the demo runs, whatever the solution reads
    assert trim.grading_skips(solution, _lab("def f():\n    return 1 if result else 0")) == []
    # names looked up at run time, or an answer Python cannot parse: every cell runs
    assert trim.grading_skips(solution, _lab("def f():\n    return len(globals()['result'].metrics)")) == []
    assert trim.grading_skips(solution, _lab("def f(:\n    return 1")) == []
    assert trim.grading_skips(solution, _lab("%time x = 1\ndef f():\n    return 1")) == ["demo_fit"]


def test_no_heavy_demo_means_nothing_is_worth_skipping():
    light = _nb(("x_setup", "import raylab"), ("demo_print", "print(2)"),
                ("ans", "def f():\n    return 1", "answer"), ("t", "assert f() == 1", "tests"))
    assert trim.skippable(light) == ["demo_print"]
    assert trim.grading_skips(light, light) == []


def test_a_trimmed_copy_can_leave_out_a_given_subset():
    nb = _lab("def f():\n    return 1")
    out = trim.trimmed(nb, [])
    assert [c.source for c in out.cells] == [c.source for c in nb.cells]
    assert trim.trimmed(nb, ["demo_fit"]).cells[1].source == trim.SKIPPED


def _two_exercises():
    return _nb(("x_setup", "import raylab"),
               ("a_answer", "def fa():\n    return 1", "answer"),
               ("a_tests", "from raylab.checks.common import check\nassert fa() == 1", "tests"),
               ("demo_b", "made_for_b = 3"),
               ("b_answer", "def fb():\n    return made_for_b", "answer"),
               ("b_tests", "assert fb() == 3", "tests"),
               ("x_teardown", "raylab.teardown()"))


def test_a_mutant_round_leaves_out_the_exercises_it_does_not_grade_and_what_only_they_read():
    nb = _two_exercises()
    # grading only exercise b: a's answer and tests go, b's demo stays (b's answer reads it)
    assert trim.round_skips(nb, nb, {"a_answer", "a_tests"}) == ["a_answer", "a_tests"]
    # grading only exercise a: b's cells go, and with them the demo only b's answer read
    assert trim.round_skips(nb, nb, {"b_answer", "b_tests"}) == ["demo_b", "b_answer", "b_tests"]
    # nothing left out: exactly the demo cells nothing reads (none here)
    assert trim.round_skips(nb, nb, set()) == []


def test_a_left_out_exercise_whose_names_a_kept_cell_reads_is_kept():
    nb = _two_exercises()
    nb.cells[5].source = "check(fb() == 3)"  # b's test uses the `check` a's test cell imported
    # so a's test cell runs, and the answer it calls with it
    assert trim.round_skips(nb, nb, {"a_answer", "a_tests"}) == []
    # an answer that looks names up at run time: every cell runs
    dynamic = _two_exercises()
    dynamic.cells[4].source = "def fb():\n    return globals()['made_for_b']"
    assert trim.round_skips(nb, dynamic, {"a_answer", "a_tests"}) == []


def test_a_demo_that_calls_a_function_wrapping_a_fit_is_heavy():
    nb = _nb(("x_setup", "import raylab"),
             ("helpers", "def run_it(trainer):\n    return trainer.fit()\n\ndef twice(t):\n    return [run_it(t), run_it(t)]"),
             ("demo_calls", "facts = twice(make_trainer())"),
             ("ans", "def f():\n    return 1", "answer"), ("t", "assert f() == 1", "tests"))
    assert trim.heavy_skippable(nb) == ["helpers", "demo_calls"]
    light = _nb(("x_setup", "import raylab"), ("demo_print", "print(2)"), ("ans", "def f():\n    return 1", "answer"))
    assert trim.heavy_skippable(light) == []
