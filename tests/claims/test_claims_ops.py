"""Operational claims of lab 08 (C41-C44, with C13, C22, C25), checked where something can run.

Kubernetes, KubeRay and EKS cannot run here, so each claim is checked in two ways. The first is
the part Ray shows on one machine: a placement group that waits, a multi-node cluster simulated
with `ray.cluster_utils.Cluster`, and what Train's start-up timeout covers. The second is the lab's
own reviewer (the solution of `review_plan_answer` in lab 08) applied to the real KubeRay v1.7.0
example manifest and to real Ray config objects.
"""
import os

import pytest

from grader.proof import mutants
from raylab import kuberay, plan_review

LAB = "08_operating_on_kuberay"
START_TIMEOUT_VAR = "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"


def _review(plan) -> set:
    """The lab's reference reviewer (its solution cell), applied to ``plan``: the set of codes."""
    namespace = {"proposal": plan_review.example_plan()}
    exec(mutants.answer_sources(LAB)["review_plan_answer"], namespace)  # noqa: S102 - our own solution
    return {f.code for f in namespace["review_plan"](plan)}


def _workers(plan):
    return plan.rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]


# ---- fast: schema and reviewer on real artefacts -------------------------------------------
def test_c41_a_schema_valid_manifest_can_still_fail_the_ray_and_kuberay_layers():
    from ray.train import ScalingConfig
    from ray.tune import TuneConfig

    plan = plan_review.example_plan()
    assert kuberay.validate_manifest(plan.rayjob) == []  # the API server would accept it
    assert _review(plan) == set()
    plan.scaling_config = ScalingConfig(num_workers=2, use_gpu=True,
                                        resources_per_worker={"CPU": 12, "GPU": 1})
    assert kuberay.validate_manifest(plan.rayjob) == []
    assert _review(plan) == {"BUNDLE_TOO_BIG"}  # Ray layer vs the Pod shape
    plan = plan_review.example_plan()
    plan.tune_config = TuneConfig(max_concurrent_trials=4)  # 8 bundles, maxReplicas 6
    assert _review(plan) == {"MAX_REPLICAS_TOO_LOW"}  # KubeRay's worker-group limit


def test_c41_the_head_pod_must_fit_a_nodes_allocatable_capacity():
    plan = plan_review.example_plan()
    head = plan.rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}}
    assert kuberay.validate_manifest(plan.rayjob) == []  # the API server accepts it ...
    assert _review(plan) == {"HEAD_DOES_NOT_FIT"}  # ... and no m5.xlarge (3.92 CPUs allocatable) takes it


def test_c43_autoscaling_needs_gpu_supply_and_explicit_limits():
    from ray.train import FailureConfig

    plan = plan_review.example_plan()
    plan.node_groups = [plan_review.NodeGroup("cpu", "m5.4xlarge", cpus=16, gpus=0, max_nodes=20,
                                          allocatable_cpu=15.89, allocatable_memory_gib=58.0)]
    assert _review(plan) == {"NO_GPU_GROUP"}  # no autoscaler can add a GPU no node group has
    plan = plan_review.example_plan()
    plan.failure_config = FailureConfig(max_failures=2)
    assert _review(plan) == {"RETRIES_EXCEED_DEADLINE"}
    plan.rayjob["spec"].pop("activeDeadlineSeconds")
    assert _review(plan) == {"NO_DEADLINE"}


def test_c25_default_retry_limits_never_fit_a_deadline():
    from ray.train import FailureConfig

    defaults = FailureConfig()
    assert (defaults.max_failures, defaults.controller_failure_limit,
            defaults.max_preemption_failures) == (0, -1, -1)
    plan = plan_review.example_plan()
    plan.failure_config = defaults
    assert _review(plan) == {"RETRIES_EXCEED_DEADLINE"}
    plan.failure_config = FailureConfig(max_failures=2, controller_failure_limit=2,
                                        max_preemption_failures=1)
    # start-ups (2+1+2+1)*600 + training 4*1800 + noticing 2*600+1*120+600 = 12720 s <= 14400 s
    assert _review(plan) == set()
    # The old plan's limits (3, 2, 2) fit only when the counters are taken one at a time; together,
    # with the time to notice each failure, they do not.
    plan.failure_config = FailureConfig(max_failures=2, controller_failure_limit=3,
                                        max_preemption_failures=2)
    assert _review(plan) == {"RETRIES_EXCEED_DEADLINE"}  # 15840 s > 14400 s


def test_c22_storage_path_must_be_shared_by_every_pod():
    assert _review(plan_review.example_plan()) == set()  # RWX PVC on head and workers
    for path in ("s3://team-bucket/results", "/mnt/results/run-3"):
        plan = plan_review.example_plan()
        plan.storage_path = path
        assert _review(plan) == set(), path
    plan = plan_review.example_plan()
    plan.rayjob["spec"]["shutdownAfterJobFinishes"] = False
    plan.storage_path = "/tmp/ray_results"
    assert _review(plan) == {"POD_LOCAL_STORAGE"}


