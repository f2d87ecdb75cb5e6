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
* which training rows (their indices in ``train.npz``) it trained on in the last whole epoch
  (``last_rows``), so that two workers of one run that train on the same part show;
* how many distinct rows of the held-out splits (``val.npz`` and ``test.npz`` beside
  ``train.npz``) the model trained on over the whole run (``heldout_rows``): rows of a training
  pass whose backward pass ran (a validation pass without ``torch.no_grad()`` does not count);

and, when the job's environment says so (:func:`job_config_env`, ``apart=True``), numbers the
Train workers of each run as two nodes would (:mod:`raylab.checks.separate_nodes`: local rank 0 on every
worker), so a script that picks its part of the data by the local rank shows;

and writes them to ``<probe dir>/<pid>.json`` at every ``ray.train.report`` (a trial that the
scheduler stops is killed, so nothing is written at exit). Nothing the script computes changes.
"""
from __future__ import annotations

import json
import os
import sys

from raylab.checks.import_hooks import after_import, setup_hook_env

PROBE_DIR_VAR = "RAYLAB_CAPSTONE_PROBE_DIR"
TRAIN_SPLIT_VAR = "RAYLAB_CAPSTONE_TRAIN_SPLIT"
APART_VAR = "RAYLAB_CAPSTONE_NODES_APART"
HELDOUT_SPLITS = ("val.npz", "test.npz")  # beside the training split
# What this worker process trained on so far (filled once install() has run).
STATE = {"rows": set(), "most_rows": 0, "samples": 0, "most_samples": 0, "ddp": False, "reports": 0,
         "last_rows": [], "heldout": set()}


def job_config_env(probe_dir: str, train_split: str, apart: bool = False) -> dict:
    """Environment for the script's process: every worker of its job runs :func:`install`; with
    ``apart`` its Train runs number their workers one per node (:mod:`raylab.checks.separate_nodes`)."""
    env = {PROBE_DIR_VAR: probe_dir, TRAIN_SPLIT_VAR: train_split}
    if apart:
        env[APART_VAR] = "1"
    return setup_hook_env(f"{__name__}.install", env)


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
    if os.environ.get(APART_VAR) == "1":
        from raylab.checks import separate_nodes

        separate_nodes.install()
    after_import("torch", lambda: _watch_torch(split))
    after_import("ray.train", lambda: _watch_reports(probe_dir, split))


def _rows_of(split: str) -> set:
    return set(_row_index(split))


def _row_index(split: str) -> dict:
    """``{row bytes: index}`` of a split's rows (float32)."""
    import numpy as np

    with np.load(split) as data:
        return {row.tobytes(): i for i, row in enumerate(np.ascontiguousarray(data["x"], dtype=np.float32))}


def _heldout_rows(split: str) -> set:
    """The rows of the held-out splits beside the training split (none when they are not there)."""
    folder, found = os.path.dirname(split), set()
    for name in HELDOUT_SPLITS:
        if os.path.exists(os.path.join(folder, name)):
            found |= _rows_of(os.path.join(folder, name))
    return found


def _watch_torch(split: str) -> None:
    """Count training rows at the model's first layer and note DDP training forwards."""
    import torch

    train_rows = _row_index(split)
    heldout_rows = _heldout_rows(split)
    state = STATE  # the module's, so a test can read it
    state["split_rows"] = len(train_rows)
    linear_forward = torch.nn.Linear.forward

    def watched_linear(self, x):
        if self.in_features == 2 and self.training and torch.is_grad_enabled() and isinstance(x, torch.Tensor):
            rows = x.detach().to("cpu", torch.float32).reshape(-1, 2).contiguous().numpy()
            state["samples"] += len(rows)
            seen = {r.tobytes() for r in rows}
            state["rows"] |= {train_rows[r] for r in seen if r in train_rows}
            held = seen & heldout_rows
            out = linear_forward(self, x)
            if held and out.requires_grad:
                # trained on only when a backward pass runs through them: a validation pass
                # without torch.no_grad() goes through here too, and never calls backward
                out.register_hook(lambda grad, held=held: state["heldout"].update(held))
            return out
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
    state["last_rows"] = sorted(state["rows"])
    state["rows"], state["samples"] = set(), 0


def _write(probe_dir: str, state: dict, split_rows: int) -> None:
    import ray
    import ray.train

    context = ray.train.get_context()
    record = {"pid": os.getpid(), "rank": context.get_world_rank(), "world": context.get_world_size(),
              "local_rank": context.get_local_rank(), "run": context.get_experiment_name(),
              "group": ray.get_runtime_context().get_placement_group_id(),  # one per worker group
              "reports": state["reports"],
              "train_rows": state["most_rows"], "train_samples": state["most_samples"], "split_rows": split_rows, "ddp": state["ddp"],
              "last_rows": state["last_rows"], "heldout_rows": len(state["heldout"])}
    path = os.path.join(probe_dir, f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)
