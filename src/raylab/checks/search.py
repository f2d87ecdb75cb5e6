"""Checks for lab 06's searcher exercise: an adaptive searcher and random search at one budget.

The exercise's function builds a ``tune.Tuner`` for any trainable, so the checks hand it
:func:`probe_trial`, a stand-in that trains nothing: it sleeps, scores ``lr`` with a fixed formula
and reports when it started and ended. What really happened is then read back from two records:

- the trials' own start and end times (:func:`run_times`, then :func:`raylab.tuning.max_overlap`):
  how many ran together. (Not the study's proposal times: Tune asks a searcher for the next trial
  while one runs, so two proposals are out even when trials run one at a time.)
- the searcher state Tune saves in the experiment folder (:func:`optuna_study`): for an
  ``OptunaSearch`` it holds Optuna's study, whose trials show every configuration the searcher
  proposed and the value it was told for each.
"""
from __future__ import annotations

import glob
import math
import os
import pickle
import time

from raylab.checks.common import check, check_equal
from raylab.i18n import _
from raylab.tuning import max_overlap

PROBE_SECONDS = 1.0
PROBE_BEST_LR = 1e-3


def probe_trial(config: dict) -> None:
    """A Tune function trainable that trains nothing: one report, ``PROBE_SECONDS`` after it starts.

    ``val_accuracy`` peaks at 1.0 for ``lr == PROBE_BEST_LR`` and falls with the distance in
    decades; ``started`` and ``ended`` are wall-clock seconds, so overlapping trials show."""
    from ray import tune

    started = time.time()
    time.sleep(PROBE_SECONDS)
    score = math.exp(-(math.log10(config["lr"]) - math.log10(PROBE_BEST_LR)) ** 2)
    tune.report({"val_accuracy": score, "started": started, "ended": time.time()})


def optuna_study(experiment_path: str):
    """The Optuna study of the newest searcher state Tune saved in ``experiment_path``, or ``None``
    when the experiment's searcher was not an ``OptunaSearch`` (Tune's random search saves none)."""
    states = sorted(glob.glob(os.path.join(experiment_path, "searcher-state-*.pkl")), key=os.path.getmtime)
    if not states:
        return None
    with open(states[-1], "rb") as f:
        state = pickle.load(f)
    return state.get("_ot_study") if isinstance(state, dict) else None


def check_search_run(results, *, num_samples: int, experiment: str, storage_path: str) -> None:
    """Every trial ran to its report, ``num_samples`` of them, into ``<storage_path>/<experiment>``,
    and the results' best is the highest ``val_accuracy``."""
    check(hasattr(results, "get_best_result") and hasattr(results, "errors"),
          _("fit() gave {type}; expected a ResultGrid").format(type=type(results).__name__),
          hint=_("return the Tuner; the test runs it"))
    check(not results.errors, _("{n} trial(s) failed: {first}").format(
        n=len(results.errors), first=str(results.errors[0])[:300] if results.errors else ""))
    check_equal(len(results), num_samples, _("trials that ran"),
                hint=_("how many trials did you ask Tune for, and where does the Tuner learn that number?"))
    check_equal(os.path.realpath(results.experiment_path), os.path.realpath(os.path.join(storage_path, experiment)),
                _("folder of the experiment"),
                hint=_("the experiment should be written to <storage_path>/{experiment}: where does the Tuner "
                       "learn the experiment's name and the folder to write it to?").format(experiment=experiment))
    best = max(r.metrics["val_accuracy"] for r in results)
    check_equal(results.get_best_result().metrics["val_accuracy"], best,
                _("val_accuracy of get_best_result() (the highest of the trials)"),
                hint=_("which metric does the TuneConfig optimise, and in which direction?"))


def check_two_at_a_time(intervals, label: str) -> None:
    """At most two of ``intervals`` overlapped, and two did."""
    most = max_overlap(intervals)
    check(most <= 2, _("{label}: {most} at once; the exercise allows 2").format(label=label, most=most),
          hint=_("more than 2 trials ran at once: what limits how many trials Tune runs together? If you "
                 "built the searcher yourself, does it follow that limit?"))
    check(most == 2, _("{label}: never 2 at once, so the run took twice as long as it needed").format(label=label),
          hint=_("the trials ran one after another: with this searcher, what decides how many trials Tune keeps "
                 "in flight at once?"))


def check_adaptive_study(results, *, num_samples: int) -> None:
    """The experiment's searcher was an Optuna study that proposed every trial's ``lr`` and was told
    every trial's ``val_accuracy``, to maximise."""
    import optuna

    study = optuna_study(results.experiment_path)
    check(study is not None, _("the experiment saved no Optuna searcher state: its searcher was not OptunaSearch"),
          hint=_("with adaptive=True, which searcher proposed the trials' configurations, and how did the "
                 "Tuner learn which one to use?"))
    check_equal(study.direction, optuna.study.StudyDirection.MAXIMIZE, _("direction of the Optuna study"),
                hint=_("the study did not try to make val_accuracy as high as possible: does the searcher know "
                       "which metric to optimise, and in which direction?"))
    told = sorted((t.params.get("lr"), t.value) for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE)
    ran = sorted((r.config["lr"], r.metrics["val_accuracy"]) for r in results)
    check_equal(len(told), num_samples, _("trials whose val_accuracy the Optuna study was told"))
    check(all(math.isclose(a[0], b[0]) and math.isclose(a[1], b[1]) for a, b in zip(told, ran)),
          _("the study's (lr, value) pairs {told}... are not the trials' (lr, val_accuracy) {ran}...").format(
              told=told[:3], ran=ran[:3]),
          hint=_("the study was told other values than the trials reported: which metric is the searcher "
                 "learning from?"))


def run_times(results) -> list:
    """``(started, ended)`` of every trial of ``results`` run with :func:`probe_trial`."""
    return [(r.metrics["started"], r.metrics["ended"]) for r in results]


def tpe_startup_trials(results) -> int | None:
    """``n_startup_trials`` of the TPE sampler in the experiment's Optuna study (``None`` if none).

    Optuna keeps it only as a private attribute; optuna is pinned in the course environment."""
    study = optuna_study(results.experiment_path)
    return getattr(getattr(study, "sampler", None), "_n_startup_trials", None)


def check_shared_processes(results) -> None:
    """Fewer processes than trials: Tune ran a new trial in a finished trial's process."""
    pids = {r.metrics.get("pid") for r in results}
    check(len(pids) < len(results), _("{trials} trials ran in {processes} processes, one each").format(
              trials=len(results), processes=len(pids)),
          hint=_("every trial started a process of its own: what would let a new trial start in the process "
                 "of one that finished?"))
