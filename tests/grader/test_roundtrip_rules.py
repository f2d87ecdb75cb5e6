"""The round trip's rules, on fabricated results: which failures Validate would also show."""
import pytest

from grader.grading import course
from grader.proof import roundtrip, roundtrip_rules as rules

SOURCE = "check(a)\ncheck(b)\n### BEGIN HIDDEN TESTS\ncheck(c)\n### END HIDDEN TESTS"


def _tb(line):  # an IPython traceback as nbclient stores it, colours included
    return ["\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
            f"Cell \x1b[0;32mIn[7], line {line}\x1b[0m\n\x1b[1;32m----> {line}\x1b[0m check(...)",
            "File \x1b[0;32m/x/raylab/checks/common.py:40\x1b[0m, in \x1b[0;36mcheck\x1b[0;34m(cond)\x1b[0m"]


def test_a_failure_above_the_hidden_marker_is_visible():
    # the grader runs one line (the tamper report) before the cell's own first line
    assert rules.failed_in_visible_part(SOURCE, _tb(2)) is True   # check(a)
    assert rules.failed_in_visible_part(SOURCE, _tb(3)) is True   # check(b)
    assert rules.failed_in_visible_part(SOURCE, _tb(5)) is False  # check(c), hidden
    assert rules.failed_in_visible_part(SOURCE, _tb(1)) is False  # the report line itself


def test_error_line_is_the_cells_own_line():
    assert rules.error_line(_tb(3)) == 2  # the injected report line comes first
    assert rules.error_line(["TestCellTampered: stopped early"]) is None


def test_a_cell_without_hidden_tests_is_all_visible_and_no_line_means_unknown():
    assert rules.failed_in_visible_part("check(a)\ncheck(b)", _tb(3)) is True
    assert rules.failed_in_visible_part(SOURCE, ["TestCellTampered: stopped early"]) is None


def test_visible_catch_counts_each_mutant_once_per_exercise():
    class Ex:
        def __init__(self, tests):
            self.tests = tests
    exercises = {"a_answer": Ex(["a_tests"]), "b_answer": Ex(["b_tests", "b_more_tests"])}
    graded = {
        "mutants0": rules.Graded("mutants0", {}, {}, {"a_answer": "m1", "b_answer": "m2"},
                                     {"a_tests": True, "b_tests": False, "b_more_tests": True}),
        "mutants1": rules.Graded("mutants1", {}, {}, {"a_answer": "m3"}, {"a_tests": False}),
        "solution": rules.Graded("solution", {}, {}, {}, {}),
    }
    assert rules.visible_catch(graded, exercises) == {"a_answer": [1, 2], "b_answer": [1, 1]}


class _Ex:
    def __init__(self, tests):
        self.tests = tests


G = rules.Graded
EXERCISES = {"a_answer": _Ex(["a_tests"])}


def test_the_solution_must_score_full_marks_without_errors():
    ok = {"solution": G("solution", {"a_tests": (2.0, 2.0), "intro": (None, 0.0)}, {})}
    assert rules.solution_problems(ok) == []
    low = {"solution": G("solution", {"a_tests": (1.0, 2.0)}, {})}
    assert rules.solution_problems(low) == ["solution: a_tests scored 1.0/2.0"]
    crashed = {"solution": G("solution", {"a_tests": (2.0, 2.0)}, {"demo": ("NameError", "x")})}
    assert rules.solution_problems(crashed) == ["solution: error in cell demo: NameError: x"]
    assert rules.solution_problems({"solution": G("solution", {"intro": (None, 0.0)}, {})}) == [
        "the lab has no autograded cells"]


