"""How long Ray Train's retries can make one run last: the one formula labs 05 and 08 share.

Ray Train 2.58.0 judges every failure of a run with one ``DefaultFailurePolicy`` that keeps three
counters, one per failure class, for the whole run: worker-group errors (limit ``max_failures``),
controller errors from a worker group that could not start (``controller_failure_limit``) and
preemptions (``max_preemption_failures``). The counters are independent and never reset, so in one
run all three budgets can be spent, one after the other
(``ray/train/v2/_internal/execution/failure_handling/default.py``, lines 50-52 and 103-133).

The worst case below adds up, for limits ``c``, ``m`` and ``p`` (none of them ``-1``):

* **start-ups**: ``c`` start attempts that time out, plus the ``1 + m + p`` that lead to a training
  attempt, each waiting up to the start timeout ``T`` (``RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S``);
* **training**: ``1 + m + p`` attempts of up to ``attempt_s`` each, every one failing near its end;
* **noticing the failures**: each of those attempts ends in a failure. A worker that stops
  answering is declared dead only after the worker health-check timeout ``D``
  (``RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S``, 600 s: ``_internal/constants.py:39-40``, used at
  ``_internal/execution/worker_group/worker_group.py:767``); a preemption is waited out until the
  deadline the preempted node announced (the earliest one when several nodes go, the node's drain
  deadline as Ray Core reports it: ``_internal/execution/preemption.py:206-209``), or for 120 s
  after it was noticed when the node announced none (``DEFAULT_PREEMPTION_DEADLINE_S``,
  ``_internal/constants.py:70-73``, used at ``_internal/execution/controller/controller.py:732-746``).
  ``P`` is therefore the longest such wait: 120 s by default, longer for nodes that announce a
  longer notice (pass it as ``preemption_wait_s``).
  At most ``m + 1`` of the failures are worker failures and at most ``p + 1`` preemptions, so this
  term is ``m * D + p * P + max(D, P)``.

It is an upper bound for the model above, not a prediction: most failures are noticed within a
health-check interval (2 s), and a preemption is waited out only until its node's deadline.
"""
from __future__ import annotations

import math

from raylab.i18n import _


def default_detection_s() -> float:
    """Ray Train's default worker health-check timeout (``RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S``)."""
    from ray.train.v2._internal import constants  # internal, pinned: Ray 2.58.0

    return float(constants.DEFAULT_WORKER_HEALTH_CHECK_TIMEOUT_S)


def default_preemption_wait_s() -> float:
    """How long Ray Train waits out a preemption whose node reports no deadline (a node that reports
    one is waited for until that deadline, which can be later)."""
    from ray.train.v2._internal import constants  # internal, pinned: Ray 2.58.0

    return float(constants.DEFAULT_PREEMPTION_DEADLINE_S)


def _limits(failure_config) -> tuple[int, int, int]:
    limits = (failure_config.controller_failure_limit, failure_config.max_failures,
              failure_config.max_preemption_failures)
    for value in limits:
        if isinstance(value, bool) or not isinstance(value, int) or value < -1:
            raise ValueError(_("retry limits are integers >= -1, got {limits}").format(limits=limits))
    return limits


def worst_case_terms(failure_config, *, start_timeout_s: float, attempt_s: float,
                     detection_s: float | None = None,
                     preemption_wait_s: float | None = None) -> dict[str, float]:
    """The worst case of one run, term by term (seconds): ``start-ups``, ``training`` and
    ``noticing failures``. Every term is ``math.inf`` when a limit is ``-1`` (retry for ever).

    ``failure_config`` is a ``ray.train.FailureConfig`` (or anything with its three limits);
    ``detection_s`` and ``preemption_wait_s`` default to Ray's own values (600 s, and 120 s: the
    wait for a node that announces no deadline; give the longest notice your nodes announce instead).
    """
    c, m, p = _limits(failure_config)
    d = default_detection_s() if detection_s is None else float(detection_s)
    w = default_preemption_wait_s() if preemption_wait_s is None else float(preemption_wait_s)
    if -1 in (c, m, p):
        return {"start-ups": math.inf, "training": math.inf, "noticing failures": math.inf}
    attempts = 1 + m + p
    return {
        "start-ups": (c + attempts) * float(start_timeout_s),
        "training": attempts * float(attempt_s),
        "noticing failures": m * d + p * w + max(d, w),
    }


def worst_case_s(failure_config, *, start_timeout_s: float, attempt_s: float,
                 detection_s: float | None = None, preemption_wait_s: float | None = None) -> float:
    """Upper bound (seconds) on how long one run can last when every retry it allows happens;
    ``math.inf`` when any limit is ``-1``. See the module docstring for the formula."""
    return sum(worst_case_terms(failure_config, start_timeout_s=start_timeout_s, attempt_s=attempt_s,
                                detection_s=detection_s, preemption_wait_s=preemption_wait_s).values())
