"""Claims C27-C40 (labs 06 and 07: Tune, and Train + Tune) checked against the installed Ray 2.58.0.

What this module proves, on one real local cluster (2 logical CPUs plus 2 units of a custom
``TRAIN_DRIVER`` resource, no dashboard) and with real Tune and Train runs (gloo on CPU, no mocks):

- C27/C28: a seeded random search proposes the same configs whatever the metrics say, while ASHA
  stops trials from their intermediate results.
- C29/C40: two trial drivers on Tune's default 1 CPU hold both CPUs, so neither Train run can place
  its worker (bounded: 3 s worker-group start timeout, no controller retries), as
  ``raylab.tuning.plan_train_tune`` predicts; trials wider than the cluster's free share run one at
  a time whatever ``max_concurrent_trials`` says; a trial larger than the cluster waits instead of
  failing; a 0-CPU driver is refused.
- C30: the same CPU total placed as a PACK group but not as a STRICT_SPREAD group.
- C31: the course's scalar Tune example.
- C33: a second run under the same name is a new experiment; ``Tuner.restore`` is the recovery.
- C34/C35: a V2 trainer instance in ``Tuner`` raises ``TuneError``; the legacy ``BaseTrainer``
  path only exists with ``RAY_TRAIN_V2_ENABLED=0`` (checked in a child process).
- C36-C40: one Tune run of two trials, each a function trainable that builds a 2-worker
  ``TorchTrainer`` with a ``TuneReportCallback`` built inside the trial: per-trial parameters,
  run names and storage, rank 0's metrics unaveraged plus ``checkpoint_path``, Tune and Train
  ``RunConfig`` kept apart, and the driver on a custom resource so its workers get both CPUs.

C32 is tested in ``tests/claims/test_claims_setup.py``. Everything that can hang is bounded: a Tune time
budget, Train's worker-group start timeout with ``controller_failure_limit=0``, a child process
with a hard time limit, and a ``pytest.mark.timeout`` on every test that runs something.
"""
import os
import sys
import time
from pathlib import Path

import pytest
import ray.cloudpickle

import raylab
from raylab.child_process import run_snippet
from raylab.tuning import max_overlap, plan_train_tune, trial_resources, tuner_settings

pytestmark = pytest.mark.slow

# Ray workers cannot import this test module by name: ship its functions (Train loops, trial
# drivers) by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

DRIVER_RESOURCE = "TRAIN_DRIVER"


@pytest.fixture(scope="module")
def cluster():
    """The course cluster (2 CPUs) plus 2 units of a custom resource for Train+Tune trial drivers,
    started once for the module and stopped (with all its processes) at the end."""
    # start_cluster removes a half-started head itself when its last attempt fails
    raylab.start_cluster(quiet=True, resources={DRIVER_RESOURCE: 2})
    try:
        yield dict(ray.cluster_resources())
    finally:
        left = raylab.stop_cluster()
    assert left == [], left


def _trial_index(result) -> int:
    """Trial ids end in the order Tune created the trials: ``<exp>_00000``, ``<exp>_00001``."""
    return int(result.metrics["trial_id"].rsplit("_", 1)[1])


# ---------------------------------------------------------------------------- no cluster needed
def test_c34_v2_trainer_instances_in_tuner_raise_tune_error():
    import ray.train
    from ray import tune
    from ray.train.torch import TorchTrainer
    from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer
    from ray.tune.error import TuneError

    def loop(config):
        pass

    for trainer_cls in (DataParallelTrainer, TorchTrainer):
        trainer = trainer_cls(loop, scaling_config=ray.train.ScalingConfig(num_workers=1))
        with pytest.raises(TuneError, match="Improper 'run'"):
            tune.Tuner(trainer)  # refused at construction, before anything runs


