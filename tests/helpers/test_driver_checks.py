"""raylab.checks.driver and raylab.diagrams: bounded calls of a learner's driver, folder tests,
the Train-run picture (pure Python; the real cluster path runs in lab 01's round trip)."""
import os

import pytest

from raylab import diagrams
from raylab.checks import driver as driver_checks
from raylab.checks.common import CheckFailed


def test_path_is_under_resolves_links_and_rejects_uris_and_siblings(tmp_path):
    inner = tmp_path / "store" / "run"
    inner.mkdir(parents=True)
    link = tmp_path / "link"
    os.symlink(tmp_path / "store", link)
    assert driver_checks.path_is_under(inner, tmp_path / "store")
    assert driver_checks.path_is_under(link / "run", tmp_path / "store")
    assert driver_checks.path_is_under(tmp_path / "store", tmp_path / "store")
    assert not driver_checks.path_is_under(tmp_path / "store2", tmp_path / "store")
    assert not driver_checks.path_is_under("s3://bucket/store/run", tmp_path / "store")
    assert not driver_checks.path_is_under(None, tmp_path)


def test_run_bounded_turns_errors_into_checks_and_restores_the_environment(monkeypatch):
    import raylab.checks.capstone as cc

    monkeypatch.setattr(cc, "actor_ids", lambda: set())
    monkeypatch.setattr(cc, "worker_group_sizes", lambda exclude=(): [2])
    for var in driver_checks.TIMEOUT_VARS:
        monkeypatch.delenv(var, raising=False)
    seen = {}

    def fine(a, b=0):
        seen.update({v: os.environ.get(v) for v in driver_checks.TIMEOUT_VARS})
        return a + b

    assert driver_checks.run_bounded(fine, 1, b=2, timeout_s=7) == (3, [2])
    assert set(seen.values()) == {"7"}
    assert all(v not in os.environ for v in driver_checks.TIMEOUT_VARS)

    def todo():
        raise NotImplementedError()

    with pytest.raises(CheckFailed, match="not written yet"):
        driver_checks.run_bounded(todo)

    def none_checkpoint():
        return None.path

    with pytest.raises(CheckFailed, match="result.checkpoint and"):
        driver_checks.run_bounded(none_checkpoint)


def test_train_run_picture_names_every_process():
    import matplotlib

    matplotlib.use("Agg")
    fig, labels = diagrams.train_run(3)
    text = " ".join(labels)
    for part in ("driver", "TrainController", "rank 0", "rank 2", "process group", "object store",
                 "storage_path"):
        assert part in text
    assert "rank 3" not in text
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_run_bounded_hints_at_none_metrics_too(monkeypatch):
    import raylab.checks.capstone as cc

    monkeypatch.setattr(cc, "actor_ids", lambda: set())

    def none_metrics():
        return None["val_accuracy"]

    with pytest.raises(CheckFailed, match="carried a checkpoint"):
        driver_checks.run_bounded(none_metrics)
