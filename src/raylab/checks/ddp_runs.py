"""Run a learner's data-parallel training function for a test cell and judge what it returned.

- :func:`fit_and_collect` runs a training function on CPU workers with bounded waits and returns
  what rank 0 returned, turning a failed run into a readable check failure;
- :func:`check_per_rank_list` requires one diagnostics dict per rank (what
  :func:`raylab.ddp.gather` collects).
"""
from __future__ import annotations

from raylab.checks.common import CheckFailed, check
from raylab.cluster import env_vars
from raylab.i18n import _


def fit_and_collect(train_fn, config: dict, *, storage_path: str, num_workers: int = 2,
                    timeout_s: float = 60.0, name: str = "ddp-check") -> list:
    """Run ``train_fn`` with ``TorchTrainer`` on ``num_workers`` CPU workers; return rank 0's value.

    Every wait is bounded by ``timeout_s``: the gloo collectives (``TorchConfig(timeout_s=...)``),
    Ray Train's report barrier (``RAY_TRAIN_COLLECTIVE_TIMEOUT_S``) and the worker-group start
    (``RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S`` with no controller retry). A run that fails raises
    :class:`~raylab.checks.common.CheckFailed` naming the error each failing rank raised.
    """
    import ray.train
    from ray.train.torch import TorchConfig, TorchTrainer

    trainer = TorchTrainer(
        train_fn,
        train_loop_config=dict(config),
        torch_config=TorchConfig(timeout_s=int(timeout_s)),
        scaling_config=ray.train.ScalingConfig(num_workers=num_workers),
        run_config=ray.train.RunConfig(
            name=name, storage_path=str(storage_path),
            failure_config=ray.train.FailureConfig(max_failures=0, controller_failure_limit=0)),
    )
    with env_vars(RAY_TRAIN_COLLECTIVE_TIMEOUT_S=timeout_s,
              RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S=timeout_s):
        try:
            result = trainer.fit()
        except ray.train.WorkerGroupError as exc:
            failures = "; ".join(_("rank {rank}: {error}").format(rank=rank, error=_first_line(err))
                                 for rank, err in sorted(exc.worker_failures.items()))
            raise CheckFailed(_("the training function raised on a worker ({failures}).").format(failures=failures)
                              + "\n" + _("Hint: {hint}").format(
                                  hint=_("run it again and read the worker's traceback above."))) from None
        except ray.train.TrainingFailedError as exc:
            raise CheckFailed(_("the training run failed before or outside your function: {error}").format(
                error=_first_line(exc))) from None
    return check_per_rank_list(result.return_value, num_workers)


def check_per_rank_list(value, num_workers: int) -> list:
    """``value`` if it is a list of one dict per rank; otherwise a readable check failure."""
    check(isinstance(value, list) and len(value) == num_workers
          and all(isinstance(d, dict) for d in value),
          _("rank 0 should return a list with one diagnostics dict per rank ({n}), got {type}: {value}").format(
              n=num_workers, type=type(value).__name__, value=str(value)[:200]),
          hint=_("collect them with raylab.ddp.gather(diagnostics) on every rank and return that"))
    return value


def _first_line(err) -> str:
    text = str(err).strip()
    cause = getattr(err, "cause", None)  # RayTaskError keeps the user's exception here
    if cause is not None:
        text = f"{type(cause).__name__}: {cause}"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return (lines[-1] if lines else type(err).__name__)[:300]