@pytest.mark.timeout(180)
def test_c35_legacy_base_trainer_path_exists_only_with_v2_disabled(tmp_path):
    import ray.train
    from ray.train.base_trainer import BaseTrainer
    from ray.train.torch import TorchTrainer

    # This process: V2 (the default). The trainer is no BaseTrainer, and the legacy driver
    # resources are refused when the config is built.
    assert TorchTrainer.__module__ == "ray.train.v2.torch.torch_trainer"
    assert not issubclass(TorchTrainer, BaseTrainer)
    with pytest.raises(DeprecationWarning, match="trainer_resources"):
        ray.train.ScalingConfig(num_workers=1, trainer_resources={"CPU": 1})

    # A child with RAY_TRAIN_V2_ENABLED=0: the legacy trainer, Tuner(trainer) accepted with a
    # deprecation warning, and the V2 classes refuse to run there. Nothing starts Ray.
    code = """
import os
import warnings
import ray, ray.train
from ray import tune
from ray.train.base_trainer import BaseTrainer
from ray.train.torch import TorchTrainer
assert issubclass(TorchTrainer, BaseTrainer) and TorchTrainer.__module__ == "ray.train.torch.torch_trainer"
legacy = TorchTrainer(lambda config: None,
                      scaling_config=ray.train.ScalingConfig(num_workers=1, trainer_resources={"CPU": 0}))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    tune.Tuner(legacy, run_config=tune.RunConfig(storage_path=os.environ["LEGACY_STORAGE"]))
assert any("Passing a Trainer to the Tuner is deprecated" in str(w.message) for w in caught), caught
from ray.train.v2.torch.torch_trainer import TorchTrainer as V2TorchTrainer
from ray.train.v2.api.config import ScalingConfig as V2ScalingConfig
try:
    V2TorchTrainer(lambda config: None, scaling_config=V2ScalingConfig(num_workers=1))
except ValueError as exc:
    assert "must be enabled" in str(exc), exc
else:
    raise AssertionError("the V2 trainer ran with V2 disabled")
assert not ray.is_initialized()
print("LEGACY-PATH-OK")
"""
    # the storage path keeps the Tuner's tuner.pkl out of ~/ray_results
    res = run_snippet(code, timeout_s=150, env={"RAY_TRAIN_V2_ENABLED": "0", "LEGACY_STORAGE": str(tmp_path)})
    assert not res.timed_out and res.returncode == 0, res.stderr[-3000:]
    assert "LEGACY-PATH-OK" in res.stdout


def test_c37_report_callback_must_be_built_inside_a_tune_session():
    import ray.train
    from ray.tune.integration.ray_train import TuneReportCallback

    assert issubclass(TuneReportCallback, ray.train.UserCallback)  # a Train callback, not a Tune one
    with pytest.raises(RuntimeError, match="must be used in a Tune session"):
        TuneReportCallback()  # here, in the driver, outside any trial


def test_c39_tune_and_train_runconfig_are_different_classes_and_checked():
    import ray.train
    from ray import tune
    from ray.train.torch import TorchTrainer

    assert not issubclass(tune.RunConfig, ray.train.RunConfig)
    assert not issubclass(ray.train.RunConfig, tune.RunConfig)
    with pytest.raises(ValueError, match="Invalid `RunConfig` type"):
        TorchTrainer(lambda config: None, run_config=tune.RunConfig())
    with pytest.raises(ValueError, match="FailureConfig"):
        ray.train.RunConfig(failure_config=tune.FailureConfig())
    with pytest.raises(ValueError, match="CheckpointConfig"):
        ray.train.RunConfig(checkpoint_config=tune.CheckpointConfig())
    with pytest.raises(ValueError, match="UserCallback"):
        ray.train.RunConfig(callbacks=[tune.Callback()])


def test_c40_a_zero_cpu_trial_driver_is_refused():
    from ray import tune

    def driver(config):
        pass

    # The obvious way to keep the driver off the CPUs its workers need does not exist...
    with pytest.raises(ValueError, match="empty head and zero worker bundles"):
        tune.with_resources(driver, {"cpu": 0})
    # ...so the driver asks for a small amount of something else (what the fixture declares).
    assert trial_resources(tune.with_resources(driver, {DRIVER_RESOURCE: 1}))["resources"] == \
        {DRIVER_RESOURCE: 1.0}


