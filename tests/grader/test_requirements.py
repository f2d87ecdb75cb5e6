"""Every exercise's requirements are traced to checks both ways, and mutants to what they break
(grader/proof/requirements.py): the unit rules on in-memory cells, then every lab of the course."""
import pytest

from grader.grading import course
from grader.proof import mutants, requirements
from grader.proof.mutants import Exercise, Mutant
from grader.proof.roundtrip_rules import Graded

CELL = """import raylab
_r = run_it()
# requirement: reports_loss
check(_r.loss is not None, "no loss")
check_close(_r.loss, 1.0, "loss")
# requirement: saves_state
_ck.check_saved(_r)
### BEGIN HIDDEN TESTS
check(_r.steps == 3, "steps")
### END HIDDEN TESTS
"""


def exercise(requirements_=None, breaks=("saves_state",), mistake=None):
    wrong = Mutant("a_answer", "no_state", "", [], breaks=tuple(breaks), mistake=mistake)
    return {"a_answer": Exercise("a_answer", ["a_tests"], [wrong], [],
                                 {"reports_loss": "x", "saves_state": "y"} if requirements_ is None else requirements_)}


def test_markers_govern_the_lines_below_them():
    assert requirements.markers(CELL) == [(3, "reports_loss"), (6, "saves_state")]
    assert requirements.requirement_at(CELL, 2) is None
    assert requirements.requirement_at(CELL, 4) == "reports_loss"
    assert requirements.requirement_at(CELL, 9) == "saves_state"
    assert [name for _, name in requirements.check_calls(CELL)] == ["check", "check_close", "check_saved", "check"]


def test_a_traced_exercise_has_no_problems():
    assert requirements.static_problems(exercise(), {"a_tests": CELL}) == []


@pytest.mark.parametrize("cell, exercises, expected", [
    (CELL.replace("# requirement: reports_loss\n", ""), exercise(), "sits below no requirement marker"),
    (CELL, exercise({"reports_loss": "x", "saves_state": "y", "counts_steps": "z"}),
     "requirement 'counts_steps' has no check"),
    (CELL, exercise({"reports_loss": "x"}), "marker names 'saves_state', not a requirement"),
    (CELL, exercise(breaks=()), "names no requirement it breaks"),
    (CELL, exercise(breaks=("saves_states",)), "breaks 'saves_states', not a requirement"),
    (CELL, exercise(mistake="typo_class"), "unknown mistake class"),
    (CELL, exercise({}), "lists no requirements"),
])
def test_each_way_a_trace_breaks_is_named(cell, exercises, expected):
    problems = requirements.static_problems(exercises, {"a_tests": cell})
    assert any(expected in p for p in problems), problems


def test_a_mutant_must_first_fail_under_a_requirement_it_breaks():
    def graded(line):
        return {"mutants0": Graded("mutants0", {"a_tests": (0, 2)}, {"a_tests": ("CheckFailed", "")},
                                   {"a_answer": "no_state"}, lines={"a_tests": line})}
    sources = {"a_tests": CELL}
    assert requirements.link_problems(graded(7), exercise(), sources) == []
    assert requirements.link_problems(graded(9), exercise(), sources) == []  # hidden, same requirement
    [problem] = requirements.link_problems(graded(4), exercise(), sources)
    assert "under requirement 'reports_loss', which it does not break" in problem
    [problem] = requirements.link_problems(graded(2), exercise(), sources)
    assert "under requirement None" in problem  # crashed before any check: nothing names the mistake
    assert requirements.link_problems(graded(None), exercise(), sources) == []  # no line to judge


def test_mutants_file_reads_requirements_breaks_and_mistake(tmp_path, monkeypatch):
    (tmp_path / "99_x").mkdir()
    (tmp_path / "99_x" / "mutants.yaml").write_text(
        "a_answer:\n  tests: [a_tests]\n  requirements: {reports_loss: report it}\n"
        "  mutants:\n    - {name: m, breaks: reports_loss, core: true, mistake: value_timing, replace: [[a, b]]}\n"
        "    - {name: n, breaks: reports_loss, core: false, replace: [[a, d]]}\n"
        "  right:\n    - {name: r, replace: [[a, c]]}\n")
    monkeypatch.setattr(course, "SOLUTIONS", tmp_path)
    [ex] = mutants.load("99_x").values()
    assert ex.requirements == {"reports_loss": "report it"}
    assert (ex.mutants[0].breaks, ex.mutants[0].mistake) == (("reports_loss",), "value_timing")
    assert [m.core for m in ex.mutants] == [True, False]
    assert ex.right[0].breaks == () and ex.right[0].right and not ex.right[0].core


@pytest.mark.parametrize("mutant, right, expected", [
    ("{name: m, breaks: b, replace: [[a, b]]}", "", "a_answer/m: a wrong answer needs 'core: true'"),
    ("{name: m, breaks: b, core: 'yes', replace: [[a, b]]}", "", "a_answer/m: a wrong answer needs 'core: true'"),
    ("{name: m, breaks: b, core: false, replace: [[a, b]]}", "\n  right:\n    - {name: r, core: false, replace: [[a, c]]}",
     "a_answer/r: a right answer carries no 'core'"),
])
def test_mutants_file_needs_core_on_every_wrong_answer_and_none_on_right_ones(tmp_path, monkeypatch, mutant, right,
                                                                               expected):
    (tmp_path / "99_x").mkdir()
    (tmp_path / "99_x" / "mutants.yaml").write_text(f"a_answer:\n  tests: [a_tests]\n  mutants:\n    - {mutant}{right}\n")
    monkeypatch.setattr(course, "SOLUTIONS", tmp_path)
    with pytest.raises(ValueError, match="99_x/mutants.yaml: " + expected):
        mutants.load("99_x")


@pytest.mark.parametrize("lab", course.labs())
def test_every_exercise_is_traced_both_ways(lab):
    """Every requirement of every exercise has a check, every check a requirement, every mutant
    names what it breaks."""
    assert requirements.static_problems(mutants.load(lab), requirements.test_sources(lab)) == []
