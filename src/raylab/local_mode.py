"""Ray Train's local mode as the test cells use it: a training function run once, in this process.

``ScalingConfig(num_workers=0)`` makes ``TorchTrainer.fit()`` call the function right here, with no
Ray workers and no storage (``Result.metrics`` is the last report's, ``Result.path`` is None). It
sets up no ``torch.distributed`` process group by itself, so a right answer that asks
``torch.distributed`` for its rank (a one-worker Train run answers 0) would crash there. Ray's local
mode starts a process group when it finds torchrun's variables (``ray/train/v2/_internal/execution/
local_mode/torch.py``, ``has_torchrun_env``); :func:`fit` sets them for a world of one process, so
``ray.train.get_context()`` and ``torch.distributed`` agree as they do in a one-worker run.

Ray's local mode also leaves its worker context installed after ``fit()`` returns (and its process
group, when the function raised), so a later ``ray.train.report`` in the same kernel would "report"
instead of saying it runs outside training. :func:`fit` puts both back as they were.
"""
from __future__ import annotations

import socket

from raylab.cluster import env_vars


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def single_process_env() -> dict:
    """torchrun's variables for one process on this machine (rank 0 of 1)."""
    return {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}


def fit(train_loop_per_worker, config: dict | None = None):
    """``TorchTrainer(train_loop_per_worker, train_loop_config=config,
    scaling_config=ScalingConfig(num_workers=0)).fit()`` as one process of a world of one; the
    process's Train context, process group and environment are as before when it returns or raises."""
    import torch.distributed as dist
    from ray.train import ScalingConfig
    from ray.train.torch import TorchTrainer
    from ray.train.v2._internal.execution import train_fn_utils

    trainer = TorchTrainer(train_loop_per_worker, train_loop_config=config,
                           scaling_config=ScalingConfig(num_workers=0))
    context = train_fn_utils._train_fn_utils
    try:
        with env_vars(**single_process_env()):
            return trainer.fit()
    finally:
        train_fn_utils.set_train_fn_utils(context)
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
