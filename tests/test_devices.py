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
    """Ray 2.58.0 picks nccl / tpu_dist / gloo from the worker's GPU / TPU resources."""
    from ray.train.torch import config as torch_config

    src = inspect.getsource(torch_config._TorchBackend.on_start)
    assert 'if num_gpus_per_worker > 0:\n                    backend = "nccl"' in src
    assert 'backend = "tpu_dist"' in src
    assert 'else:\n                    backend = "gloo"' in src


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
