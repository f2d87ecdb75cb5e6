"""Give every Ray Train worker the ranks it would have on a node of its own, on one machine.

Ray Train numbers the workers of each node: ``get_local_rank()`` counts the workers that share a
node IP (ray/train/v2/_internal/execution/worker_group/worker_group.py, ``_assign_worker_ranks``),
and ``LOCAL_RANK`` and ``get_node_rank()`` follow from it. On one machine every worker shares the
IP, so the local rank always equals the world rank, and an answer that names files or picks data
by the local rank cannot be told from a right one. Simulated nodes (``ray.cluster_utils.Cluster``)
share the IP too. A job started with :func:`job_config_env` in its driver's environment runs
:func:`install` in every worker process (Ray's ``worker_process_setup_hook``); in a Train
controller it numbers the workers as if each ran on a node of its own: local rank 0, local world
size 1, node rank = world rank. Everything else (placement, the process group) is unchanged.
"""
from __future__ import annotations

import dataclasses
import sys

from raylab.checks.import_hooks import after_import, setup_hook_env

WORKER_GROUP_MODULE = "ray.train.v2._internal.execution.worker_group.worker_group"


def job_config_env() -> dict:
    """Environment for a driver process whose Train runs number their workers one per node."""
    return setup_hook_env(f"{__name__}.install")


def install() -> None:
    """Ray's worker_process_setup_hook: patch the rank assignment once Ray Train's worker group
    module is imported (only a Train controller imports it to assign ranks)."""
    after_import(WORKER_GROUP_MODULE, _one_worker_per_node)


def _one_worker_per_node() -> None:
    worker_group = sys.modules[WORKER_GROUP_MODULE].WorkerGroup
    assign = worker_group._assign_worker_ranks

    def assign_as_if_apart(workers, *args, **kwargs):
        real = [w.metadata for w in workers]
        for i, worker in enumerate(workers):  # a node IP of its own for the grouping only
            worker.metadata = dataclasses.replace(worker.metadata, node_ip=f"{worker.metadata.node_ip}#{i}")
        try:
            return assign(workers, *args, **kwargs)
        finally:
            for worker, metadata in zip(workers, real):
                worker.metadata = metadata

    worker_group._assign_worker_ranks = staticmethod(assign_as_if_apart)


def call(fn, *args, timeout_s: float = 240.0, **kwargs):
    """``fn(*args, **kwargs)`` in a driver process of its own (joined to this cluster) whose Train
    runs number their workers as if each ran on a node of its own.

    For a test cell: a Train run the learner's code starts there gives its workers local rank 0,
    local world size 1 and node rank = world rank, so data sharded or files named by the local
    rank collide, while world ranks, placement and the process group are those of a normal run.
    What ``fn`` raises comes back as :class:`raylab.checks.common.CheckFailed` with its message (a
    ``CheckFailed`` raised in the child keeps its own text)."""
    from raylab.checks.common import CheckFailed
    from raylab.i18n import _
    from raylab.child_process import run_in_child

    run = run_in_child(lambda: fn(*args, **kwargs), timeout_s=timeout_s, env=job_config_env())
    if run.error is not None:
        message = run.error.removeprefix("CheckFailed: ")
        if run.timed_out:
            message = _("the run did not finish in {seconds:g} s (a rank waiting forever?)").format(seconds=timeout_s)
        raise CheckFailed(message)
    return run.value
