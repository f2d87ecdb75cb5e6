"""raylab.devices: device, backend and ScalingConfig decisions, CUDA branches included.

The decisions are pure functions of "is CUDA available, how many GPUs", so every branch runs here
without a GPU. The backend rule is also checked against Ray 2.58.0's own source, so a Ray upgrade
that changes it fails here rather than in a workshop.
"""
import inspect

import pytest

from raylab import devices


def test_cpu_only_machine_uses_gloo_on_two_cpu_workers():
    plan = devices.plan_devices(cuda_available=False, gpu_count=0)
    assert (plan.use_gpu, plan.device_type, plan.backend, plan.num_workers) == (False, "cpu", "gloo", 2)
    assert plan.resources_per_worker == {"CPU": 1}
    assert "no CUDA device" in plan.reason


def test_cuda_machine_uses_nccl_with_one_worker_per_gpu():
    plan = devices.plan_devices(cuda_available=True, gpu_count=4)
    assert (plan.use_gpu, plan.device_type, plan.backend, plan.num_workers) == (True, "cuda", "nccl", 4)
    assert plan.resources_per_worker == {"GPU": 1}
    assert plan.scaling_kwargs() == {"num_workers": 4, "use_gpu": True, "resources_per_worker": {"GPU": 1}}


def test_cuda_machine_may_use_fewer_workers_but_not_more_than_gpus():
    assert devices.plan_devices(True, 4, num_workers=2).num_workers == 2
    with pytest.raises(ValueError, match="one worker per GPU"):
        devices.plan_devices(True, 1, num_workers=2)


def test_force_cpu_on_a_cuda_machine():
    plan = devices.plan_devices(True, 8, force_cpu=True, num_workers=3)
    assert (plan.use_gpu, plan.backend, plan.num_workers) == (False, "gloo", 3)
    assert "CPU forced" in plan.reason


def test_cuda_available_but_no_visible_device_falls_back_to_cpu():
    plan = devices.plan_devices(cuda_available=True, gpu_count=0)
    assert (plan.use_gpu, plan.backend) == (False, "gloo")
    assert "no device is visible" in plan.reason


@pytest.mark.parametrize("bad", [dict(gpu_count=-1), dict(gpu_count=0, num_workers=0)])
def test_invalid_inputs_are_rejected(bad):
    with pytest.raises(ValueError):
        devices.plan_devices(False, **bad)


def test_backend_rule():
    assert devices.backend_for(1) == "nccl"
    assert devices.backend_for(0.5) == "nccl"
    assert devices.backend_for(0) == "gloo"
    assert devices.backend_for(0, tpus_per_worker=1) == "tpu_dist"


def test_backend_rule_matches_ray_source():
    """Ray 2.58.0's Train V2 picks nccl / tpu_dist / gloo in TorchTrainer.__init__ from use_gpu
    (use_tpu); V2 refuses GPUs in resources_per_worker without use_gpu, so a worker holds a GPU
    exactly when use_gpu is set, which is backend_for's rule."""
    import ray.train
    from ray.train.torch import TorchTrainer

    src = inspect.getsource(TorchTrainer.__init__)
    assert 'torch_config.backend = "tpu_dist"' in src
    assert 'torch_config.backend = "nccl" if is_gpu_training else "gloo"' in src
    for use_gpu, gpus in ((True, 1), (False, 0)):
        trainer = TorchTrainer(lambda config: None, scaling_config=ray.train.ScalingConfig(num_workers=2, use_gpu=use_gpu))
        assert trainer.backend_config.backend == devices.backend_for(gpus)
    with pytest.raises(ValueError):
        ray.train.ScalingConfig(num_workers=2, use_gpu=False, resources_per_worker={"GPU": 1})


def test_scaling_plans_use_gpus_only_when_there_is_one_per_worker():
    on_gpu = devices.scaling_plans(True, 2, counts=(2, 1))
    assert [(p.num_workers, p.backend) for p in on_gpu] == [(1, "nccl"), (2, "nccl")]
    short = devices.scaling_plans(True, 1, counts=(1, 2))
    assert [(p.num_workers, p.backend, p.use_gpu) for p in short] == [(1, "gloo", False), (2, "gloo", False)]
    assert all("cannot hold 2 workers" in p.reason for p in short)
    cpu = devices.scaling_plans(False, 0)
    assert [(p.num_workers, p.backend) for p in cpu] == [(1, "gloo"), (2, "gloo")]
    with pytest.raises(ValueError):
        devices.scaling_plans(False, 0, counts=(0, 1))


def test_detect_matches_what_torch_sees():
    import torch

    plan = devices.detect()
    assert plan.use_gpu == (torch.cuda.is_available() and torch.cuda.device_count() > 0)
    if not torch.cuda.is_available():
        print("\n[info] no CUDA device here: detect() checked on its CPU branch only; "
              "the CUDA branches are covered by the pure-function tests above")
        assert plan.backend == "gloo"


def test_scaling_config_and_torch_config_objects():
    """The Ray objects a plan builds carry the plan's resources and backend (no cluster needed)."""
    gpu = devices.plan_devices(True, 2)
    sc = devices.scaling_config(gpu)
    assert sc.num_workers == 2 and sc.use_gpu
    # use_gpu=True asks for one GPU and no CPU per worker
    assert sc.total_resources == {"GPU": 2.0}
    assert devices.torch_config(gpu).backend == "nccl"
    cpu = devices.plan_devices(False, 0)
    assert devices.scaling_config(cpu).total_resources == {"CPU": 2.0}
    assert devices.torch_config(cpu).backend == "gloo"


def test_ray_default_gpu_request_has_no_cpu():
    """What the lab states: ScalingConfig(use_gpu=True) alone reserves {"GPU": 1} per worker."""
    from ray.train import ScalingConfig

    assert ScalingConfig(num_workers=2, use_gpu=True).total_resources == {"GPU": 2.0}
    assert ScalingConfig(num_workers=2).total_resources == {"CPU": 2.0}


# --- deciding from the cluster, not from the driver (issue 12, item 7) -------------------------

def test_cluster_gpus_counts_whole_logical_gpus():
    assert devices.cluster_gpus({"CPU": 8.0}) == 0
    assert devices.cluster_gpus({"CPU": 8.0, "GPU": 4.0}) == 4
    assert devices.cluster_gpus({"GPU": 2.5}) == 2  # one worker per GPU needs whole GPUs
    assert devices.cluster_gpus({"GPU": 0.9999999999}) == 1  # float sums of fractions


def test_plan_from_cluster_uses_the_clusters_gpus_for_cuda_and_non_cuda_inputs():
    gpu = devices.plan_from_cluster({"CPU": 12.0, "GPU": 4.0, "memory": 1e10})
    assert (gpu.use_gpu, gpu.backend, gpu.num_workers, gpu.resources_per_worker) == (True, "nccl", 4, {"GPU": 1})
    assert gpu.reason.startswith("the cluster offers 4 GPU(s)")
    cpu = devices.plan_from_cluster({"CPU": 2.0, "object_store_memory": 1e8})
    assert (cpu.use_gpu, cpu.backend, cpu.num_workers) == (False, "gloo", 2)
    assert cpu.reason.startswith("the cluster offers no GPU")
    forced = devices.plan_from_cluster({"CPU": 8.0, "GPU": 2.0}, force_cpu=True, num_workers=2)
    assert (forced.use_gpu, forced.backend) == (False, "gloo") and "CPU forced" in forced.reason
    with pytest.raises(ValueError, match="one worker per GPU"):
        devices.plan_from_cluster({"GPU": 1.0}, num_workers=2)


def test_driver_view_warning_names_both_disagreements():
    assert "would train on CPU" in devices.driver_view_warning(False, {"CPU": 4.0, "GPU": 4.0})
    assert "cannot give" in devices.driver_view_warning(True, {"CPU": 4.0})
    assert devices.driver_view_warning(False, {"CPU": 4.0}) == ""
    assert devices.driver_view_warning(True, {"GPU": 1.0}) == ""


def test_detect_cluster_needs_a_running_cluster():
    import ray

    if ray.is_initialized():
        pytest.skip("a cluster is running in this process")
    with pytest.raises(RuntimeError, match="ray.init"):
        devices.detect_cluster()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_cpu_only_head_with_a_gpu_node_driver_view_says_cpu_cluster_view_says_gpu():
    """Lab 08's layout on one machine: a head without GPUs (the driver's node) and a second node
    that registers 2 GPUs. The GPUs are logical (Ray counts what a node registers; no CUDA here),
    which is all the decision reads: the driver's torch sees no CUDA, the cluster offers 2 GPUs,
    and a 1-GPU task is placed on the GPU node, where Ray assigns it a GPU id."""
    import ray
    import torch
    from ray.cluster_utils import Cluster

    if torch.cuda.is_available():
        pytest.skip("the driver has CUDA here: the CPU-only head cannot be shown")
    assert not ray.is_initialized()
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "num_gpus": 0, "include_dashboard": False})
    try:
        gpu_node = cluster.add_node(num_cpus=1, num_gpus=2)
        ray.init(address=cluster.address, log_to_driver=False)
        resources = ray.cluster_resources()
        assert devices.cluster_gpus(resources) == 2

        driver_plan = devices.detect()  # torch.cuda.is_available() on the driver's machine
        cluster_plan = devices.detect_cluster()
        assert (driver_plan.use_gpu, driver_plan.backend) == (False, "gloo")
        assert (cluster_plan.use_gpu, cluster_plan.backend, cluster_plan.num_workers) == (True, "nccl", 2)
        assert "would train on CPU" in devices.driver_view_warning(False, resources)

        @ray.remote(num_gpus=1, num_cpus=0)
        def where():
            return ray.get_runtime_context().get_node_id(), ray.get_gpu_ids()

        node_id, gpu_ids = ray.get(where.remote(), timeout=120)
        assert node_id == gpu_node.node_id and len(gpu_ids) == 1
    finally:
        ray.shutdown()
        cluster.shutdown()
