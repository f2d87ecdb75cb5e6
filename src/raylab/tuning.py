"""Helpers for the Tune labs (05 and 06): what a Tuner will do, trial timelines, capacity plans.

- :func:`tuner_settings` reads back what a ``tune.Tuner`` was configured with (search space,
  metric/mode, concurrency, trial resources, storage) *before* it runs, so a test can reject a
  plan that would hang instead of waiting for it to hang.
- :func:`max_overlap` turns the start/end times that trials report into "how many ran at once".
- :func:`plan_train_tune` is a small model of Tune + Train on a fixed cluster: Tune starts trial
  drivers while their resources fit and ``max_concurrent_trials`` allows; each driver's Train run
  then needs its whole worker group placed at once. It predicts waves of trials, or the deadlock
  where drivers hold the CPUs their own workers need. ``tests/claims/test_claims_tune.py`` checks its
  verdicts against live runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Tune reserves this for a function trainable that was not wrapped in tune.with_resources.
TUNE_DEFAULT_TRIAL_RESOURCES = {"CPU": 1.0}


def _normalise(resources: dict) -> dict:
    """``{"cpu": 1, "gpu": 0}`` -> ``{"CPU": 1.0}``: Ray's spelling, zero entries dropped."""
    out = {}
    for key, value in (resources or {}).items():
        name = {"cpu": "CPU", "gpu": "GPU"}.get(key, key)
        if value:
            out[name] = out.get(name, 0.0) + float(value)
    return out


def trial_resources(trainable, config: dict | None = None) -> dict:
    """What one trial of ``trainable`` reserves, as ``{"resources": {...}, "bundles": [...]}``.

    Reads the request ``tune.with_resources`` attached; a plain function gets Tune's default of
    one CPU. A per-config request (a callable) is evaluated for ``config``.
    """
    request = getattr(trainable, "_resources", None)
    if request is None:
        return {"resources": dict(TUNE_DEFAULT_TRIAL_RESOURCES),
                "bundles": [dict(TUNE_DEFAULT_TRIAL_RESOURCES)], "default": True}
    if callable(request) and not hasattr(request, "required_resources"):
        request = request(config or {})
        if isinstance(request, dict):
            request = _pgf_from_dict(request)
    return {"resources": _normalise(request.required_resources),
            "bundles": [_normalise(b) for b in request.bundles], "default": False}


def _pgf_from_dict(resources: dict):
    from ray.tune.execution.placement_groups import resource_dict_to_pg_factory

    return resource_dict_to_pg_factory(resources)


def tuner_settings(tuner) -> dict:
    """The plan a ``tune.Tuner`` will run, read back without running it.

    Keys: ``metric``, ``mode``, ``max_concurrent_trials``, ``num_samples``, ``scheduler`` and
    ``search_alg`` (class names, ``None`` for Tune's defaults), ``reuse_actors``, ``name``,
    ``storage_path``, ``verbose`` (a plain int: Tune also takes its ``Verbosity`` enums, and
    fills in 1 when none is given), ``run_config_type`` (the class passed as ``run_config``),
    ``param_space`` and ``trial`` (see :func:`trial_resources`).

    Ray 2.58.0 keeps these on the Tuner's private ``_local_tuner``; ``tests/helpers/test_raylab_tuning.py``
    pins that, so a Ray upgrade that moves them fails there first.
    """
    inner = tuner._local_tuner
    tune_config = inner._tune_config
    run_config = inner._run_config
    return {
        "metric": tune_config.metric,
        "mode": tune_config.mode,
        "max_concurrent_trials": tune_config.max_concurrent_trials,
        "num_samples": tune_config.num_samples,
        "scheduler": type(tune_config.scheduler).__name__ if tune_config.scheduler else None,
        "search_alg": type(tune_config.search_alg).__name__ if tune_config.search_alg else None,
        "reuse_actors": tune_config.reuse_actors,
        "time_budget_s": tune_config.time_budget_s,
        "name": run_config.name,
        "storage_path": run_config.storage_path,
        "verbose": _plain_int(run_config.verbose),
        "run_config_type": f"{type(run_config).__module__}.{type(run_config).__name__}",
        "param_space": inner.param_space,
        "trial": trial_resources(inner.trainable),
    }


def _plain_int(value):
    """``Verbosity.V0_MINIMAL`` -> 0, ``2`` -> 2, ``None`` stays ``None``."""
    return None if value is None else int(getattr(value, "value", value))


def max_overlap(intervals) -> int:
    """Largest number of ``(start, end)`` intervals that overlap at one instant.

    Touching intervals (one ends exactly when the next starts) do not overlap.
    """
    events = []
    for start, end in intervals:
        events.append((float(start), 1))
        events.append((float(end), -1))
    events.sort(key=lambda e: (e[0], e[1]))  # at equal times, an end comes before a start
    running = best = 0
    for _, delta in events:
        running += delta
        best = max(best, running)
    return best


# --------------------------------------------------------------------------------------------
# A capacity model of Train + Tune on a fixed (non-autoscaling) cluster
# --------------------------------------------------------------------------------------------

@dataclass
class Plan:
    """What :func:`plan_train_tune` predicts."""

    outcome: str  # "ok", "deadlock" or "infeasible"
    waves: list = field(default_factory=list)  # trial indices whose Train runs run together
    max_parallel: int = 0
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


def _fits(free: dict, need: dict) -> bool:
    return all(free.get(k, 0.0) + 1e-9 >= v for k, v in need.items())


