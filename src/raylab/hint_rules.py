"""The mistakes :mod:`raylab.hints` knows: each a :class:`Rule`, a :class:`Hint` (what went wrong,
the fix, the lab to reread) and a matcher over one exception of the chain :func:`chain` unfolds.

Matchers use class names and message texts observed on Ray 2.58.0 (``tests/helpers/test_hints.py``
triggers the errors for real, or builds the expensive ones from Ray's own exception classes), so
importing this module never imports Ray. Add a mistake here, with a test that raises it. A hint's
texts are marked ``N_`` and rendered in the learner's language (:mod:`raylab.i18n`): after adding or
changing one, update and translate the catalogue (docs/authoring.md, "The Japanese edition").
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from raylab.i18n import N_, _

# Where the course's labs live (a clone: notebooks/<NN_topic>/). Hints name a lab by its number;
# the folder name is read from there, so renaming a lab needs no edit here.
_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@functools.lru_cache(maxsize=None)
def _lab_folder(number: str) -> str | None:
    folders = sorted(_NOTEBOOKS.glob(f"{number}_*")) if _NOTEBOOKS.is_dir() else []
    return folders[0].name if folders else None


def lab_title(number: str) -> str:
    """``"lab 05 (05_failures_and_retries)"`` for ``"05"``; ``"lab 05"`` where no folder is found."""
    folder = _lab_folder(number)
    return (_("lab {number} ({folder})").format(number=number, folder=folder) if folder
            else _("lab {number}").format(number=number))

PREFIX = "[raylab hint]"


@dataclass(frozen=True)
class Hint:
    key: str
    lab: str          # "03": the lab that teaches the fix
    section: str      # the part of that lab to reread
    mistake: str      # what went wrong, in one line
    fix: str          # what to do instead

    def render(self) -> str:
        return (f"{PREFIX} {_(self.mistake)}\n"
                + "  " + _("Fix: {fix}").format(fix=_(self.fix)) + "\n"
                + "  " + _("Reread: {lab}, {section}.").format(lab=lab_title(self.lab), section=_(self.section)))


@dataclass(frozen=True)
class Rule:
    hint: Hint
    match: Callable[[BaseException], bool]


# --- matching helpers ------------------------------------------------------------------------

def _names(exc: BaseException) -> set[str]:
    """Class names in the exception's MRO (RayTaskError(X) subclasses X, so X is in there too)."""
    return {cls.__name__ for cls in type(exc).__mro__}


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must never break the traceback display
        return ""


def _is(*class_names: str, has: Iterable[str] = ()) -> Callable[[BaseException], bool]:
    wanted = set(class_names)
    needles = tuple(has)

    def match(exc: BaseException) -> bool:
        if wanted and not wanted & _names(exc):
            return False
        text = _text(exc)
        return all(n in text for n in needles)

    return match


def _raised_in(exc: BaseException, path_part: str) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if path_part in tb.tb_frame.f_code.co_filename.replace(os.sep, "/"):
            return True
        tb = tb.tb_next
    return False


def chain(exc: BaseException, limit: int = 50) -> list[BaseException]:
    """The exception and every exception wrapped in it, outermost first, each once."""
    found: list[BaseException] = []
    seen: set[int] = set()
    queue = [exc]
    while queue and len(found) < limit:
        current = queue.pop(0)
        if not isinstance(current, BaseException) or id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        inner: list = []
        for attr in ("controller_failure", "cause"):
            try:
                inner.append(getattr(current, attr, None))
            except Exception:  # noqa: BLE001
                pass
        failures = getattr(current, "worker_failures", None)
        if isinstance(failures, dict):
            inner.extend(failures.values())
        inner.extend(getattr(current, "exceptions", None) or [])  # ExceptionGroup
        inner.append(current.__cause__)
        if not current.__suppress_context__:
            inner.append(current.__context__)
        queue.extend(inner)
    return found


# --- the known mistakes ----------------------------------------------------------------------

