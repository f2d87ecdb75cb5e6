"""raylab.local_mode: a training function in Ray Train's local mode, as one process of a world of one."""
import os

import torch.distributed as dist

from raylab import local_mode


def _uses_torch_distributed(config):
    import ray.train
    import torch

    total = torch.tensor([float(config["x"])])
    dist.all_reduce(total)  # a world of one: the sum is the value itself
    ray.train.report({"rank": dist.get_rank(), "world": dist.get_world_size(),
                      "ray_rank": ray.train.get_context().get_world_rank(), "sum": float(total)})
    return "done"


def test_torch_distributed_works_in_local_mode_and_is_gone_afterwards():
    before = {k: os.environ.get(k) for k in local_mode.single_process_env()}
    result = local_mode.fit(_uses_torch_distributed, {"x": 3})
    assert result.metrics == {"rank": 0, "world": 1, "ray_rank": 0, "sum": 3.0}
    assert result.return_value == "done" and result.path is None
    assert not dist.is_initialized()  # Ray's local mode destroys the group it made
    assert {k: os.environ.get(k) for k in before} == before


def test_plain_local_mode_has_no_process_group():
    """Why the helper exists: without torchrun's variables the same function cannot run."""
    from ray.train import ScalingConfig
    from ray.train.torch import TorchTrainer

    def rank_only(config):
        import ray.train
        ray.train.report({"rank": dist.get_rank()})

    try:
        TorchTrainer(rank_only, scaling_config=ScalingConfig(num_workers=0)).fit()
    except Exception as exc:  # noqa: BLE001 - the error is the point
        assert "process group" in str(exc).lower() or "initialized" in str(exc).lower(), exc
    else:
        raise AssertionError("torch.distributed.get_rank() worked in plain local mode")


def test_after_a_local_run_train_report_again_says_it_is_outside_training():
    """Ray's local mode leaves its worker context behind; a learner's next top-level
    ``ray.train.report`` must still fail as it does before any run."""
    import ray.train
    from ray.train.v2._internal.execution import train_fn_utils

    before = train_fn_utils._train_fn_utils
    local_mode.fit(_uses_torch_distributed, {"x": 1})
    assert train_fn_utils._train_fn_utils is before
    try:
        local_mode.fit(lambda config: 1 / 0, {})
    except ZeroDivisionError:
        pass
    assert train_fn_utils._train_fn_utils is before and not dist.is_initialized()
    if before is None:
        try:
            ray.train.report({"loss": 1.0})
        except RuntimeError:
            pass
        else:
            raise AssertionError("ray.train.report outside training did not raise after a local run")
