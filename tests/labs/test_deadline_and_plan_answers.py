"""The graded checks of lab 05's deadline exercise and lab 08's plan review judge behaviour.

Each check cell (visible and hidden tests) is run here, in-process, against answers a learner
could write: right answers that differ from the solution must pass, wrong ones must fail.
"""
import nbformat
import pytest

from grader.grading import course
from grader.proof import mutants


def _cell(lab: str, grade_id: str) -> str:
    for cell in nbformat.read(course.solution_path(lab), as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            return cell.source.replace("### BEGIN HIDDEN TESTS", "").replace("### END HIDDEN TESTS", "")
    raise KeyError(grade_id)


def _grade(lab: str, answer: str, tests_id: str, namespace=None) -> None:
    ns = dict(namespace or {})
    exec(answer, ns)  # noqa: S102 - the course's own answers
    exec(_cell(lab, tests_id), ns)  # noqa: S102 - the course's own test cell


LAB04 = "05_failures_and_retries"

# More controller retries first, then as many worker retries as fit: a different right answer.
MORE_CONTROLLER_RETRIES = '''
import ray.train
from raylab import retry_budget


def failure_config_for_deadline(deadline_s, start_timeout_s, attempt_s, detection_s=None,
                                preemption_wait_s=None):
    times = dict(start_timeout_s=start_timeout_s, attempt_s=attempt_s, detection_s=detection_s,
                 preemption_wait_s=preemption_wait_s)
    for c in (3, 2, 1):
        def config(m):
            return ray.train.FailureConfig(max_failures=m, controller_failure_limit=c, max_preemption_failures=1)
        if retry_budget.worst_case_s(config(0), **times) <= deadline_s:
            m = 0
            while retry_budget.worst_case_s(config(m + 1), **times) <= deadline_s:
                m += 1
            return config(m)
    raise ValueError("does not fit")
'''

# The formula written out by hand instead of calling the helper: also right.
CLOSED_FORM = '''
import math

import ray.train
from raylab import retry_budget


def failure_config_for_deadline(deadline_s, start_timeout_s, attempt_s, detection_s=None,
                                preemption_wait_s=None):
    d = retry_budget.default_detection_s() if detection_s is None else detection_s
    w = retry_budget.default_preemption_wait_s() if preemption_wait_s is None else preemption_wait_s

    def worst(m):
        return (1 + 1 + m + 1) * start_timeout_s + (2 + m) * attempt_s + m * d + w + max(d, w)

    if worst(0) > deadline_s:
        raise ValueError("does not fit")
    m = 0
    while worst(m + 1) <= deadline_s:
        m += 1
    return ray.train.FailureConfig(max_failures=m, controller_failure_limit=1, max_preemption_failures=1)
'''

# The old reference answer: each limit as large as fits the deadline on its own.
EACH_CLASS_ALONE = '''
import math

import ray.train


def failure_config_for_deadline(deadline_s, start_timeout_s, attempt_s, detection_s=None,
                                preemption_wait_s=None):
    if start_timeout_s > deadline_s or attempt_s > deadline_s:
        raise ValueError("does not fit")
    worker = math.floor(deadline_s / attempt_s) - 1
    return ray.train.FailureConfig(max_failures=worker,
                                   controller_failure_limit=math.floor(deadline_s / start_timeout_s) - 1,
                                   max_preemption_failures=worker)
'''

# Fits, but leaves worker retries unused (rule 4).
TOO_CAUTIOUS = '''
import ray.train
from raylab import retry_budget


def failure_config_for_deadline(deadline_s, start_timeout_s, attempt_s, detection_s=None,
                                preemption_wait_s=None):
    fc = ray.train.FailureConfig(max_failures=0, controller_failure_limit=1, max_preemption_failures=1)
    if retry_budget.worst_case_s(fc, start_timeout_s=start_timeout_s, attempt_s=attempt_s,
                                 detection_s=detection_s, preemption_wait_s=preemption_wait_s) > deadline_s:
        raise ValueError("does not fit")
    return fc
'''


@pytest.mark.parametrize("answer", [mutants.answer_sources(LAB04)["failure_config_for_deadline_answer"],
                                    MORE_CONTROLLER_RETRIES, CLOSED_FORM],
                         ids=["solution", "more_controller_retries", "closed_form"])
def test_lab04_deadline_check_accepts_every_right_answer(answer):
    _grade(LAB04, answer, "failure_config_for_deadline_tests")


@pytest.mark.parametrize("answer", [EACH_CLASS_ALONE, TOO_CAUTIOUS], ids=["each_class_alone", "too_cautious"])
def test_lab04_deadline_check_rejects_wrong_answers(answer):
    from raylab.checks.common import CheckFailed

    with pytest.raises(CheckFailed):
        _grade(LAB04, answer, "failure_config_for_deadline_tests")


def test_lab07_review_check_accepts_the_solution():
    from raylab import plan_review

    _grade("08_operating_on_kuberay", mutants.answer_sources("08_operating_on_kuberay")["review_plan_answer"],
           "review_plan_tests", {"proposal": plan_review.example_plan()})