RULES: list[Rule] = [
    Rule(Hint("v2_trainer_in_tuner", "07", N_("the section on running a trainer inside a Tune trial"),
              N_("tune.Tuner got something that is not a trainable: in Ray 2.58.0 a Train V2 trainer "
                 "(TorchTrainer, DataParallelTrainer) can no longer be passed to Tuner."),
              N_("write a function trainable `def trial(config): ...` that builds the TorchTrainer "
                 "(train_loop_config from config, RunConfig(callbacks=[TuneReportCallback()])) and "
                 "calls .fit(); pass that function to tune.Tuner.")),
         _is("TuneError", has=["Improper 'run' - not string nor trainable"])),
    Rule(Hint("trainer_resources", "02", N_("the section on what ScalingConfig reserves"),
              N_("ScalingConfig(trainer_resources=...) is a Train V1 setting; V2 raises on any value."),
              N_("drop trainer_resources: the V2 controller reserves no CPU. Size the workers with "
                 "num_workers and resources_per_worker.")),
         _is("DeprecationWarning", has=["ScalingConfig(trainer_resources)"])),
    Rule(Hint("fail_fast", "05", N_("the section on FailureConfig's fields and defaults"),
              N_("FailureConfig(fail_fast=...) does not exist in Train V2's ray.train.FailureConfig."),
              N_("use max_failures / controller_failure_limit on ray.train.FailureConfig; fail_fast "
                 "belongs to ray.tune.FailureConfig (for a Tuner).")),
         _is("DeprecationWarning", has=["FailureConfig(fail_fast)"])),
    Rule(Hint("tune_config_in_trainer", "07", N_("the section on keeping tune.RunConfig and train.RunConfig apart"),
              N_("Ray Train V2 got a config object from another API: ray.tune.RunConfig, FailureConfig "
                 "and CheckpointConfig are different classes from ray.train's."),
              N_("import RunConfig / FailureConfig / CheckpointConfig from ray.train for a Trainer, and "
                 "from ray.tune for a Tuner.")),
         _is("ValueError", has=["Use `ray.train."]) ),
    Rule(Hint("train_runconfig_in_tuner", "07", N_("the section on keeping tune.RunConfig and train.RunConfig apart"),
              N_("tune.Tuner was given ray.train.RunConfig; Tune only warns when the Tuner is built, "
                 "then fit() fails with \"'str' object has no attribute 'value'\"."),
              N_("pass run_config=ray.tune.RunConfig(...) to tune.Tuner; keep ray.train.RunConfig for "
                 "the TorchTrainer inside the trial.")),
         lambda e: _is("AttributeError", has=["'str' object has no attribute 'value'"])(e)
         and _raised_in(e, "ray/tune/")),
    Rule(Hint("tune_callback_in_train_runconfig", "07", N_("the section on TuneReportCallback"),
              N_("ray.train.RunConfig(callbacks=...) only accepts Ray Train callbacks (ray.train.UserCallback)."),
              N_("put Tune callbacks in ray.tune.RunConfig for the Tuner; inside a trial, Train's "
                 "RunConfig takes TuneReportCallback(), which is a Train callback.")),
         _is("ValueError", has=["All callbacks must be instances of", "UserCallback"])),
    Rule(Hint("skipped_report", "03", N_("the section on train.report being a barrier"),
              N_("train.report timed out waiting for other workers: every worker must call "
                 "train.report the same number of times (a rank skipped one, e.g. inside `if rank == 0:`)."),
              N_("call train.report on every rank at the same points; ranks other than 0 pass "
                 "checkpoint=None. (Without RAY_TRAIN_COLLECTIVE_TIMEOUT_S this mistake hangs forever.)")),
         lambda e: bool({"BroadcastCollectiveTimeoutError", "CollectiveTimeoutError"} & _names(e))
         or "have not joined the collective operation" in _text(e)),
    Rule(Hint("checkpoint_dir_deleted", "03", N_("the section on checkpoint upload modes"),
              N_("a checkpoint upload could not read its folder: it was deleted before the upload ran "
                 "(typical: CheckpointUploadMode.ASYNC inside `with tempfile.TemporaryDirectory()`, "
                 "which removes the folder as soon as train.report returns)."),
              N_("with CheckpointUploadMode.ASYNC, hand train.report a folder you do not delete "
                 "(tempfile.mkdtemp(); Ray removes it after the upload), or use the default SYNC mode.")),
         lambda e: "FileNotFoundError" in _names(e) and ("Failed to open local file" in _text(e)
                                                       or _raised_in(e, "ray/train/"))),
    Rule(Hint("too_few_cpus", "02", N_("the section on placement groups needing all worker bundles up front"),
              N_("the training workers never started: the cluster cannot place num_workers x "
                 "resources_per_worker (all bundles must fit at once), so the worker group timed out."),
              N_("ask for no more than ray.available_resources() offers (on the course cluster: 2 CPUs, "
                 "and a Tune trial driver holds one unless you change its resources); note that "
                 "controller_failure_limit=-1 retries this forever.")),
         _is("WorkerGroupStartupTimeoutError")),
    Rule(Hint("tune_report_callback_outside_tune", "07", N_("the section on TuneReportCallback"),
              N_("TuneReportCallback() was created outside a Tune trial."),
              N_("construct it inside the trial function that Tune runs, e.g. "
                 "RunConfig(callbacks=[TuneReportCallback()]) in `def trial(config): ...`.")),
         _is("RuntimeError", has=["TuneReportCallback must be used in a Tune session"])),
    Rule(Hint("train_report_in_tune", "06", N_("the section on reporting from a Tune trial"),
              N_("ray.train.report was called inside a function run by Ray Tune."),
              N_("in a Tune trial function use ray.tune.report(metrics); ray.train.report belongs in "
                 "the per-worker training function of a Trainer.")),
         _is("DeprecationWarning", has=["is deprecated when running in a function passed to Ray Tune"])),
    Rule(Hint("train_api_outside_training", "01", N_("the section on what runs on the workers"),
              N_("a Ray Train worker API (train.report, get_context, get_checkpoint) was called in the "
                 "notebook itself."),
              N_("call it inside the training function you pass to the trainer; fit() runs that "
                 "function on every worker.")),
         _is("RuntimeError", has=["cannot be used outside of a Ray Train training function"])),
    Rule(Hint("torch_distributed_config", "01", N_("the section on what runs on the workers"),
              N_("Ray could not pickle your training function: it reads `torch.distributed.<name>` (or "
                 "`dist.<name>` after `import torch.distributed as dist`) and also some `.config` "
                 "attribute, so cloudpickle tries to ship the module torch.distributed.config, which "
                 "cannot be pickled."),
              N_("import what you need by name at the top of the cell (`from torch.distributed import "
                 "get_rank, all_reduce`), or import torch.distributed inside the training function.")),
         _is(has=["cannot pickle 'ConfigModuleInstance' object"])),
    Rule(Hint("object_store_too_small", "00", N_("the section on the local cluster and its logical resources"),
              N_("ray.init refused the object store size: Ray 2.58.0 needs at least 75 MiB."),
              N_("use object_store_memory=80 * 1024 * 1024 (the course's size) or more, after "
                 "restarting the kernel: the refused ray.init leaves a half-started head (gcs_server "
                 "and two helpers) running until the kernel exits.")),
         _is("ValueError", has=["Attempting to cap object store memory usage", "minimum allowed"])),
    Rule(Hint("out_of_memory", "00", N_("the section on the local cluster and what it costs"),
              N_("the machine ran low on memory and Ray's memory monitor killed a task or actor."),
              N_("shut down the kernels of other labs (each keeps its own Ray cluster), close what "
                 "you do not need, restart this kernel and run the lab from the top.")),
         _is("OutOfMemoryError")),
    Rule(Hint("validation_without_checkpoint", "03", N_("the section on validating checkpoints"),
              N_("train.report(..., validation=True) was called without a checkpoint."),
              N_("validation runs on a reported checkpoint: pass checkpoint=... in the same report "
                 "(ranks without a checkpoint report validation=False).")),
         _is("ValueError", has=["Validation requires a checkpoint"])),
    Rule(Hint("validation_without_config", "03", N_("the section on validating checkpoints"),
              N_("train.report(..., validation=True) was called but the trainer has no validation_config."),
              N_("pass validation_config=ray.train.ValidationConfig(fn, ...) to the TorchTrainer.")),
         _is("ValueError", has=["was not set on the trainer, but a validation was requested"])),
]
