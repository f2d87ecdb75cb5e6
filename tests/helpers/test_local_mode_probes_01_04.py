"""raylab.devices.moves_on_a_described_gpu and raylab.ddp.reports_with_a_fake_clock: a training
loop run once in Ray Train's local mode (this process, no cluster) as a GPU worker that is not
there, or under a clock that moves only inside ``train_epoch``."""
import os
import sys
import time

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _device_loop(config):
    import torch

    import ray.train
    import ray.train.torch

    device = ray.train.torch.get_device()
    x = torch.randn(12, 2)
    x = x.to(device) if config["move"] else x
    model = ray.train.torch.prepare_model(torch.nn.Linear(2, 3))
    ray.train.report({"loss": float(model(x).sum())})


def test_described_gpu_records_where_tensors_and_the_model_go_and_leaves_everything_as_it_was():
    import torch

    import ray.train.torch

    from raylab.devices import moves_on_a_described_gpu

    moved = moves_on_a_described_gpu(_device_loop, {"move": True}, device="cuda:1")
    assert moved == {"tensors": [((12, 2), "cuda:1")], "modules": [("Linear", "cuda:1")], "error": None}
    kept = moves_on_a_described_gpu(_device_loop, {"move": False}, device="cuda:1")
    assert kept["tensors"] == [] and kept["modules"] == [("Linear", "cuda:1")]
    assert torch.zeros(2).to("cpu").device.type == "cpu"
    assert ray.train.torch.get_devices.__module__.startswith("ray.train")  # Ray's own function is back


def _timed_loop(config):
    import time as _t

    import torch.distributed as dist

    import ray.train
    import raylab.running_example as rex

    model = rex.build_model(8)
    optimizer = __import__("torch").optim.Adam(model.parameters())
    x, y = rex.make_splits(0)["val"]
    start_once = _t.perf_counter()
    for epoch in range(config["epochs"]):
        start = _t.perf_counter()
        rex.train_epoch(model, optimizer, x, y, epoch=epoch)
        gathered = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, {"epoch_s": _t.perf_counter() - start,
                                          "since_start": _t.perf_counter() - start_once})
        ray.train.report({"epoch": epoch, "ranks": gathered})


def test_fake_clock_moves_only_inside_train_epoch_and_a_group_of_one_serves_collectives():
    import torch.distributed as dist

    from raylab.ddp import reports_with_a_fake_clock

    out = reports_with_a_fake_clock(_timed_loop, {"epochs": 2}, epoch_seconds=(0.75, 0.5))
    assert out["error"] is None
    assert [m["ranks"] for m in out["reports"]] == [[{"epoch_s": 0.75, "since_start": 0.75}],
                                                   [{"epoch_s": 0.5, "since_start": 1.25}]]
    assert time.perf_counter() != 1001.25 and not dist.is_initialized()
    assert "MASTER_PORT" not in os.environ or os.environ["MASTER_PORT"] != ""