# ---------------------------------------------------------------------------- Tune on the cluster
@pytest.mark.timeout(300)
def test_c31_scalar_example_collects_both_trials_and_x3_is_best(cluster, tmp_path):
    from ray import tune

    # the lab's example (its claim:C31 cell), on the module's 2-CPU cluster without dashboard
    assert cluster["CPU"] == 2

    def objective(config):
        for step in (1, 2):
            tune.report({"score": -(config["x"] - 3) ** 2, "step": step})

    results = tune.Tuner(
        tune.with_resources(objective, {"cpu": 1}),
        param_space={"x": tune.grid_search([1, 3])},
        tune_config=tune.TuneConfig(metric="score", mode="max", max_concurrent_trials=1, reuse_actors=True),
        run_config=tune.RunConfig(name="scalar", storage_path=str(tmp_path), verbose=0),
    ).fit()
    assert not results.errors and len(results) == 2
    assert sorted((r.config["x"], r.metrics["score"], r.metrics["training_iteration"]) for r in results) \
        == [(1, -4, 2), (3, 0, 2)]
    best = results.get_best_result()
    assert best.config == {"x": 3} and best.metrics["score"] == 0


@pytest.mark.timeout(300)
def test_c27_c28_random_search_ignores_metrics_while_asha_stops_from_them(cluster, tmp_path):
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search import BasicVariantGenerator

    def run(prefer_fast: bool):
        def curve(config):
            import math

            rate = config["rate"] if prefer_fast else 1.0 / config["rate"]
            for i in range(1, 5):  # always reports 4 times unless the scheduler stops it
                tune.report({"loss": math.exp(-rate * i) + 0.01 * config["jitter"]})

        tuner = tune.Tuner(
            curve,
            # grid over rate (best first when fast is preferred), random jitter from a fixed seed
            param_space={"rate": tune.grid_search([2.0, 1.0, 0.5]), "jitter": tune.uniform(0, 1)},
            # One trial at a time. Not max_concurrent_trials=1: Tune ignores it (with a warning)
            # when search_alg is a BasicVariantGenerator instance.
            tune_config=tune.TuneConfig(
                metric="loss", mode="min", reuse_actors=True,
                search_alg=BasicVariantGenerator(random_state=7, max_concurrent=1),
                scheduler=ASHAScheduler(max_t=4, grace_period=1, reduction_factor=2)),
            run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0),
        )
        assert tuner_settings(tuner)["search_alg"] == "BasicVariantGenerator"  # the searcher
        results = sorted(tuner.fit(), key=_trial_index)
        assert not any(r.error for r in results)
        return ([(r.config["rate"], r.config["jitter"]) for r in results],
                [r.metrics["training_iteration"] for r in results])

    fast_configs, fast_iterations = run(prefer_fast=True)
    slow_configs, slow_iterations = run(prefer_fast=False)
    # C28: opposite objectives, the same candidates in the same order: nothing adapted to metrics.
    assert fast_configs == slow_configs
    assert len({jitter for _, jitter in fast_configs}) == 3  # jitter really was sampled
    # C27: with one trial at a time, ASHA compares each trial's first result with the first
    # trial's. Best trial first: the two worse ones are stopped after 1 of 4 reports. Worst trial
    # first: every later one is better, so nothing is stopped.
    assert fast_iterations == [4, 1, 1]
    assert slow_iterations == [4, 4, 4]