def test_every_exercise_must_keep_its_points_graded_without_the_skipped_demos():
    exercises = {"a_answer": _Ex(["a_tests"]), "b_answer": _Ex(["b_tests"])}
    full = {"a_tests": (2.0, 2.0), "b_tests": (1.0, 1.0)}
    solution = G("solution", full, {}, solved=frozenset(exercises))  # every cell ran: proves nothing here
    right_a = G("mutants3", {"a_tests": (2.0, 2.0)}, {}, right={"a_answer": "other"},
                left_out=frozenset({"demo", "b_answer", "b_tests"}))
    solved_b = G("solution_trimmed", {"b_tests": (1.0, 1.0)}, {}, left_out=frozenset({"demo", "a_answer", "a_tests"}),
                 solved=frozenset({"b_answer"}))
    assert rules.trim_problems({"solution": solution}, exercises, []) == []  # nothing was left out
    assert rules.trim_problems({"solution": solution, "mutants3": right_a, "solution_trimmed": solved_b},
                               exercises, ["demo"]) == []
    (missing,) = rules.trim_problems({"solution": solution, "mutants3": right_a}, exercises, ["demo"])
    assert missing.startswith("b_answer: never graded in a right form with the demo cells left out")
    # a witness that kept the demo (its own answer reads it), lost points or crashed proves nothing
    kept_demo = G("mutants3", {"a_tests": (2.0, 2.0)}, {}, right={"a_answer": "other"}, left_out=frozenset())
    lost = G("mutants3", {"a_tests": (1.0, 2.0)}, {}, right={"a_answer": "other"}, left_out=frozenset({"demo"}))
    crashed = G("mutants3", {"a_tests": (2.0, 2.0)}, {"a_tests": ("NameError", "demo_result")},
                right={"a_answer": "other"}, left_out=frozenset({"demo"}))
    for witness in (kept_demo, lost, crashed):
        problems = rules.trim_problems({"mutants3": witness, "solution_trimmed": solved_b}, exercises, ["demo"])
        assert [p.split(":")[0] for p in problems] == ["a_answer"]


def test_the_untouched_copy_must_score_zero():
    assert rules.untouched_problems({"untouched": G("untouched", {"a_tests": (0.0, 2.0)}, {})}) == []
    assert rules.untouched_problems({"untouched": G("untouched", {"a_tests": (1.0, 2.0)}, {})}) == [
        "untouched learner copy: a_tests scored 1.0"]


def test_a_mutant_must_lose_points_through_a_failed_check_not_a_crash():
    caught = G("mutants0", {"a_tests": (0.0, 2.0)}, {"a_tests": ("CheckFailed", "expected 4")}, {"a_answer": "m"})
    assert rules.mutant_problems({"mutants0": caught}, EXERCISES) == []
    missed = G("mutants0", {"a_tests": (2.0, 2.0)}, {}, {"a_answer": "m"})
    assert rules.mutant_problems({"mutants0": missed}, EXERCISES) == ["mutant a_answer/m: a_tests scored 2.0/2.0"]
    crashed = G("mutants0", {"a_tests": (0.0, 2.0)},
                {"setup": ("RuntimeError", "Ray did not start"), "a_tests": ("NameError", "lab")}, {"a_answer": "m"})
    (problem,) = rules.mutant_problems({"mutants0": crashed}, EXERCISES)
    assert "failed with NameError, not a check" in problem and "first error was in setup" in problem
    assert rules.judge({"mutants0": missed}, EXERCISES, []) == [
        "the lab has no autograded cells", "mutant a_answer/m: a_tests scored 2.0/2.0"]


def test_first_errors_keeps_each_cells_first_error_its_line_and_whether_validate_runs_it():
    import nbformat

    out = nbformat.v4.new_output
    raised = nbformat.v4.new_code_cell("check(a)", outputs=[
        out("stream", name="stdout", text="x"), out("error", ename="CheckFailed", evalue="1", traceback=_tb(2)),
        out("error", ename="Other", evalue="2", traceback=[])])
    raised.metadata["nbgrader"] = {"grade_id": "a_tests"}
    quiet = nbformat.v4.new_code_cell("x = 1", outputs=[out("stream", name="stdout", text="ok")])
    found = roundtrip.first_errors(nbformat.v4.new_notebook(cells=[raised, quiet]))
    assert found == {"a_tests": ["CheckFailed", "1", 1, True]}
    raised.source = SOURCE
    raised.outputs[1]["traceback"] = _tb(5)
    assert roundtrip.first_errors(nbformat.v4.new_notebook(cells=[raised]))["a_tests"][2:] == [4, False]


def test_a_round_past_an_exercises_last_mutant_does_not_grade_that_exercise():
    from grader.proof.mutants import Exercise
    exercises = {"a_answer": Exercise("a_answer", ["a_tests"], []),
                 "b_answer": Exercise("b_answer", ["b_tests", "b_more"], [])}
    assert roundtrip.not_graded(exercises, {"a_answer": "m3"}) == {"b_answer", "b_tests", "b_more"}
    assert roundtrip.not_graded(exercises, {"a_answer": "m1", "b_answer": "m2"}) == frozenset()
    assert roundtrip.not_graded(exercises, {}) == frozenset()  # solution and untouched: every cell


