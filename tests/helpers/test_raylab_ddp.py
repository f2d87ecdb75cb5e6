"""Unit tests of raylab.ddp and raylab.capacity (the helpers labs 01 and 02 use)."""
import pytest

import raylab.capacity
import raylab.checks.ddp_runs
import raylab.ddp
from raylab.checks.common import CheckFailed


def _indices(subset):
    return [int(subset[i][0]) for i in range(len(subset))]


def test_make_datasets_sizes_determinism_and_disjoint_indices():
    train, val = raylab.ddp.make_datasets({"n_train": 200, "n_val": 51, "seed": 0})
    assert (len(train), len(val)) == (200, 51)
    tr, va = _indices(train), _indices(val)
    assert set(tr).isdisjoint(va) and set(tr) | set(va) == set(range(251))
    again, _ = raylab.ddp.make_datasets({"n_train": 200, "n_val": 51, "seed": 0})
    assert _indices(again) == tr
    other, _ = raylab.ddp.make_datasets({"n_train": 200, "n_val": 51, "seed": 1})
    assert _indices(other) != tr
    idx, x, y = train[0]
    assert tuple(x.shape) == (8,) and tuple(y.shape) == (1,)


def test_gather_without_a_process_group_is_a_one_element_list():
    assert raylab.ddp.gather({"rank": 0}) == [{"rank": 0}]


def test_weights_unwraps_a_wrapped_model_and_linear_mse_matches_torch():
    import torch

    import raylab.models

    model = raylab.models.linear(8, 1, seed=3)

    class Wrapper(torch.nn.Module):  # stands in for DistributedDataParallel's .module
        def __init__(self, module):
            super().__init__()
            self.module = module

    w = raylab.ddp.weights(Wrapper(model))
    assert set(w) == {"weight", "bias"} and len(w["weight"][0]) == 8
    _, val = raylab.ddp.make_datasets({"n_train": 20, "n_val": 10, "seed": 0})
    x = torch.stack([val[i][1] for i in range(len(val))])
    y = torch.stack([val[i][2] for i in range(len(val))])
    with torch.no_grad():
        expected = float(torch.nn.functional.mse_loss(model(x), y))
    assert raylab.ddp.linear_mse(w, val) == pytest.approx(expected, rel=1e-5)


def test_sampler_orders_shard_disjointly_and_set_epoch_reshuffles():
    orders = raylab.ddp.sampler_orders(20, 2, 2, set_epoch=True)
    for epoch in range(2):
        a, b = orders[0][epoch], orders[1][epoch]
        assert len(a) == len(b) == 10 and set(a).isdisjoint(b) and set(a) | set(b) == set(range(20))
    assert orders[0][0] != orders[0][1]
    frozen = raylab.ddp.sampler_orders(20, 2, 2, set_epoch=False)
    assert frozen[0][0] == frozen[0][1] and frozen[1][0] == frozen[1][1]
    assert frozen[0][0] == orders[0][0]  # epoch 0 is the same either way


def test_sampler_orders_pad_an_uneven_dataset_with_repeats():
    orders = raylab.ddp.sampler_orders(51, 2, 1, shuffle=False)
    a, b = orders[0][0], orders[1][0]
    assert len(a) == len(b) == 26
    assert len(a) + len(b) == 52 and len(set(a) | set(b)) == 51  # one sample twice


def test_check_per_rank_list():
    good = [{"rank": 0}, {"rank": 1}]
    assert raylab.checks.ddp_runs.check_per_rank_list(good, 2) is good
    for bad in (None, {"rank": 0}, [{"rank": 0}], [{"rank": 0}, None]):
        with pytest.raises(CheckFailed, match="one diagnostics dict per rank"):
            raylab.checks.ddp_runs.check_per_rank_list(bad, 2)


def test_capacity_rejects_unknown_strategies_before_starting_anything():
    with pytest.raises(ValueError, match="unknown strategy"):
        raylab.capacity.simulate_placements([{"CPU": 2}], [
            {"num_workers": 1, "per_worker": {"CPU": 1}, "strategy": "SOMEWHERE"}])
    assert raylab.capacity.describe(
        {"num_workers": 3, "per_worker": {"CPU": 1}, "strategy": "STRICT_PACK"}) == \
        "3 x {'CPU': 1} STRICT_PACK"


@pytest.mark.slow
def test_fit_and_collect_turns_a_worker_error_into_a_check_failure(tmp_path):
    import raylab

    def broken(config):
        import ray.train

        if ray.train.get_context().get_world_rank() == 1:
            raise ValueError("rank one is broken on purpose")
        return raylab.ddp.gather({"ok": True})

    raylab.start_cluster(quiet=True)
    try:
        with pytest.raises(CheckFailed, match="rank 1: .*rank one is broken on purpose"):
            raylab.checks.ddp_runs.fit_and_collect(broken, {}, storage_path=str(tmp_path), timeout_s=30)
    finally:
        assert raylab.stop_cluster() == []
