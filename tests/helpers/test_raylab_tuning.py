"""Unit tests of raylab.tuning: the capacity model, overlap counting, Tuner read-back, replays."""
import pytest

from raylab.tuning import ReplayResults, max_overlap, plan_train_tune, replay_objective, tuner_settings

CLUSTER = {"CPU": 2, "TRAIN_DRIVER": 2}


# ---------------------------------------------------------------------------- capacity model
def test_default_drivers_two_at_once_deadlock():
    plan = plan_train_tune(CLUSTER, {"CPU": 1}, 1, max_concurrent_trials=2, trials=2)
    assert plan.outcome == "deadlock" and not plan.ok
    assert plan.waves == []
    assert "2 trial driver(s)" in plan.reason


def test_default_driver_one_at_a_time_runs_in_two_waves():
    plan = plan_train_tune(CLUSTER, {"cpu": 1}, 1, max_concurrent_trials=1, trials=2)
    assert plan.ok and plan.waves == [[0], [1]] and plan.max_parallel == 1


def test_custom_driver_resource_runs_both_at_once():
    plan = plan_train_tune(CLUSTER, {"TRAIN_DRIVER": 1}, 1, max_concurrent_trials=2, trials=2)
    assert plan.ok and plan.waves == [[0, 1]] and plan.max_parallel == 2


def test_fractional_driver_serialises():
    # e08 "fractional": 0.01 + 0.01 + 1 + 1 > 2 CPUs, so the second worker waits for the first trial
    plan = plan_train_tune(CLUSTER, {"cpu": 0.01}, 1, max_concurrent_trials=2, trials=2)
    assert plan.ok and plan.max_parallel == 1 and len(plan.waves) == 2


def test_two_workers_per_trial_with_a_cpu_driver_never_fits():
    plan = plan_train_tune(CLUSTER, {"CPU": 1}, 2, max_concurrent_trials=1, trials=1)
    assert plan.outcome == "deadlock"


def test_two_workers_per_trial_with_custom_driver_take_turns():
    plan = plan_train_tune(CLUSTER, {"TRAIN_DRIVER": 1}, 2, max_concurrent_trials=2, trials=3)
    assert plan.ok and plan.waves == [[0], [1], [2]]


def test_unlimited_concurrency_with_custom_driver_is_capped_by_the_custom_resource():
    plan = plan_train_tune({"CPU": 8, "TRAIN_DRIVER": 2}, {"TRAIN_DRIVER": 1}, 1, trials=5)
    assert plan.ok and plan.max_parallel == 2 and sum(len(w) for w in plan.waves) == 5


def test_driver_larger_than_cluster_is_infeasible():
    plan = plan_train_tune(CLUSTER, {"CPU": 3}, 1, trials=1)
    assert plan.outcome == "infeasible"


def test_resources_per_worker_count():
    # 4 CPUs: two 1-CPU drivers leave 2, exactly one 2-CPU worker at a time
    plan = plan_train_tune({"CPU": 4}, {"CPU": 1}, 1, worker={"CPU": 2}, max_concurrent_trials=2, trials=2)
    assert plan.ok and plan.waves == [[0], [1]]
    plan = plan_train_tune({"CPU": 4}, {"CPU": 1}, 1, worker={"CPU": 3}, max_concurrent_trials=2, trials=2)
    assert plan.outcome == "deadlock"


# ---------------------------------------------------------------------------- overlap
@pytest.mark.parametrize("intervals, expected", [
    ([], 0),
    ([(0, 1)], 1),
    ([(0, 1), (1, 2)], 1),          # touching is not overlapping
    ([(0, 2), (1, 3), (2.5, 4)], 2),
    ([(0, 5), (1, 2), (1.5, 3), (1.8, 1.9)], 4),
])
def test_max_overlap(intervals, expected):
    assert max_overlap(intervals) == expected


# ---------------------------------------------------------------------------- Tuner read-back
def _noop(config):
    pass


def test_tuner_settings_reads_the_plan(tmp_path):
    from ray import tune

    def objective(config):
        pass

    tuner = tune.Tuner(
        tune.with_resources(objective, {"cpu": 0.5}),
        param_space={"lr": tune.grid_search([0.1, 0.01])},
        tune_config=tune.TuneConfig(metric="score", mode="max", max_concurrent_trials=3),
        run_config=tune.RunConfig(name="exp", storage_path=str(tmp_path), verbose=0),
    )
    s = tuner_settings(tuner)
    assert (s["metric"], s["mode"], s["max_concurrent_trials"], s["num_samples"]) == ("score", "max", 3, 1)
    assert (s["name"], s["storage_path"], s["verbose"]) == ("exp", str(tmp_path), 0)
    assert s["param_space"] == {"lr": {"grid_search": [0.1, 0.01]}}
    assert s["trial"] == {"resources": {"CPU": 0.5}, "bundles": [{"CPU": 0.5}], "default": False}
    assert s["scheduler"] is None and s["search_alg"] is None
    assert s["run_config_type"] == "ray.tune.RunConfig"


