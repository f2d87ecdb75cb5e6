"""raylab.checks.tune: the checks of lab 06's running-example exercises, on stand-in results (the
live path, a real interrupted experiment and its recovery, is proved by the lab's round trip)."""
import os
from types import SimpleNamespace

import pandas as pd
import pytest

from raylab.checks import tune as tc
from raylab.checks.common import CheckFailed


def _result(lr, hidden, values):
    history = pd.DataFrame({"val_accuracy": values, "training_iteration": range(1, len(values) + 1)})
    return SimpleNamespace(config={"lr": lr, "hidden": hidden, "epochs": 4}, metrics_dataframe=history,
                           metrics={"val_accuracy": values[-1], "training_iteration": len(values)})


class _Grid(list):
    errors = []

    def get_best_result(self):  # only its presence matters to the check
        raise NotImplementedError


def _grid():
    return _Grid([_result(0.05, 8, [0.7, 0.75, 0.8, 0.82]), _result(0.05, 64, [0.8, 0.85, 0.88, 0.86]),
                  _result(0.002, 8, [0.4]), _result(0.002, 64, [0.5, 0.55])])


def test_right_run_passes_and_best_is_by_last_value():
    grid = _grid()
    tc.check_tuned_spirals(grid, grid[1], lrs=[0.05, 0.002], hiddens=[8, 64], epochs=4)
    with pytest.raises(CheckFailed, match="best"):
        tc.check_tuned_spirals(grid, grid[0], lrs=[0.05, 0.002], hiddens=[8, 64], epochs=4)


def test_wrong_grid_one_report_and_too_many_epochs_fail():
    grid = _grid()
    with pytest.raises(CheckFailed, match="pairs"):
        tc.check_tuned_spirals(grid, grid[1], lrs=[0.05], hiddens=[8, 64], epochs=4)
    once = _Grid([_result(lr, h, [0.6]) for lr in (0.05, 0.002) for h in (8, 64)])
    with pytest.raises(CheckFailed, match="once per epoch"):
        tc.check_tuned_spirals(once, once[0], lrs=[0.05, 0.002], hiddens=[8, 64], epochs=4)
    with pytest.raises(CheckFailed, match="reported 4 times"):
        tc.check_tuned_spirals(grid, grid[1], lrs=[0.05, 0.002], hiddens=[8, 64], epochs=3)
    with pytest.raises(CheckFailed, match="ResultGrid"):
        tc.check_tuned_spirals(list(grid), grid[1], lrs=[0.05, 0.002], hiddens=[8, 64], epochs=4)


def _log(folder, entries):
    for i, (lr, hidden, epoch) in enumerate(entries):
        open(os.path.join(folder, f"{1796300000 + i:.6f}_abc123_{lr}_{hidden}_{epoch}"), "w").close()


def test_epochs_run_reads_the_log_in_order(tmp_path):
    _log(tmp_path, [(0.05, 16, 0), (0.05, 16, 1), (0.002, 16, 0), (0.002, 16, 1)])
    open(tmp_path / tc.CRASH_MARK, "w").close()
    assert tc.epochs_run(tmp_path) == {(0.05, 16): [0, 1], (0.002, 16): [0, 1]}


def _recovered(lrs, errors=()):
    grid = _Grid(SimpleNamespace(config={"lr": lr}, metrics={"training_iteration": 3}) for lr in lrs)
    grid.errors = list(errors)
    grid.get_dataframe = lambda: None
    return grid


@pytest.mark.parametrize("rerun, message", [
    ([(0.002, 16, 1), (0.002, 16, 2)], None),  # resumed from the checkpoint of epoch 0
    ([(0.002, 16, 0), (0.002, 16, 1), (0.002, 16, 2)], "crashed trial"),  # restarted from scratch
    ([(0.05, 16, 0), (0.05, 16, 1), (0.05, 16, 2), (0.002, 16, 1), (0.002, 16, 2)], "finished trial"),
])
def test_check_recovered_tells_resume_from_restart_and_rerun(tmp_path, rerun, message):
    _log(tmp_path, [(0.05, 16, 0), (0.05, 16, 1), (0.05, 16, 2), (0.002, 16, 0), (0.002, 16, 1)])
    before = tc.epochs_run(tmp_path)
    for i, (lr, hidden, epoch) in enumerate(rerun):
        open(tmp_path / f"{1796400000 + i:.6f}_def456_{lr}_{hidden}_{epoch}", "w").close()
    kwargs = dict(lrs=(0.05, 0.002), hidden=16, epochs=3, crash_lr=0.002, crash_epoch=1, before=before)
    if message is None:
        tc.check_recovered(_recovered([0.05, 0.002]), tmp_path, **kwargs)
    else:
        with pytest.raises(CheckFailed, match=message):
            tc.check_recovered(_recovered([0.05, 0.002]), tmp_path, **kwargs)


def test_check_recovered_rejects_errors_and_a_new_experiment(tmp_path):
    _log(tmp_path, [(0.05, 16, 0)])
    kwargs = dict(lrs=(0.05, 0.002), hidden=16, epochs=3, crash_lr=0.002, crash_epoch=1, before={})
    with pytest.raises(CheckFailed, match="still errored"):
        tc.check_recovered(_recovered([0.05, 0.002], errors=[RuntimeError()]), tmp_path, **kwargs)
    new = _Grid([SimpleNamespace(config={}, metrics={})])
    new.errors, new.get_dataframe = [], (lambda: None)
    with pytest.raises(CheckFailed, match="trials"):
        tc.check_recovered(new, tmp_path, **kwargs)
    with pytest.raises(CheckFailed, match="ResultGrid"):
        tc.check_recovered(None, tmp_path, **kwargs)