@pytest.mark.timeout(300)
def test_c29_capacity_not_max_concurrent_trials_decides_what_runs(cluster, tmp_path):
    from ray import tune

    def timed(config):
        start = time.time()
        time.sleep(0.5)
        granted = tune.get_context().get_trial_resources()
        tune.report({"start": start, "end": time.time(), "cpus": granted.required_resources.get("CPU", 0.0)})

    # Each trial is a 2-bundle placement group of 1 CPU each: the whole 2-CPU cluster.
    tuner = tune.Tuner(
        tune.with_resources(timed, tune.PlacementGroupFactory([{"CPU": 1}, {"CPU": 1}])),
        param_space={"i": tune.grid_search([0, 1])},
        tune_config=tune.TuneConfig(max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(storage_path=str(tmp_path / "wide"), verbose=0),
    )
    assert tuner_settings(tuner)["trial"]["bundles"] == [{"CPU": 1.0}, {"CPU": 1.0}]
    results = tuner.fit()
    assert not results.errors and len(results) == 2
    assert all(r.metrics["cpus"] == 2.0 for r in results)
    # max_concurrent_trials=2 allowed two at once; capacity allowed one
    assert max_overlap([(r.metrics["start"], r.metrics["end"]) for r in results]) == 1

    # A trial larger than the whole cluster is not an error: it waits (here until a 3 s budget).
    def never(config):
        tune.report({"ran": 1})

    t0 = time.monotonic()
    results = tune.Tuner(tune.with_resources(never, {"cpu": 3}),
                         tune_config=tune.TuneConfig(time_budget_s=3),
                         run_config=tune.RunConfig(storage_path=str(tmp_path / "big"), verbose=0)).fit()
    assert time.monotonic() - t0 < 60
    assert "ran" not in results[0].metrics and not results.errors


@pytest.mark.timeout(120)
def test_c30_same_cpu_total_placed_or_not_depending_on_bundle_placement(cluster):
    import ray.train
    from ray.util.placement_group import placement_group, remove_placement_group

    # What a Train worker group asks for: one bundle per worker, with the ScalingConfig's strategy.
    def group(strategy):
        scaling = ray.train.ScalingConfig(num_workers=2, placement_strategy=strategy)
        assert scaling.total_resources == {"CPU": 2.0} == {"CPU": cluster["CPU"]}  # totals fit
        bundles = [dict(scaling.resources_per_worker or {"CPU": 1})] * scaling.num_workers
        return placement_group(bundles, strategy=scaling.placement_strategy)

    deadline = time.monotonic() + 30  # earlier tests' trial actors may still be releasing CPUs
    while ray.available_resources().get("CPU", 0.0) < 2.0 and time.monotonic() < deadline:
        time.sleep(0.2)
    spread = group("STRICT_SPREAD")  # one bundle per node, and this cluster has one node
    try:
        assert not spread.wait(timeout_seconds=2)
        assert ray.available_resources().get("CPU") == 2.0  # both CPUs free, yet nothing placed
    finally:
        remove_placement_group(spread)
    packed = group("PACK")
    try:
        assert packed.wait(timeout_seconds=30)
    finally:
        remove_placement_group(packed)


@pytest.mark.timeout(300)
def test_c33_same_name_starts_a_new_experiment_restore_recovers(cluster, tmp_path):
    from ray import tune

    log, fail_flag = tmp_path / "runs.log", tmp_path / "fail-x2"

    def objective(config):
        with open(log, "a") as f:
            f.write(f"{config['x']}\n")
        if config["x"] == 2 and os.path.exists(fail_flag):
            raise RuntimeError("x=2 fails while the flag file exists")
        tune.report({"score": config["x"]})

    def executed():
        runs = log.read_text().split()
        log.write_text("")
        return sorted(int(x) for x in runs)

    storage = tmp_path / "results"
    folder = storage / "same"

    def new_run():
        return tune.Tuner(objective, param_space={"x": tune.grid_search([1, 2])},
                          tune_config=tune.TuneConfig(reuse_actors=True),
                          run_config=tune.RunConfig(name="same", storage_path=str(storage), verbose=0)).fit()

    fail_flag.touch()
    first = new_run()
    assert len(first.errors) == 1 and executed() == [1, 2]
    fail_flag.unlink()
    trial_dirs = {p.name for p in folder.iterdir() if p.is_dir()}

    # Recovery: restore the experiment; only the errored trial runs again, in its own folder.
    assert tune.Tuner.can_restore(folder)
    restored = tune.Tuner.restore(str(folder), trainable=objective, resume_errored=True).fit()
    assert not restored.errors and sorted(r.metrics["score"] for r in restored) == [1, 2]
    assert executed() == [2]
    assert {p.name for p in folder.iterdir() if p.is_dir()} == trial_dirs

    # Same name again with a plain Tuner: no error, no warning needed, a whole new experiment
    # whose state file and trial folders sit next to the old ones.
    states_before = set(folder.glob("experiment_state-*.json"))
    again = new_run()
    assert not again.errors and executed() == [1, 2]
    assert len(set(folder.glob("experiment_state-*.json")) - states_before) == 1
    assert len({p.name for p in folder.iterdir() if p.is_dir()} - trial_dirs) == 2


@pytest.mark.timeout(120)
def test_c39_train_run_settings_given_to_the_tuner_pass_construction_then_crash_at_fit(cluster, tmp_path):
    import warnings

    import ray.train
    from ray import tune

    def objective(config):
        tune.report({"a": 1})

    # A whole train.RunConfig: only a deprecation warning when the Tuner is built...
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuner = tune.Tuner(objective, run_config=ray.train.RunConfig(storage_path=str(tmp_path / "a")))
    assert any("should be imported from `ray.tune`" in str(w.message) for w in caught)
    with pytest.raises(AttributeError, match="'str' object has no attribute 'value'"):
        tuner.fit()  # ...then an error that does not name the mix-up
    # A Train callback in tune.RunConfig: accepted (train.RunConfig refuses Tune callbacks, not
    # the other way round), and fit fails on the missing Tune callback method.
    run_config = tune.RunConfig(storage_path=str(tmp_path / "b"), verbose=0,
                                callbacks=[ray.train.UserCallback()])
    with pytest.raises(AttributeError, match="'UserCallback' object has no attribute 'setup'"):
        tune.Tuner(objective, run_config=run_config).fit()


# ---------------------------------------------------------------------------- Train + Tune
def _rank_loop(config):
    """Each rank reports a loss that tells ranks and trials apart; only rank 0 writes a checkpoint."""
    import os
    import tempfile

    import ray.train

    rank = ray.train.get_context().get_world_rank()
    for epoch in range(2):
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = None
            if rank == 0:
                with open(os.path.join(folder, "state.txt"), "w") as f:
                    f.write(str(epoch))
                checkpoint = ray.train.Checkpoint.from_directory(folder)
            ray.train.report({"loss": config["scale"] * (rank + 1) + epoch, "rank": rank, "epoch": epoch},
                             checkpoint=checkpoint)


def _meet(folder, name, count, timeout_s=90.0):
    """Mark ``name`` as arrived in ``folder`` and wait (bounded) until ``count`` have arrived."""
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, name), "w").close()
    deadline = time.monotonic() + timeout_s
    while len(os.listdir(folder)) < count and time.monotonic() < deadline:
        time.sleep(0.1)


