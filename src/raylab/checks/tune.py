"""Checks and fixtures for the Tune exercises on the running example (lab 06).

- :func:`check_tuned_spirals` judges a learner's tuning run of the running example by what Tune
  recorded: one trial per grid point, one report per epoch, no trial past its epoch budget, and
  ``best`` the trial with the highest last reported ``val_accuracy``.
- :func:`interrupted_spirals` writes a real interrupted Tune experiment: one trial of the running
  example crashes once (after it reported and saved a checkpoint), the others finish. Every epoch
  any trial runs is logged to a folder, so :func:`epochs_run` can tell afterwards what a recovery
  ran again and from where.
"""
from __future__ import annotations

import os
import tempfile
import time
import uuid

from raylab.checks.common import CheckFailed, check, check_equal
from raylab.i18n import _

CRASH_MARK = "crashed-once"
STATE_FILE = "state.pt"


def _key(config: dict) -> tuple:
    return (config.get("lr"), config.get("hidden"))


def check_spiral_results(results) -> None:
    """Raise :class:`CheckFailed` unless ``results`` is a ``ResultGrid`` whose trials all finished
    without an error."""
    check(hasattr(results, "get_best_result") and hasattr(results, "errors"),
          _("tune_spirals returned {type} as results; expected the ResultGrid").format(
              type=type(results).__name__),
          hint="results = tuner.fit(); return results, best")
    check(not results.errors, _("some trials failed: {errors}").format(errors=results.errors))


def check_spiral_grid(results, *, lrs, hiddens) -> None:
    """Raise :class:`CheckFailed` unless the trials of ``results`` are the grid ``lrs`` x ``hiddens``,
    each pair once."""
    expected = sorted((lr, h) for lr in lrs for h in hiddens)
    ran = sorted((_key(r.config) for r in results), key=repr)
    check_equal(ran, sorted(expected, key=repr), _("the (lr, hidden) pairs that ran"),
                hint=_("a grid: tune.grid_search(lrs) and tune.grid_search(hiddens) in the param_space"))


def check_spiral_reports(results, *, epochs: int, metric: str = "val_accuracy") -> None:
    """Raise :class:`CheckFailed` unless every trial reported ``metric`` (an accuracy) once per epoch,
    at most ``epochs`` times, and at least one trial all ``epochs`` times."""
    reports = {}
    for r in results:
        history = r.metrics_dataframe
        check(history is not None and metric in history,
              _("trial {config} never reported {metric!r}").format(config=r.config, metric=metric),
              hint=_('tune.report({{"{metric}": ...}}) after each epoch').format(metric=metric))
        values = list(history[metric])
        check(all(0.0 <= v <= 1.0 for v in values),
              _("trial {config} reported {metric} values {values}, not accuracies between 0 and 1").format(
                  config=r.config, metric=metric, values=values))
        check(len(values) <= epochs,
              _("trial {config} reported {n} times; at most one report per epoch for {epochs} epochs").format(
                  config=r.config, n=len(values), epochs=epochs),
              hint=_('train for config["epochs"] epochs'))
        reports[_key(r.config)] = len(values)
    check(max(reports.values()) == epochs,
          _("reports per trial {reports}: no trial reported once per epoch for all {epochs} epochs").format(
              reports=reports, epochs=epochs),
          hint=_("call tune.report inside the epoch loop, after each epoch: a scheduler can only stop a "
                 "trial between reports"))


def check_spiral_best(results, best, *, metric: str = "val_accuracy") -> None:
    """Raise :class:`CheckFailed` unless ``best`` is the trial of ``results`` with the highest last
    reported ``metric``."""
    check(best is not None and hasattr(best, "config") and hasattr(best, "metrics"),
          _("best is {type}; expected the Result of the best trial").format(type=type(best).__name__),
          hint=_("results.get_best_result() (the TuneConfig's metric and mode)"))
    last = {_key(r.config): r.metrics[metric] for r in results}
    winner = max(last, key=last.get)
    check_equal(_key(best.config), winner, _("best (lr, hidden); last {metric} per trial: {values}").format(
                    metric=metric, values=", ".join(f"{k}: {v:.3f}" for k, v in sorted(last.items()))),
                hint=_("the best trial has the highest last reported {metric}: maximise it "
                       "(mode='max') and read it from the ResultGrid").format(metric=metric))