def test_tuner_settings_default_and_custom_and_bundles():
    from ray import tune

    def plain(config):
        pass

    def custom(config):
        pass

    def bundled(config):
        pass

    assert tuner_settings(tune.Tuner(plain))["trial"]["default"] is True
    assert tuner_settings(tune.Tuner(plain))["trial"]["resources"] == {"CPU": 1.0}
    s = tuner_settings(tune.Tuner(tune.with_resources(custom, {"TRAIN_DRIVER": 1})))
    assert s["trial"]["resources"] == {"TRAIN_DRIVER": 1.0}
    pgf = tune.PlacementGroupFactory([{"CPU": 1}, {"CPU": 1}])
    s = tuner_settings(tune.Tuner(tune.with_resources(bundled, pgf)))
    assert s["trial"]["resources"] == {"CPU": 2.0}
    assert s["trial"]["bundles"] == [{"CPU": 1.0}, {"CPU": 1.0}]


def test_tuner_settings_names_a_scheduler():
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    s = tuner_settings(tune.Tuner(_noop, tune_config=tune.TuneConfig(scheduler=ASHAScheduler())))
    assert s["scheduler"] == "AsyncHyperBandScheduler"  # ASHAScheduler is an alias of it


# ---------------------------------------------------------------------------- replays
CURVES = {
    (0.01, 16): [0.30, 0.50, 0.70, 0.80],
    (0.01, 64): [0.20, 0.92, 0.86, 0.85],
    (0.1, 16): [0.60, 0.95],
}


def test_replay_results_last_and_best_rows():
    results = ReplayResults(CURVES)
    last = results.get_dataframe().set_index(["config/lr", "config/width"])
    assert last.loc[(0.01, 64), "score"] == 0.85 and last.loc[(0.01, 64), "training_iteration"] == 4
    assert last.loc[(0.1, 16), "training_iteration"] == 2
    best = results.get_dataframe(filter_metric="score", filter_mode="max").set_index(["config/lr", "config/width"])
    assert best.loc[(0.01, 64), "score"] == 0.92 and best.loc[(0.01, 64), "training_iteration"] == 2
    worst = results.get_dataframe(filter_metric="score", filter_mode="min").set_index(["config/lr", "config/width"])
    assert worst.loc[(0.01, 16), "score"] == 0.30
    assert len(results) == 3


def test_replay_objective_reports_the_curve(monkeypatch):
    import ray.tune

    reported = []
    monkeypatch.setattr(ray.tune, "report", lambda metrics: reported.append(metrics))
    replay_objective(CURVES)({"lr": 0.1, "width": 16})
    assert reported == [{"score": 0.60}, {"score": 0.95}]


@pytest.mark.slow
def test_replay_results_match_a_real_result_grid():
    """The stand-in the lab 06 hidden tests use behaves like Tune's ResultGrid.get_dataframe."""
    import raylab
    from ray import tune

    raylab.start_cluster(quiet=True)
    try:
        # (0.1, 64) has no curve in CURVES: give it one so the grid can run
        real = tune.Tuner(
            replay_objective({**CURVES, (0.1, 64): [0.4]}),
            param_space={"lr": tune.grid_search([0.01, 0.1]), "width": tune.grid_search([16, 64])},
            tune_config=tune.TuneConfig(max_concurrent_trials=2, reuse_actors=True),
            run_config=tune.RunConfig(storage_path=str(raylab.scratch_dir("tests", "replay", fresh=True)),
                                      verbose=0),
        ).fit()
        fake = ReplayResults({**CURVES, (0.1, 64): [0.4]})
        cols = ["config/lr", "config/width", "score", "training_iteration"]
        for kwargs in ({}, {"filter_metric": "score", "filter_mode": "max"},
                       {"filter_metric": "score", "filter_mode": "min"}):
            a = real.get_dataframe(**kwargs)[cols].sort_values(cols[:2]).reset_index(drop=True)
            b = fake.get_dataframe(**kwargs)[cols].sort_values(cols[:2]).reset_index(drop=True)
            assert a.astype(float).equals(b.astype(float)), (kwargs, a, b)
    finally:
        assert raylab.stop_cluster() == []


def test_tuner_settings_gives_the_verbosity_as_a_plain_int(tmp_path):
    from ray import tune
    from ray.tune.utils.log import Verbosity

    def verbosity(**run):
        tuner = tune.Tuner(_noop, run_config=tune.RunConfig(storage_path=str(tmp_path), **run))
        return tuner_settings(tuner)["verbose"]

    assert verbosity(verbose=Verbosity.V0_MINIMAL) == 0
    assert verbosity(verbose=2) == 2
    assert verbosity() == 1  # Tune's default when none is given
