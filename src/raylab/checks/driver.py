"""Checks for an exercise in which the learner writes a whole Ray Train driver (lab 01).

The learner's function builds a ``TorchTrainer``, calls ``fit()`` and reads the ``Result`` back. A
test cell cannot see inside it, so these helpers look at what Ray really did and what was left on
disk:

* :func:`run_bounded` calls the learner's function with every Ray Train wait bounded (a rank that
  skips ``ray.train.report`` times out instead of hanging) and turns any error into a readable
  :class:`raylab.checks.common.CheckFailed`; it also returns how many Train workers each new run started,
  read from the cluster's actor table (:func:`raylab.checks.capstone.worker_group_sizes`), so an
  answer cannot claim two workers while running one.
* :func:`path_is_under` compares folders after resolving links, so ``/tmp/x`` and its real path
  count as the same place.
"""
from __future__ import annotations

import os

from raylab.checks.common import CheckFailed
from raylab.i18n import _

# Ray Train reads these from the driver's environment when a run starts. Only the report barrier
# is bounded: the worker-group start keeps Ray's own limit (60 s), which a loaded 2-core machine
# needs.
TIMEOUT_VARS = ("RAY_TRAIN_COLLECTIVE_TIMEOUT_S",)


def _name(fn) -> str:
    return getattr(fn, "__name__", None) or _("your function")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def run_bounded(fn, *args, timeout_s: float = 30.0, **kwargs):
    """``(fn(*args, **kwargs), worker group sizes of the Train runs it started)``.

    Ray Train's report barrier inside ``fn`` is bounded by ``timeout_s`` (a rank that skips a
    ``ray.train.report`` fails the run instead of hanging). Whatever ``fn`` raises comes
    back as a :class:`CheckFailed` that names it (with a hint for the usual causes), so a test
    cell fails by a check, not by a crash.
    """
    import ray.train

    from raylab.checks.capstone import actor_ids, worker_group_sizes
    from raylab.cluster import env_vars

    before = actor_ids()
    with env_vars(**dict.fromkeys(TIMEOUT_VARS, timeout_s)):
        try:
            out = fn(*args, **kwargs)
        except NotImplementedError:
            raise CheckFailed(_("{name} is not written yet (it raised NotImplementedError).").format(
                name=_name(fn))) from None
        except ray.train.WorkerGroupError as exc:
            failures = "; ".join(_("rank {rank}: {error}").format(rank=rank, error=_first_line(err))
                                 for rank, err in sorted(exc.worker_failures.items()))
            hint = (_("every rank must call ray.train.report the same number of times")
                    if "ollective" in failures else _("read the worker's traceback printed above"))
            raise CheckFailed(_("the training function raised on a worker ({failures}).").format(failures=failures)
                              + "\n" + _("Hint: {hint}").format(hint=hint)) from None
        except ray.train.TrainingFailedError as exc:
            raise CheckFailed(_("the Train run failed before or outside your training function: {error}").format(
                error=_first_line(exc))) from None
        except Exception as exc:  # noqa: BLE001 - the learner's driver code raised: say what
            hint = ""
            if isinstance(exc, (AttributeError, TypeError)) and "NoneType" in str(exc):
                hint = "\n" + _("Hint: {hint}").format(hint=_(
                    "a Result field was None; in Train V2 result.checkpoint and result.metrics are None "
                    "when no ray.train.report call carried a checkpoint"))
            raise CheckFailed(_("{name} raised {error}").format(name=_name(fn), error=_first_line(exc))
                              + hint) from None
    return out, worker_group_sizes(exclude=before)


def path_is_under(path, folder) -> bool:
    """Whether ``path`` is ``folder`` or inside it (links resolved; a URI is never under a folder)."""
    if not isinstance(path, (str, os.PathLike)) or "://" in str(path):
        return False
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder
