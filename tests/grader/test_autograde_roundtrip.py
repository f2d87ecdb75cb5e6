"""The spine: every lab autograded through the real nbgrader CLI against a real local Ray cluster.

For each lab, one `nbgrader autograde` run (in a loopback-only network namespace) grades:
- the solution: full marks on every autograded cell, and no error in any cell (so the solution
  notebook executes top to bottom against a live cluster);
- the untouched learner copy: 0;
- one submission per mutant round: every mutated exercise loses points through a failed check,
  every right answer keeps its points (every mutant and every right answer);
and afterwards no Ray process started by that run is left; and Validate (the visible tests)
shows at least one mutant of every exercise, and as many as grader/visible_catch.json records.
Submissions are graded two at a time, each by its own `nbgrader autograde`; heavy demo cells that
no test reads are left out of every submission but the solution (grader/grading/trim.py), and every
exercise must keep full marks graded that way, as a right answer or in the solution's form.
A grading whose key (grader/proof/keys.py: a digest of everything that can change it) the ledger
holds is judged from its stored result; the rest, and the run's audits, are graded now.
Details: grader/proof/roundtrip.py, grader/proof/.
"""
import pytest

from grader.grading import course
from grader.proof import roundtrip, roundtrip_report

pytestmark = pytest.mark.slow


# The quiz's round trip runs in tests/labs/test_quiz.py, which also checks its per-question export.
@pytest.mark.parametrize("lab", [lab for lab in course.labs() if lab != "10_quiz"])
def test_autograder_is_right_in_both_directions(lab, round_trips):
    rt = round_trips(lab)
    print(roundtrip_report.report(rt))
    assert not rt.problems, roundtrip_report.report(rt)
    assert set(rt.graded) >= {"solution", "untouched"}
    solution = rt.graded["solution"].scores
    assert sum(s for s, _ in solution.values()) == sum(m for _, m in solution.values()) > 0
    assert sum(s or 0 for s, _ in rt.graded["untouched"].scores.values()) == 0
    assert not rt.leftover_ray
    # Validate (the visible tests) shows at least one mutant of every exercise, and no fewer
    # than grader/visible_catch.json records
    visible = roundtrip.validate_problems(rt)
    assert not visible, "\n".join(visible)