def test_c44_deleting_the_cluster_with_results_in_its_pods_is_flagged():
    plan = plan_review.example_plan()
    assert plan.rayjob["spec"]["shutdownAfterJobFinishes"] is True
    plan.storage_path = "/tmp/ray_results"
    assert _review(plan) == {"POD_LOCAL_STORAGE", "DELETED_BEFORE_PERSISTED"}


# ---- slow: what Ray itself shows on one machine --------------------------------------------
@pytest.mark.slow
def test_c41_bundle_bigger_than_every_node_waits_although_the_total_fits():
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.placement_group import placement_group, remove_placement_group

    assert not ray.is_initialized()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=2)
        ray.init(address=cluster.address)
        assert ray.cluster_resources()["CPU"] == 4.0
        too_big = placement_group([{"CPU": 3}], strategy="STRICT_PACK")
        assert not too_big.wait(timeout_seconds=5)  # 4 CPUs in total, no node has 3
        spread = placement_group([{"CPU": 2}, {"CPU": 2}], strategy="SPREAD")
        assert spread.wait(timeout_seconds=30)
        for pg in (too_big, spread):
            remove_placement_group(pg)
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.slow
def test_c13_a_gpu_shortage_waits_instead_of_failing():
    from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group

    import raylab

    raylab.start_cluster(quiet=True)
    try:
        pg = placement_group([{"GPU": 1}])
        assert not pg.wait(timeout_seconds=3)
        assert placement_group_table(pg)["state"] == "PENDING"  # no error: it waits
        remove_placement_group(pg)
    finally:
        assert raylab.stop_cluster() == []


@pytest.fixture(scope="module")
def start_timeout_runs(tmp_path_factory):
    """One cluster, two Train runs with a 3 s start timeout: a slow start after placement, and a
    placement that cannot happen. Returns what each did; no Ray is left running afterwards."""
    from ray.train import ControllerError, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    import raylab

    storage = tmp_path_factory.mktemp("c42-storage")
    saved = os.environ.get(START_TIMEOUT_VAR)
    os.environ[START_TIMEOUT_VAR] = "3"
    raylab.start_cluster(quiet=True)
    try:
        def slow_start(config):
            import json
            import tempfile
            import time as _time

            import ray.train

            began = _time.time()
            _time.sleep(config["startup_s"])  # stands for data, checkpoint or image access
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "state.json"), "w") as fh:
                    json.dump({"step": 0}, fh)
                ray.train.report({"waited_s": _time.time() - began},
                                 checkpoint=ray.train.Checkpoint.from_directory(d))

        no_retry = FailureConfig(controller_failure_limit=0)
        result = TorchTrainer(
            slow_start, train_loop_config={"startup_s": 8}, scaling_config=ScalingConfig(num_workers=1),
            run_config=RunConfig(name="slow-start", storage_path=str(storage), failure_config=no_retry),
        ).fit()
        error = None
        try:
            TorchTrainer(lambda: None, scaling_config=ScalingConfig(num_workers=3),
                         run_config=RunConfig(name="no-room", storage_path=str(storage),
                                              failure_config=no_retry)).fit()
        except ControllerError as exc:
            error = exc
    finally:
        left = raylab.stop_cluster()
        if saved is None:
            os.environ.pop(START_TIMEOUT_VAR, None)
        else:
            os.environ[START_TIMEOUT_VAR] = saved
    assert left == []
    return {"result": result, "error": error, "storage": str(storage)}


@pytest.mark.slow
def test_c42_start_up_after_placement_is_not_bounded_by_the_start_timeout(start_timeout_runs):
    from ray.train.v2._internal.exceptions import WorkerGroupStartupTimeoutError

    # 8 s of start-up work after placement, with a 3 s start timeout and no controller retries:
    # the run still succeeds, and the delay is all the job's.
    assert start_timeout_runs["result"].metrics["waited_s"] >= 8
    # What the timeout does bound is the wait for the placement group (3 workers on 2 CPUs).
    error = start_timeout_runs["error"]
    assert error is not None, "an unplaceable worker group should end the run"
    assert isinstance(error.controller_failure, WorkerGroupStartupTimeoutError)


@pytest.mark.slow
def test_c44_results_on_storage_path_are_there_after_the_cluster_is_gone(start_timeout_runs):
    # The fixture has stopped Ray: the checkpoint must be found under storage_path, by listing.
    checkpoint = start_timeout_runs["result"].checkpoint
    assert checkpoint is not None
    assert checkpoint.path.startswith(start_timeout_runs["storage"])
    assert "state.json" in os.listdir(checkpoint.path)
