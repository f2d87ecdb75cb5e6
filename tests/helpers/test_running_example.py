"""The course's running example (raylab.running_example): deterministic data, a model that learns
it in seconds, and rebuild helpers whose artifacts load (the last two on the real local cluster)."""
import os

import pytest
import torch

from raylab import running_example as rx


def test_splits_are_deterministic_per_seed_and_differ_between_splits_and_seeds():
    a, b = rx.make_splits(seed=0), rx.make_splits(seed=0)
    for name in rx.SIZES:
        assert torch.equal(a[name][0], b[name][0]) and torch.equal(a[name][1], b[name][1])
        assert a[name][0].shape == (rx.SIZES[name], rx.FEATURES) and a[name][1].dtype == torch.int64
    assert not torch.equal(a["train"][0][:100], a["val"][0][:100])
    assert not torch.equal(a["test"][0], rx.make_splits(seed=1)["test"][0])
    unseen = rx.unseen_split(n=500)[0]
    assert all(not torch.equal(unseen, a[name][0][:500]) for name in rx.SIZES)
    counts = a["train"][1].bincount()
    assert len(counts) == rx.CLASSES and counts.min() > 0.25 * rx.SIZES["train"]


def test_npz_files_round_trip_with_numpy_types(tmp_path):
    paths = rx.write_splits(tmp_path, seed=3)
    assert sorted(paths) == ["test", "train", "val"]
    import numpy as np

    with np.load(paths["val"]) as f:
        assert f["x"].dtype == np.float32 and f["y"].dtype == np.int64
    x, y = rx.load_split(paths["val"])
    ref = rx.make_splits(seed=3)["val"]
    assert torch.allclose(x, ref[0]) and torch.equal(y, ref[1])


def test_reference_fit_learns_and_hyperparameters_matter():
    torch.set_num_threads(1)
    good = rx.reference_fit(lr=0.05, hidden=64, epochs=6)
    bad = rx.reference_fit(lr=0.002, hidden=8, epochs=6)
    assert good["test_accuracy"] >= 0.85, good
    assert rx.accuracy(good["model"], *rx.unseen_split()) >= 0.85
    assert bad["test_accuracy"] < 0.75
    # what an early-stopping scheduler sees after one epoch: the weak setting is clearly behind
    assert bad["val_accuracy"][0] < good["val_accuracy"][0] - 0.2
    # a linear model cannot separate the arms: the hidden layers are needed
    lin = torch.nn.Linear(2, 3)
    opt = torch.optim.Adam(lin.parameters(), lr=0.05)
    x, y = rx.make_splits()["train"]
    for epoch in range(6):
        rx.train_epoch(lin, opt, x, y, epoch=epoch)
    assert rx.accuracy(lin, *rx.make_splits()["test"]) < 0.7


def test_load_model_infers_width_and_accepts_a_ddp_state(tmp_path):
    model = rx.build_model(hidden=8, seed=1)
    ddp_style = {f"module.{k}": v for k, v in model.state_dict().items()}
    torch.save(ddp_style, tmp_path / rx.CHECKPOINT_FILE)
    loaded = rx.load_model(tmp_path)
    x = rx.unseen_split(n=50)[0]
    assert loaded[0].out_features == 8 and torch.equal(loaded(x), model(x))


def test_train_loop_without_data_dir_trains_on_the_seeds_splits_in_memory(tmp_path):
    """Lab 07's trials pass only lr and epochs: the loop then makes the splits of config's seed,
    the same points write_splits puts on disk (local mode: one process, no cluster)."""
    from raylab import local_mode

    torch.set_num_threads(1)
    in_memory = local_mode.fit(rx.train_loop_per_worker, {"lr": 0.05, "epochs": 2, "seed": 1})
    rx.write_splits(tmp_path, seed=1)
    on_disk = local_mode.fit(rx.train_loop_per_worker, {"lr": 0.05, "epochs": 2, "data_dir": str(tmp_path)})
    reference = rx.reference_fit(lr=0.05, epochs=2, splits=rx.make_splits(1))
    assert in_memory.metrics["val_accuracy"] == on_disk.metrics["val_accuracy"]
    assert in_memory.metrics["val_accuracy"] == pytest.approx(reference["val_accuracy"][-1], abs=1e-6)
    assert {"epoch", "loss", "val_accuracy"} <= set(in_memory.metrics)


@pytest.mark.slow
def test_rebuild_helpers_write_artifacts_that_load(train_cluster, tmp_path):
    result = rx.rebuild_trained_run(str(tmp_path / "train"), num_workers=2, epochs=3)
    assert result.error is None and result.checkpoint is not None
    assert os.path.isdir(result.path) and result.path.startswith(str(tmp_path))
    with result.checkpoint.as_directory() as folder:
        model = rx.load_model(folder)
    assert rx.accuracy(model, *rx.make_splits()["test"]) >= 0.75
    assert result.metrics["epoch"] == 2 and 0 <= result.metrics["val_accuracy"] <= 1

    grid = rx.rebuild_tune_results(str(tmp_path / "tune"), epochs=4)
    assert not grid.errors and len(grid) == 4
    assert os.path.isdir(grid.experiment_path)
    best = grid.get_best_result()
    assert best.checkpoint is not None and best.metrics["val_accuracy"] >= 0.8
    iterations = sorted(r.metrics["training_iteration"] for r in grid)
    assert iterations[0] < 4 == iterations[-1], "ASHA stops the weak trials early"
    with best.checkpoint.as_directory() as folder:
        assert rx.accuracy(rx.load_model(folder), *rx.make_splits()["val"]) == pytest.approx(
            best.metrics["val_accuracy"])
