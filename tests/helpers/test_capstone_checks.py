"""raylab.checks.capstone.early_stopping_scheduler: the scheduler a Tune experiment ran with."""
import ray.cloudpickle
from ray import tune
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

from raylab.checks.capstone import early_stopping_scheduler


def _experiment(tmp_path, tune_config):
    """A folder with the tuner.pkl Tune writes: its Tuner's state, a dict holding the TuneConfig."""
    with open(tmp_path / "tuner.pkl", "wb") as f:
        ray.cloudpickle.dump({"_tune_config": tune_config, "_run_config": None}, f)
    return tmp_path


def test_an_asha_scheduler_is_found_with_the_metric_from_either_place(tmp_path):
    own = _experiment(tmp_path, tune.TuneConfig(scheduler=ASHAScheduler(metric="val_accuracy", mode="max")))
    assert early_stopping_scheduler(own) == "AsyncHyperBandScheduler on val_accuracy"
    from_config = _experiment(tmp_path, tune.TuneConfig(metric="val_accuracy", mode="max",
                                                        scheduler=ASHAScheduler(max_t=6)))
    assert early_stopping_scheduler(from_config) == "AsyncHyperBandScheduler on val_accuracy"


def test_no_scheduler_fifo_or_no_state_is_none(tmp_path):
    assert early_stopping_scheduler(_experiment(tmp_path, tune.TuneConfig(metric="val_accuracy", mode="max"))) is None
    assert early_stopping_scheduler(_experiment(tmp_path, tune.TuneConfig(scheduler=FIFOScheduler()))) is None
    (tmp_path / "tuner.pkl").write_bytes(b"not a pickle")
    assert early_stopping_scheduler(tmp_path) is None
    assert early_stopping_scheduler(tmp_path / "missing") is None