def _driver(train_storage, workers, start_timeout_s=None, meet_dir=None, meet_count=0):
    """A Tune function trainable that builds and fits one TorchTrainer per trial.

    With ``meet_dir``, the ``meet_count`` drivers wait for each other before building their
    trainers (so all of them hold their resources before any Train run asks for workers) and
    again before ending (so none gives its resources back while another Train run still waits).
    """
    def trial_driver(config):
        import os

        import ray.train
        from ray import tune
        from ray.train.torch import TorchTrainer
        from ray.tune.integration.ray_train import TuneReportCallback

        trial_id = tune.get_context().get_trial_id()
        if start_timeout_s is not None:  # the trainer forwards it to this trial's Train controller
            os.environ["RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"] = str(start_timeout_s)
        if meet_dir is not None:
            _meet(os.path.join(meet_dir, "started"), trial_id, meet_count)
        trainer = TorchTrainer(
            _rank_loop,
            train_loop_config={"scale": config["scale"]},  # the trial's parameter, to every worker
            scaling_config=ray.train.ScalingConfig(num_workers=workers),
            run_config=ray.train.RunConfig(
                name=f"train-{trial_id}",  # one Train run per trial
                storage_path=train_storage,
                callbacks=[TuneReportCallback()],  # built here, inside the trial's Tune session
                failure_config=ray.train.FailureConfig(max_failures=0, controller_failure_limit=0),
            ),
        )
        try:
            trainer.fit()
        finally:
            if meet_dir is not None:
                _meet(os.path.join(meet_dir, "ended"), trial_id, meet_count)

    return trial_driver


