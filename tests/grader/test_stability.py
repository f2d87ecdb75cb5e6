"""grader.proof.stability's comparison (fast): a score that differs between runs is reported."""
from grader.proof import stability


def test_only_cells_whose_score_changed_are_reported():
    same = {"solution": {"a_tests": (2.0, 2.0)}, "mutants0": {"a_tests": (0.0, 2.0)}}
    flaky = {"solution": {"a_tests": (2.0, 2.0)}, "mutants0": {"a_tests": (2.0, 2.0)}}
    assert stability.varying([same, same, same]) == []
    assert stability.varying([same, flaky, same]) == ["mutants0 a_tests: [0.0, 2.0, 0.0]"]
    # a cell missing from one run (the submission was not graded) counts as a change
    assert stability.varying([same, {"solution": {"a_tests": (2.0, 2.0)}}]) == ["mutants0 a_tests: [0.0, None]"]