def _take(free: dict, need: dict, sign: float = -1.0) -> None:
    for k, v in need.items():
        free[k] = free.get(k, 0.0) + sign * v


def plan_train_tune(cluster: dict, driver: dict, workers_per_trial: int, *, worker: dict | None = None,
                    max_concurrent_trials: int | None = None, trials: int = 2) -> Plan:
    """Predict how ``trials`` Tune trials, each running one Train run, share ``cluster``.

    ``driver`` is what each trial reserves (``tune.with_resources``; Tune's default is
    ``{"CPU": 1}``); each trial's Train run then asks for ``workers_per_trial`` workers of
    ``worker`` resources (``ScalingConfig.resources_per_worker``, default ``{"CPU": 1}``) as one
    placement group. The Train controller itself reserves nothing.

    The model: Tune starts trial drivers in order while their resources fit and fewer than
    ``max_concurrent_trials`` trials are live; then every started driver whose worker group fits
    in what is left gets it; those trials run and finish together, releasing everything. When
    started drivers hold resources and none of their worker groups can be placed, nothing can
    ever finish: that is the deadlock (Train waits for its placement group, times out and, with
    the default ``controller_failure_limit=-1``, retries forever).
    """
    cluster = _normalise(cluster)
    driver = _normalise(driver)
    group = {k: v * workers_per_trial for k, v in _normalise(worker or {"CPU": 1}).items()}
    if not _fits(cluster, driver):
        return Plan("infeasible", reason=f"one trial driver needs {driver}, the cluster has {cluster}: "
                                         "Tune never starts it")
    free = dict(cluster)
    pending, started, waves = list(range(trials)), [], []
    while pending or started:
        while pending and (not max_concurrent_trials or len(started) < max_concurrent_trials) \
                and _fits(free, driver):
            _take(free, driver)
            started.append(pending.pop(0))
        running = []
        for trial in list(started):
            if _fits(free, group):
                _take(free, group)
                running.append(trial)
        if not running:
            return Plan("deadlock", waves=waves, max_parallel=max((len(w) for w in waves), default=0),
                        reason=(f"{len(started)} trial driver(s) hold {_scaled(driver, len(started))}; "
                                f"each Train run needs {group} more, only {_clean(free)} is free"))
        waves.append(running)
        for trial in running:
            started.remove(trial)
            _take(free, driver, +1.0)
            _take(free, group, +1.0)
    return Plan("ok", waves=waves, max_parallel=max(len(w) for w in waves),
                reason=f"{len(waves)} wave(s) of at most {max(len(w) for w in waves)} trial(s)")


def _scaled(resources: dict, n: int) -> dict:
    return {k: round(v * n, 4) for k, v in resources.items()}


def _clean(resources: dict) -> dict:
    return {k: round(v, 4) for k, v in resources.items()}


# --------------------------------------------------------------------------------------------
# Replayed learning curves: Tune runs whose every reported value is chosen in advance
# --------------------------------------------------------------------------------------------

def replay_objective(curves: dict, metric: str = "score", keys=("lr", "width")):
    """A function trainable that reports a prepared curve for each config.

    ``curves`` maps a tuple of config values (in ``keys`` order) to the list of values to report
    for ``metric``, one per iteration. A shorter list plays a trial that stopped early.
    """
    table = {tuple(k): list(v) for k, v in curves.items()}

    def replay(config):
        from ray import tune

        for value in table[tuple(config[k] for k in keys)]:
            tune.report({metric: value})

    return replay


class ReplayResults:
    """A stand-in for ``tune.ResultGrid`` that only offers ``get_dataframe``, built from curves.

    ``get_dataframe()`` gives each trial's last reported row, ``get_dataframe(filter_metric=m,
    filter_mode="max"|"min")`` the row where ``m`` was best (the first such row), with the same
    columns Tune uses for them: the metric, ``training_iteration``, ``trial_id`` and one
    ``config/<key>`` column per config key. ``tests/helpers/test_raylab_tuning.py`` compares it with a real
    ``ResultGrid`` of the same curves.
    """

    def __init__(self, curves: dict, metric: str = "score", keys=("lr", "width")):
        self.curves = {tuple(k): list(v) for k, v in curves.items()}
        self.metric = metric
        self.keys = tuple(keys)

    def __len__(self):
        return len(self.curves)

    def get_dataframe(self, filter_metric: str | None = None, filter_mode: str | None = None):
        import pandas as pd

        if filter_mode and filter_mode not in ("min", "max"):
            raise ValueError("If set, `mode` has to be one of [min, max]")
        if filter_mode and not filter_metric:
            raise ValueError("a filter_mode needs a filter_metric")
        rows = []
        for n, (values, curve) in enumerate(self.curves.items()):
            if not curve:
                continue
            history = pd.DataFrame({self.metric: curve, "training_iteration": range(1, len(curve) + 1)})
            if filter_metric == self.metric and filter_mode == "max":
                idx = history[self.metric].idxmax()
            elif filter_metric == self.metric and filter_mode == "min":
                idx = history[self.metric].idxmin()
            else:
                idx = len(history) - 1
            row = history.iloc[idx].to_dict()
            row["training_iteration"] = int(row["training_iteration"])
            row["trial_id"] = f"replay_{n:05d}"
            row.update({f"config/{k}": v for k, v in zip(self.keys, values)})
            rows.append(row)
        return pd.DataFrame(rows)