@pytest.fixture(scope="module")
def train_tune(cluster, tmp_path_factory):
    """One Tune run, two trials (scale 10 and 100), each a 2-worker Train run; drivers on the
    custom resource so both CPUs are left for the workers."""
    from ray import tune

    root = tmp_path_factory.mktemp("train_tune")
    tune_storage, train_storage = root / "tune", root / "train"
    tuner = tune.Tuner(
        tune.with_resources(_driver(str(train_storage), workers=2), {DRIVER_RESOURCE: 1}),
        param_space={"scale": tune.grid_search([10, 100])},
        tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=1, reuse_actors=True),
        run_config=tune.RunConfig(name="tuned", storage_path=str(tune_storage), verbose=0,
                                  failure_config=tune.FailureConfig(max_failures=0)),
    )
    settings = tuner_settings(tuner)  # read before fit: what the run was configured with
    results = tuner.fit()
    return {"results": sorted(results, key=_trial_index), "grid": results, "settings": settings,
            "tune_storage": tune_storage, "train_storage": train_storage}


@pytest.mark.timeout(400)
def test_c36_function_trainable_passes_trial_params_and_gets_its_own_train_run(train_tune):
    results = train_tune["results"]
    assert not train_tune["grid"].errors, train_tune["grid"].errors
    assert [r.config["scale"] for r in results] == [10, 100]
    run_dirs = set()
    for r in results:
        history = r.metrics_dataframe
        # the trial's parameter reached the Train workers through train_loop_config
        assert history["loss"].tolist() == [r.config["scale"] + 0.0, r.config["scale"] + 1.0]
        # every report of the trial lands in that trial's own Train run
        folders = {Path(p).parent for p in history["checkpoint_path"]}
        assert folders == {train_tune["train_storage"] / f"train-{r.metrics['trial_id']}"}
        run_dirs |= folders
    assert len(run_dirs) == 2


@pytest.mark.timeout(400)
def test_c37_callback_built_in_the_trial_relays_every_train_report_to_tune(train_tune):
    for r in train_tune["results"]:
        # two Train reports, two Tune results, each carrying Train's metrics
        assert r.metrics["training_iteration"] == 2
        assert r.metrics_dataframe["epoch"].tolist() == [0, 1]


@pytest.mark.timeout(400)
def test_c38_rank0_metrics_unaveraged_and_checkpoint_path_instead_of_checkpoint(train_tune):
    from ray.tune.integration.ray_train import CHECKPOINT_PATH_KEY

    assert CHECKPOINT_PATH_KEY == "checkpoint_path"
    for r in train_tune["results"]:
        history = r.metrics_dataframe
        scale = r.config["scale"]
        # rank 0 reported scale+epoch, rank 1 2*scale+epoch; a mean would be 1.5*scale+epoch
        assert history["loss"].tolist() == [scale, scale + 1]
        assert set(history["rank"]) == {0}
        for epoch, path in enumerate(history[CHECKPOINT_PATH_KEY]):
            # the path of Train's persisted checkpoint, not a copy made by Tune
            assert Path(path).is_relative_to(train_tune["train_storage"])
            assert (Path(path) / "state.txt").read_text() == str(epoch)
        assert r.checkpoint is None
        assert not list(Path(r.path).glob("checkpoint_*"))


