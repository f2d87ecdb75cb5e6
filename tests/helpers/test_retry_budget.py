"""raylab.retry_budget: the worst case of one run's retries, shared by labs 05 and 08."""
import math

import pytest
from ray.train import FailureConfig

from raylab import retry_budget


def _fc(c, m, p):
    return FailureConfig(controller_failure_limit=c, max_failures=m, max_preemption_failures=p)


def test_defaults_are_read_from_the_installed_ray():
    from ray.train.v2._internal import constants

    assert retry_budget.default_detection_s() == constants.DEFAULT_WORKER_HEALTH_CHECK_TIMEOUT_S == 600
    assert retry_budget.default_preemption_wait_s() == constants.DEFAULT_PREEMPTION_DEADLINE_S == 120


def test_no_retries_is_one_start_one_attempt_and_one_failure_noticed():
    terms = retry_budget.worst_case_terms(_fc(0, 0, 0), start_timeout_s=60, attempt_s=1000)
    assert terms == {"start-ups": 60, "training": 1000, "noticing failures": 600}


def test_the_three_budgets_add_up():
    # c=59, m=2, p=2 at T=60, attempt 1000: the old lab 05 answer for a 3600 s deadline.
    times = {"start_timeout_s": 60, "attempt_s": 1000}
    assert retry_budget.worst_case_terms(_fc(59, 2, 2), **times) == {
        "start-ups": (59 + 5) * 60, "training": 5 * 1000, "noticing failures": 2 * 600 + 2 * 120 + 600}
    assert retry_budget.worst_case_s(_fc(59, 2, 2), **times) == 10880 > 3600
    # Without the time to notice failures this is lab 08's earlier formula: 8840 s.
    assert retry_budget.worst_case_s(_fc(59, 2, 2), detection_s=0, preemption_wait_s=0, **times) == 8840


def test_each_limit_costs_what_it_allows():
    times = {"start_timeout_s": 10, "attempt_s": 100, "detection_s": 7, "preemption_wait_s": 3}
    base = retry_budget.worst_case_s(_fc(0, 0, 0), **times)
    assert retry_budget.worst_case_s(_fc(1, 0, 0), **times) - base == 10  # one more start wait
    assert retry_budget.worst_case_s(_fc(0, 1, 0), **times) - base == 10 + 100 + 7
    assert retry_budget.worst_case_s(_fc(0, 0, 1), **times) - base == 10 + 100 + 3
    # The failure that ends the run costs the larger of the two waits.
    slow_preemption = dict(times, preemption_wait_s=50)
    assert retry_budget.worst_case_terms(_fc(0, 0, 0), **slow_preemption)["noticing failures"] == 50


@pytest.mark.parametrize("limits", [(-1, 0, 0), (0, -1, 0), (0, 0, -1)])
def test_unlimited_is_infinite(limits):
    assert retry_budget.worst_case_s(_fc(*limits), start_timeout_s=60, attempt_s=1) == math.inf


def test_defaults_of_failure_config_never_fit():
    assert retry_budget.worst_case_s(FailureConfig(), start_timeout_s=60, attempt_s=1) == math.inf


@pytest.mark.parametrize("bad", [(-2, 0, 0), (0, 1.5, 0), (0, 0, True)])
def test_rejects_limits_that_are_not_counts(bad):
    class Limits:  # FailureConfig itself does not validate its fields
        controller_failure_limit, max_failures, max_preemption_failures = bad

    with pytest.raises(ValueError):
        retry_budget.worst_case_s(Limits(), start_timeout_s=60, attempt_s=1)
