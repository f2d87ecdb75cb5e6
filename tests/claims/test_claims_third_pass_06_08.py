"""Third accuracy pass, labs 06-08 (issue 29): what the labs now state, checked on Ray 2.58.0.

* Lab 08, section 7 (and lab 05): a preemption is waited out until the deadline its node
  announces; only a node that announces none is waited for 120 s after Ray Train noticed it. So
  120 s is not a worst case, and the retry bound grows with the longest deadline a node may
  announce (``raylab.retry_budget.worst_case_s(..., preemption_wait_s=...)``).
* Lab 08, section 3: an m5.xlarge's allocatable memory follows from the EKS-optimized AMI's
  reservations: capacity ``15896988Ki`` minus kube-reserved ``255 + 11 x 58`` MiB minus the
  100 MiB hard eviction threshold is ``14880156Ki``, about 14.19 GiB (the public formula and the
  node's reported capacity are operational guidance; this checks the arithmetic the lab's plan uses).
* Lab 08, exercise 1: a worker container that spells "no GPU" as a GPU amount of 0 (number or
  string) is a valid manifest whose Pods give Ray no GPU.
* Lab 06, exercise 3: ``TuneConfig(reuse_actors=...)`` is off unless asked for, which the
  exercise's one-process check relies on.
"""
import time

import pytest

from raylab import plan_review, retry_budget
from raylab.kuberay import validate_manifest
from raylab.kuberay_groups import worker_groups
from raylab.plan_review import example_plan


def test_announced_preemption_deadline_is_waited_for_beyond_120_s():
    from ray.train.v2._internal import constants
    from ray.train.v2._internal.execution.controller.controller import TrainController
    from ray.train.v2.api.preemption import PreemptionInfo

    assert constants.DEFAULT_PREEMPTION_DEADLINE_S == 120.0
    noticed = time.time() - 300  # 5 minutes ago: past the 120 s fallback
    announced = PreemptionInfo(deadline_ms=int((noticed + 900) * 1000), preempted_node_to_ranks={"n": [0]})
    unannounced = PreemptionInfo(deadline_ms=None, preempted_node_to_ranks={"n": [0]})
    assert not TrainController._is_preemption_deadline_exceeded(announced, noticed)
    assert TrainController._is_preemption_deadline_exceeded(unannounced, noticed)
    # a deadline already past ends the wait, however recent the notice
    past = PreemptionInfo(deadline_ms=int((time.time() - 1) * 1000), preempted_node_to_ranks={"n": [0]})
    assert TrainController._is_preemption_deadline_exceeded(past, time.time())


def test_retry_bound_grows_with_the_announced_deadline():
    plan = example_plan()
    times = dict(start_timeout_s=plan.worker_start_timeout_s, attempt_s=plan.attempt_s,
                 detection_s=plan.health_check_timeout_s)
    at_120 = retry_budget.worst_case_s(plan.failure_config, **times, preemption_wait_s=120.0)
    at_900 = retry_budget.worst_case_s(plan.failure_config, **times, preemption_wait_s=900.0)
    assert at_120 == 12720
    # p x (900 - 120) for the allowed preemption, and the last failure now costs P = 900 > D = 600
    assert at_900 - at_120 == 1 * 780 + (900 - 600)
    assert at_900 <= plan.rayjob["spec"]["activeDeadlineSeconds"]


def test_m5_xlarge_allocatable_from_the_eks_reservations():
    assert plan_review.eks_kube_reserved_memory_mi(58) == 893
    reserved_ki = (893 + 100) * 1024
    assert plan_review.M5_XLARGE_CAPACITY_KI - reserved_ki == 14880156
    gib = plan_review.eks_allocatable_memory_gib(plan_review.M5_XLARGE_CAPACITY_KI, plan_review.M5_XLARGE_MAX_PODS)
    assert gib == 14880156 / 2**20 and round(gib, 2) == 14.19
    assert plan_review.eks_allocatable_cpu(4) == 3.92 and plan_review.eks_allocatable_cpu(16) == 15.89
    system = example_plan().node_groups[0]
    assert (system.instance_type, system.allocatable_cpu, system.allocatable_memory_gib) == ("m5.xlarge", 3.92, gib)


@pytest.mark.parametrize("amount", [0, "0", "0m"])
def test_a_gpu_amount_of_zero_is_valid_and_gives_ray_no_gpu(amount):
    import yaml

    from raylab.kuberay import load_example

    job = load_example("rayjob_tune_gpu.yaml")
    group = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    for kind in ("requests", "limits"):
        group["template"]["spec"]["containers"][0]["resources"][kind]["nvidia.com/gpu"] = amount
    assert validate_manifest(yaml.safe_dump(job)) == []
    assert worker_groups(job)[0].ray_resources["GPU"] == 0.0


def test_tune_reuse_actors_is_off_by_default():
    from ray import tune

    assert not tune.TuneConfig().reuse_actors