def test_a_right_answer_that_differs_must_keep_every_point():
    from grader.proof.mutants import Exercise
    exercises = {"a_answer": Exercise("a_answer", ["a_tests"], [])}
    kept = rules.Graded("mutants2", {"a_tests": (3, 3)}, {}, {}, {}, {"a_answer": "other_spelling"})
    lost = rules.Graded("mutants3", {"a_tests": (0, 3)}, {"a_tests": ("CheckFailed", "state.pt missing")},
                            {}, {}, {"a_answer": "other_file_name"})
    assert rules.right_problems({"mutants2": kept}, exercises) == []
    problems = rules.right_problems({"mutants2": kept, "mutants3": lost}, exercises)
    assert problems == ["right answer a_answer/other_file_name: a_tests scored 0/3 (CheckFailed: state.pt missing)"]
    # a right answer is no mutant: it never counts towards the visible catch rate
    assert rules.visible_catch({"mutants3": lost}, exercises) == {}


def test_visible_problems_name_an_exercise_validate_misses_or_catches_less_of():
    record = {"a_answer": [2, 3], "b_answer": [1, 2]}
    assert rules.visible_problems({"a_answer": [2, 3], "b_answer": [2, 2]}, record) == []  # better is fine
    found = rules.visible_problems({"a_answer": [1, 3], "b_answer": [0, 2]}, record)
    assert [p.split(":")[0] for p in found] == ["a_answer", "b_answer", "b_answer"]
    assert "none of its 2 mutants" in found[1]
    # a mutant added or removed must be recorded; an exercise missing from either side is named
    assert "3 mutants graded, 2 recorded" in rules.visible_problems({"b_answer": [1, 3]}, {"b_answer": [1, 2]})[0]
    assert "not in grader/visible_catch.json" in rules.visible_problems({"c_answer": [1, 1]}, {})[0]
    assert "no mutant of it was graded" in rules.visible_problems({}, {"c_answer": [1, 1]})[0]


def test_visible_problems_at_a_shallower_depth_allow_only_what_the_left_out_mutants_could_hold():
    record = {"a_answer": [3, 5]}
    # two of five graded, three left out: the graded two must hold at least 3 - 3 = 0 catches
    assert rules.visible_problems({"a_answer": [0, 2]}, record, {"a_answer": 3}) == []
    # four graded, one left out: at least 2 of the 4 must be caught
    assert rules.visible_problems({"a_answer": [2, 4]}, record, {"a_answer": 1}) == []
    found = rules.visible_problems({"a_answer": [1, 4]}, record, {"a_answer": 1})
    assert len(found) == 1 and "1 more recorded, not graded" in found[0]
    # graded + left out must still add up to the record
    assert "2 mutants graded and 2 left out, 5 recorded" in rules.visible_problems(
        {"a_answer": [2, 2]}, record, {"a_answer": 2})[0]
    # nothing left out and nothing caught: named as before
    assert "none of its 5 mutants" in rules.visible_problems({"a_answer": [0, 5]}, record, {})[0]



@pytest.mark.parametrize("lab", course.labs())
def test_a_shallower_depth_grades_every_right_answer_and_leaves_out_only_later_mutants(lab):
    from grader.proof import mutants

    for depth in (1, 2):
        graded = [(a, m.name, m.right) for rnd in mutants.rounds(lab, depth) for a, m in rnd.items()]
        left_out = mutants.not_graded(lab, depth)
        for answer, exercise in mutants.load(lab).items():
            names = [name for a, name, _ in graded if a == answer]
            assert names == [m.name for m in exercise.mutants[:depth] + exercise.right]
            assert left_out.get(answer, []) == [m.name for m in exercise.mutants[depth:]]
    every = [(a, m.name) for rnd in mutants.rounds(lab) for a, m in rnd.items()]
    assert sorted(every) == sorted((a, m.name) for a, e in mutants.load(lab).items() for m in e.variants)
    assert mutants.not_graded(lab) == {}
