"""What each Train worker of a graded capstone script trained on, seen from inside the worker.

The capstone's check cannot read a learner's script for "each worker trains on its part of the
data with prepare_model": a script may shard by slicing, by a sampler or by ``prepare_data_loader``,
and wrap the model with ``prepare_model`` or DDP itself. So it watches what the workers do.
:func:`job_config_env` gives the script's process the variable Ray's job submission uses to hand a
driver its job config (``RAY_JOB_CONFIG_JSON_ENV_VAR``, read by ``ray.init``: ray/_private/worker.py);
its runtime environment names :func:`install` as the ``worker_process_setup_hook``, which Ray runs
in every new worker process of that job before it takes work. In a Train worker, :func:`install`
records:

* the distinct rows of the training split (``train.npz``) that reach the model's first layer
  (the ``nn.Linear`` that takes the 2 input features) while it trains, between one report and the
  next (an epoch: a ``DistributedSampler`` deals each rank another half every epoch, so over a
  whole run every rank sees nearly every row); training mode with gradients on, so evaluation
  passes do not count. It also counts every row of those passes (``train_samples``), recognised
  or not: a script that changes the points before the model (normalises them, say) leaves no row
  to recognise, and is judged by that count instead;
* whether a ``DistributedDataParallel`` model ran a training forward pass (``prepare_model``
  wraps the model in DDP whenever there are 2 or more workers);

and writes them to ``<probe dir>/<pid>.json`` at every ``ray.train.report`` (a trial that the
scheduler stops is killed, so nothing is written at exit). Nothing the script computes changes.
"""
from __future__ import annotations

import json
import os
import sys

from raylab.import_hooks import after_import, setup_hook_env

PROBE_DIR_VAR = "RAYLAB_CAPSTONE_PROBE_DIR"
TRAIN_SPLIT_VAR = "RAYLAB_CAPSTONE_TRAIN_SPLIT"
# What this worker process trained on so far (filled once install() has run).
STATE = {"rows": set(), "most_rows": 0, "samples": 0, "most_samples": 0, "ddp": False, "reports": 0}


def job_config_env(probe_dir: str, train_split: str) -> dict:
    """Environment for the script's process: every worker of its job runs :func:`install`."""
    return setup_hook_env(f"{__name__}.install", {PROBE_DIR_VAR: probe_dir, TRAIN_SPLIT_VAR: train_split})


def records(probe_dir: str) -> list[dict]:
    """One record per Train worker process that reported: rank, world size, reports made, the most
    distinct training rows (and the most rows of any kind) it trained on between two reports, rows
    in the split, and whether DDP ran its training."""
    found = []
    for name in sorted(os.listdir(probe_dir)) if os.path.isdir(probe_dir) else []:
        try:
            with open(os.path.join(probe_dir, name)) as f:
                found.append(json.load(f))
        except (OSError, ValueError):  # a file being rewritten when the worker was killed
            continue
    return [r for r in found if r.get("reports")]


def install() -> None:
    """Ray's worker_process_setup_hook: watch this worker process (see the module docstring).

    Ray runs it in every new process of the job (Tune's trial drivers, Train's controllers and
    placement-group cleaners, the workers), so it imports nothing heavy itself: PyTorch is patched
    when the process imports it and ``ray.train.report`` when it imports ``ray.train`` (at once if
    already imported). Importing PyTorch in every process made a graded run about 10 s longer."""
    probe_dir, split = os.environ.get(PROBE_DIR_VAR), os.environ.get(TRAIN_SPLIT_VAR)
    if not probe_dir or not split:
        return
    after_import("torch", lambda: _watch_torch(split))
    after_import("ray.train", lambda: _watch_reports(probe_dir, split))


def _rows_of(split: str) -> set:
    import numpy as np

    with np.load(split) as data:
        return {row.tobytes() for row in np.ascontiguousarray(data["x"], dtype=np.float32)}


def _watch_torch(split: str) -> None:
    """Count training rows at the model's first layer and note DDP training forwards."""
    import torch

    train_rows = _rows_of(split)
    state = STATE  # the module's, so a test can read it
    state["split_rows"] = len(train_rows)
    linear_forward = torch.nn.Linear.forward

    def watched_linear(self, x):
        if self.in_features == 2 and self.training and torch.is_grad_enabled() and isinstance(x, torch.Tensor):
            rows = x.detach().to("cpu", torch.float32).reshape(-1, 2).contiguous().numpy()
            state["samples"] += len(rows)
            state["rows"] |= {r.tobytes() for r in rows} & train_rows
        return linear_forward(self, x)

    ddp_forward = torch.nn.parallel.DistributedDataParallel.forward

    def watched_ddp(self, *args, **kwargs):
        if self.training and torch.is_grad_enabled():
            state["ddp"] = True
        return ddp_forward(self, *args, **kwargs)

    torch.nn.Linear.forward = watched_linear
    torch.nn.parallel.DistributedDataParallel.forward = watched_ddp


def _watch_reports(probe_dir: str, split: str) -> None:
    """Write this worker's record at every ``ray.train.report``."""
    from ray.train.v2.api import train_fn_utils

    # from sys.modules: while its import finishes, `ray.train` is not yet an attribute of `ray`
    train = sys.modules["ray.train"]
    state = STATE
    report = train.report

    def watched_report(*args, **kwargs):
        end_interval(state)
        if "split_rows" not in state:  # a process that trains without PyTorch
            state["split_rows"] = len(_rows_of(split))
        _write(probe_dir, state, state["split_rows"])
        return report(*args, **kwargs)

    train.report = watched_report
    # `from ray.train import report` pickled in the script resolves ray.train.report; the module
    # that defines it is patched too, for a script that imports it from there.
    train_fn_utils.report = watched_report


def end_interval(state: dict) -> None:
    """A report: keep the largest count of rows trained on between two reports, start a new one."""
    state["reports"] += 1
    state["most_rows"] = max(state["most_rows"], len(state["rows"]))
    state["most_samples"] = max(state["most_samples"], state["samples"])
    state["rows"], state["samples"] = set(), 0


def _write(probe_dir: str, state: dict, split_rows: int) -> None:
    import ray.train

    context = ray.train.get_context()
    record = {"pid": os.getpid(), "rank": context.get_world_rank(), "world": context.get_world_size(),
              "run": context.get_experiment_name(), "reports": state["reports"],
              "train_rows": state["most_rows"], "train_samples": state["most_samples"], "split_rows": split_rows, "ddp": state["ddp"]}
    path = os.path.join(probe_dir, f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)