@pytest.mark.timeout(400)
def test_c39_tuner_and_trainer_each_use_their_own_runconfig_and_storage(train_tune):
    from ray import tune

    tune_run_config = f"{tune.RunConfig.__module__}.{tune.RunConfig.__name__}"
    assert train_tune["settings"]["run_config_type"] == tune_run_config  # what the Tuner was given
    tune_dir = train_tune["tune_storage"] / "tuned"
    for r in train_tune["results"]:
        assert Path(r.path).parent == tune_dir  # Tune's trial folders under tune.RunConfig's storage
    # Train's runs only under train.RunConfig's storage, one per trial, none in Tune's folders
    train_runs = sorted(p.name for p in train_tune["train_storage"].iterdir())
    assert train_runs == sorted(f"train-{r.metrics['trial_id']}" for r in train_tune["results"])
    assert not list(tune_dir.rglob("train-*"))


@pytest.mark.timeout(400)
def test_c40_driver_on_a_custom_resource_leaves_both_cpus_to_its_train_workers(cluster, train_tune):
    settings = train_tune["settings"]
    assert settings["trial"]["resources"] == {DRIVER_RESOURCE: 1.0}
    # The plan the run followed, and what Tune's default 1-CPU driver would have done instead.
    plan = plan_train_tune(cluster, settings["trial"]["resources"], 2,
                           max_concurrent_trials=settings["max_concurrent_trials"])
    assert plan.ok and plan.waves == [[0], [1]], plan
    assert plan_train_tune(cluster, {"CPU": 1}, 2, max_concurrent_trials=1).outcome == "deadlock"
    assert not train_tune["grid"].errors and len(train_tune["results"]) == 2


@pytest.mark.timeout(300)
def test_c29_c40_two_default_cpu_drivers_starve_their_train_workers(cluster, tmp_path):
    import ray.train
    from ray import tune
    from ray.train import ControllerError
    from ray.train.v2._internal.exceptions import WorkerGroupStartupTimeoutError

    # Two trials at once, each driver holding Tune's default 1 CPU: both CPUs are taken before
    # either Train run asks for its 1-CPU worker. With Train's default (retry the start forever)
    # the drivers never let go. Here each Train run gives up after one 3 s wait instead, so the
    # drivers meet before building their trainers and again before ending: otherwise the first
    # to give up would hand its CPU to the other and turn the deadlock into a race.
    # The model predicts the outcome...
    meet = tmp_path / "meet"
    tuner = tune.Tuner(
        # bounded: 3 s worker-group start timeout, no controller retry
        _driver(str(tmp_path / "train"), workers=1, start_timeout_s=3, meet_dir=str(meet), meet_count=2),
        param_space={"scale": tune.grid_search([1, 2])},
        tune_config=tune.TuneConfig(max_concurrent_trials=2),
        run_config=tune.RunConfig(storage_path=str(tmp_path / "tune"), verbose=0),
    )
    settings = tuner_settings(tuner)
    assert settings["trial"]["default"] and settings["trial"]["resources"] == {"CPU": 1.0}
    plan = plan_train_tune(cluster, settings["trial"]["resources"], 1,
                           max_concurrent_trials=settings["max_concurrent_trials"])
    assert plan.outcome == "deadlock", plan
    # ...and the real run shows it: neither worker group is ever placed. Train's default would
    # retry that start forever (controller_failure_limit=-1); the drivers here allow no retry.
    assert ray.train.FailureConfig().controller_failure_limit == -1
    t0 = time.monotonic()
    stuck = tuner.fit()
    assert time.monotonic() - t0 < 200
    assert len(os.listdir(meet / "started")) == len(os.listdir(meet / "ended")) == 2
    assert len(stuck.errors) == 2
    for error in stuck.errors:
        # the trial's error is the driver's ControllerError: its worker group was never placed
        assert isinstance(error, ControllerError), repr(error)[:2000]
        assert isinstance(error.controller_failure, WorkerGroupStartupTimeoutError), repr(error)[:2000]