def check_tuned_spirals(results, best, *, lrs, hiddens, epochs: int, metric: str = "val_accuracy") -> None:
    """Raise :class:`CheckFailed` unless ``results`` is a finished grid over ``lrs`` x ``hiddens``
    whose trials each reported ``metric`` once per epoch (at most ``epochs``; at least one trial
    the full ``epochs``) and ``best`` is the trial with the highest last reported ``metric``
    (the four checks above, in that order)."""
    check_spiral_results(results)
    check_spiral_grid(results, lrs=lrs, hiddens=hiddens)
    check_spiral_reports(results, epochs=epochs, metric=metric)
    check_spiral_best(results, best, metric=metric)


# --- an interrupted experiment ------------------------------------------------------------------

def spiral_trial_that_crashes_once(config: dict) -> None:
    """A function trainable of the running example with checkpoints that resumes from
    ``tune.get_checkpoint()``. The trial whose ``lr`` equals ``config["crash_lr"]`` raises once,
    at epoch ``config["crash_epoch"]`` (after reporting the epochs before it). Each epoch it starts
    is logged in ``config["log_dir"]``."""
    import torch

    from ray import tune

    from raylab.running_example import accuracy, build_model, make_splits, train_epoch

    splits = make_splits(seed=0)
    (x, y), (x_val, y_val) = splits["train"], splits["val"]
    model = build_model(config["hidden"])
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
    first = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint:
        with checkpoint.as_directory() as folder:
            state = torch.load(os.path.join(folder, STATE_FILE), weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        first = state["epoch"] + 1
    log_dir = config["log_dir"]
    for epoch in range(first, config["epochs"]):
        name = f"{time.time():.6f}_{uuid.uuid4().hex[:6]}_{config['lr']}_{config['hidden']}_{epoch}"
        open(os.path.join(log_dir, name), "w").close()
        mark = os.path.join(log_dir, CRASH_MARK)
        if config["lr"] == config.get("crash_lr") and epoch == config.get("crash_epoch") \
                and not os.path.exists(mark):
            open(mark, "w").close()
            raise RuntimeError(f"injected crash of trial lr={config['lr']} at epoch {epoch}")
        train_epoch(model, optimizer, x, y, epoch=epoch)
        with tempfile.TemporaryDirectory() as folder:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                       os.path.join(folder, STATE_FILE))
            tune.report({"epoch": epoch, "val_accuracy": accuracy(model, x_val, y_val)},
                        checkpoint=tune.Checkpoint.from_directory(folder))


def interrupted_spirals(storage_path: str, *, name: str = "interrupted", lrs=(0.05, 0.002), hidden: int = 16,
                        epochs: int = 3, crash_lr: float = 0.002, crash_epoch: int = 1):
    """Run a grid over ``lrs`` in which the ``crash_lr`` trial raises once at ``crash_epoch``
    (``max_failures`` 0, so it ends ERROR) and the others finish. Needs the lab's cluster.
    Returns ``(experiment_path, log_dir, results)``."""
    from ray import tune

    log_dir = os.path.join(storage_path, f"{name}-epochs-run")
    os.makedirs(log_dir, exist_ok=True)
    results = tune.Tuner(
        spiral_trial_that_crashes_once,
        param_space={"lr": tune.grid_search(list(lrs)), "hidden": hidden, "epochs": epochs,
                     "crash_lr": crash_lr, "crash_epoch": crash_epoch, "log_dir": log_dir},
        tune_config=tune.TuneConfig(metric="val_accuracy", mode="max", max_concurrent_trials=1,
                                    reuse_actors=True),
        run_config=tune.RunConfig(name=name, storage_path=storage_path, verbose=0,
                                  failure_config=tune.FailureConfig(max_failures=0)),
    ).fit()
    return os.path.join(storage_path, name), log_dir, results


