"""API-drift guard: every Ray symbol the course teaches, with the signatures it relies on.

A Ray upgrade that renames or reshapes one of these fails here, in one place, before any lab breaks.
"""
import dataclasses
import inspect

import pytest


def _params(fn):
    return list(inspect.signature(fn).parameters)


def test_train_v2_is_what_ray_train_exports():
    import ray.train
    from ray.train.torch import TorchTrainer
    from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

    assert TorchTrainer.__module__.startswith("ray.train.v2.")
    assert issubclass(TorchTrainer, DataParallelTrainer)
    for name in ("ScalingConfig", "RunConfig", "FailureConfig", "CheckpointConfig", "Checkpoint",
                 "report", "get_checkpoint", "get_context", "CheckpointUploadMode", "ValidationConfig",
                 "UserCallback", "TrainingFailedError", "WorkerGroupError", "ControllerError",
                 "PreemptionError", "get_all_reported_checkpoints"):
        assert hasattr(ray.train, name), name


def test_report_signature():
    import ray.train

    assert _params(ray.train.report)[:3] == ["metrics", "checkpoint", "checkpoint_dir_name"]
    for p in ("checkpoint_upload_mode", "delete_local_checkpoint_after_upload", "validation"):
        assert p in _params(ray.train.report)


def test_config_fields_and_defaults():
    import ray.train

    scaling = {f.name: f.default for f in dataclasses.fields(ray.train.ScalingConfig)}
    assert scaling["num_workers"] == 1 and scaling["use_gpu"] is False
    assert {"resources_per_worker", "placement_strategy", "trainer_resources"} <= set(scaling)
    failure = ray.train.FailureConfig()
    assert (failure.max_failures, failure.controller_failure_limit, failure.max_preemption_failures) == (0, -1, -1)
    run = {f.name for f in dataclasses.fields(ray.train.RunConfig)}
    assert {"name", "storage_path", "failure_config", "checkpoint_config", "callbacks"} <= run
    assert set(ray.train.CheckpointUploadMode.__members__) >= {"SYNC", "ASYNC", "NO_UPLOAD"}


def test_torch_helpers_and_trainer_signature():
    import ray.train.torch as rtt

    for name in ("prepare_model", "prepare_data_loader", "get_device", "TorchTrainer", "TorchConfig"):
        assert hasattr(rtt, name), name
    params = _params(rtt.TorchTrainer.__init__)
    for p in ("train_loop_per_worker", "train_loop_config", "scaling_config", "run_config",
              "torch_config", "datasets", "validation_config"):
        assert p in params


def test_tune_side():
    from ray import tune
    from ray.tune.integration.ray_train import TuneReportCallback
    import ray.train

    for name in ("Tuner", "TuneConfig", "RunConfig", "FailureConfig", "with_resources", "report",
                 "get_context", "grid_search", "choice", "uniform"):
        assert hasattr(tune, name), name
    assert issubclass(TuneReportCallback, ray.train.UserCallback)
    assert {"metric", "mode", "max_concurrent_trials"} <= set(_params(tune.TuneConfig))
    assert tune.RunConfig is not ray.train.RunConfig
    from ray.tune.schedulers import ASHAScheduler  # noqa: F401 - the scheduler lab 06 teaches


def test_env_var_names_the_course_teaches_are_read_by_ray():
    from ray.train.v2._internal import constants

    source = inspect.getsource(constants)
    for var in ("RAY_TRAIN_V2_ENABLED", "RAY_TRAIN_COLLECTIVE_TIMEOUT_S",
                "RAY_TRAIN_COLLECTIVE_WARN_INTERVAL_S", "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S",
                "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER",
                "RAY_TRAIN_METRICS_ENABLED"):
        assert var in source, var


def test_deprecated_v1_paths_raise_in_v2():
    import ray.train

    with pytest.raises(DeprecationWarning):
        ray.train.ScalingConfig(trainer_resources={"CPU": 1})
    with pytest.raises(DeprecationWarning):
        ray.train.FailureConfig(fail_fast=True)