def epochs_run(log_dir: str) -> dict:
    """``{(lr, hidden): [epoch, ...]}``: every epoch each trial started, in the order they ran."""
    runs = {}
    for entry in sorted(os.listdir(log_dir)):
        if entry == CRASH_MARK:
            continue
        _t, _u, lr, hidden, epoch = entry.split("_")
        runs.setdefault((float(lr), int(hidden)), []).append(int(epoch))
    return runs


def check_recovered_experiment(results, *, lrs) -> None:
    """Raise :class:`CheckFailed` unless ``results`` (what the recovery returned) is a ``ResultGrid``
    that holds the interrupted experiment's trials, one per learning rate of ``lrs``."""
    check(hasattr(results, "errors") and hasattr(results, "get_dataframe"),
          _("recover returned {type}; expected the ResultGrid of the restored run").format(
              type=type(results).__name__),
          hint="tuner = tune.Tuner.restore(...); return tuner.fit()")
    check_equal(sorted(r.config.get("lr", float("nan")) for r in results), sorted(lrs),
                _("the trials (lr) in the recovered results"),
                hint=_("restore the experiment (tune.Tuner.restore) instead of starting a new one"))


def _again(log_dir: str, before: dict, lr: float, hidden: int) -> list:
    return epochs_run(log_dir).get((lr, hidden), [])[len(before.get((lr, hidden), [])):]


def check_errored_resumed(results, log_dir: str, *, hidden: int, epochs: int, crash_lr: float,
                          crash_epoch: int, before: dict) -> None:
    """Raise :class:`CheckFailed` unless no trial of ``results`` is errored any more and the crashed
    trial went on from its last checkpoint (epochs ``crash_epoch`` .. ``epochs - 1`` once more,
    nothing before them), every trial recording ``epochs`` iterations."""
    check(not results.errors, _("after the recovery some trials still errored: {errors}").format(
              errors=results.errors),
          hint=_("Tuner.restore leaves errored trials as they are unless you ask for them "
                 "(resume_errored=True or restart_errored=True)"))
    check_equal(_again(log_dir, before, crash_lr, hidden), list(range(crash_epoch, epochs)),
                _("epochs the crashed trial lr={lr} ran during the recovery (it crashed at epoch "
                  "{epoch}, after a checkpoint of epoch {previous})").format(
                    lr=crash_lr, epoch=crash_epoch, previous=crash_epoch - 1),
                hint=_("resume_errored=True continues from the trial's last checkpoint; "
                       "restart_errored=True starts it from scratch"))
    for r in results:
        check_equal(r.metrics.get("training_iteration"), epochs, _("iterations recorded for trial lr={lr}").format(lr=r.config.get("lr")))


def check_finished_kept(log_dir: str, *, lrs, hidden: int, crash_lr: float, before: dict) -> None:
    """Raise :class:`CheckFailed` if a trial other than the crashed one ran any epoch again."""
    for lr in lrs:
        if lr != crash_lr:
            check_equal(_again(log_dir, before, lr, hidden), [],
                        _("epochs the finished trial lr={lr} ran again during the recovery").format(lr=lr),
                        hint=_("a finished trial is never rerun by Tuner.restore; a new Tuner runs "
                               "everything again"))


def check_recovered(results, log_dir: str, *, lrs, hidden: int, epochs: int, crash_lr: float,
                    crash_epoch: int, before: dict) -> None:
    """Raise :class:`CheckFailed` unless ``results`` (what the recovery returned) holds every trial
    finished, the finished trials did not run again, and the crashed trial went on from its last
    checkpoint (epochs ``crash_epoch`` .. ``epochs - 1`` once more, nothing before them): the three
    checks above."""
    check_recovered_experiment(results, lrs=lrs)
    check_errored_resumed(results, log_dir, hidden=hidden, epochs=epochs, crash_lr=crash_lr,
                          crash_epoch=crash_epoch, before=before)
    check_finished_kept(log_dir, lrs=lrs, hidden=hidden, crash_lr=crash_lr, before=before)


__all__ = ["CheckFailed", "check_tuned_spirals", "check_spiral_results", "check_spiral_grid",
           "check_spiral_reports", "check_spiral_best", "spiral_trial_that_crashes_once", "interrupted_spirals",
           "epochs_run", "check_recovered", "check_recovered_experiment", "check_errored_resumed",
           "check_finished_kept"]
