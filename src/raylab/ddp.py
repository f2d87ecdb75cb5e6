"""Look inside a data-parallel PyTorch run: what each rank saw, and whether the replicas agree.

Ray Train starts the workers and their ``torch.distributed`` process group; whether the data was
split, the gradients synchronised and the evaluation complete is for the training code to get
right and for you to check. These helpers make the checks short:

- :func:`make_datasets` builds the small regression task lab 01 trains on (exact sizes, rows
  ``(index, x, y)`` so a rank can record which samples it saw);
- :func:`gather` collects one Python object from every rank (inside a Train worker);
- :func:`weights` turns a (possibly DDP-wrapped) model's parameters into plain lists;
- :func:`sampler_orders` shows what ``DistributedSampler`` hands each rank, with or without
  ``set_epoch``, without starting anything;
- :func:`linear_mse` recomputes a linear model's loss on the driver;
- :func:`train_blobs_mlp` trains lab 04's MLP on the blobs data with DDP inside a Train worker
  (the tests that compare DDP with one process use it).

Running a learner's training function for a test cell and judging what it returned is
:mod:`raylab.checks.ddp_runs`.
"""
from __future__ import annotations

def make_datasets(config: dict):
    """``(train, val)`` of the lab's regression task, ``config["n_train"]`` / ``config["n_val"]`` rows.

    Rows are ``(index, x, y)`` with ``x`` of 8 features; the split is deterministic given
    ``config["seed"]`` (default 0), so every rank and the driver build the same sets.
    """
    import torch
    from torch.utils.data import random_split

    from raylab.data import regression

    n_train, n_val = int(config["n_train"]), int(config["n_val"])
    seed = int(config.get("seed", 0))
    full = regression(n=n_train + n_val, d=8, seed=seed, noise=0.1)
    return tuple(random_split(full, [n_train, n_val], generator=torch.Generator().manual_seed(seed)))


def gather(obj) -> list:
    """Every rank's ``obj`` as a list in rank order (call it on every rank: it is a collective).

    Uses ``torch.distributed.all_gather_object`` on the process group Ray Train set up; without a
    process group (one worker, local mode) it returns ``[obj]``.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return [obj]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def weights(model) -> dict:
    """``{parameter name: nested list}`` of a model, unwrapped from DDP if needed."""
    module = getattr(model, "module", model)
    return {name: tensor.detach().cpu().tolist() for name, tensor in module.state_dict().items()}


def linear_mse(model_weights: dict, dataset) -> float:
    """Mean squared error of a linear model (``weight``, ``bias``) over every row of ``dataset``."""
    import torch

    w = torch.tensor(model_weights["weight"], dtype=torch.float64)
    b = torch.tensor(model_weights["bias"], dtype=torch.float64)
    x = torch.stack([dataset[i][1] for i in range(len(dataset))]).double()
    y = torch.stack([dataset[i][2] for i in range(len(dataset))]).double()
    return float(((x @ w.T + b - y) ** 2).mean())


def sampler_orders(n: int, world_size: int, epochs: int, *, set_epoch: bool = True,
                   shuffle: bool = True, seed: int = 0) -> list:
    """``orders[rank][epoch]``: the dataset positions ``DistributedSampler`` gives each rank.

    This is the sampler ``prepare_data_loader`` installs with more than one worker. Nothing is
    started: the sampler only needs to be told its rank and the world size.
    """
    from torch.utils.data.distributed import DistributedSampler

    orders = []
    for rank in range(world_size):
        sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank,
                                     shuffle=shuffle, seed=seed)
        per_epoch = []
        for epoch in range(epochs):
            if set_epoch:
                sampler.set_epoch(epoch)
            per_epoch.append([int(i) for i in sampler])
        orders.append(per_epoch)
    return orders


def train_blobs_mlp(config: dict, *, batchnorm: bool = False):
    """Inside a Train worker: the MLP of lab 04 (``raylab.models.mlp``) trained with DDP on
    ``raylab.data.blobs`` by SGD, the global batch split across the ranks, ``set_epoch`` every
    epoch. ``config``: ``seed``, ``samples``, ``global_batch``, ``lr``, ``epochs``. Returns the
    DDP-wrapped model."""
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader

    import ray.train
    import ray.train.torch
    import raylab.data
    import raylab.models

    world = ray.train.get_context().get_world_size()
    model = ray.train.torch.prepare_model(raylab.models.mlp(seed=config["seed"], batchnorm=batchnorm))
    loader = ray.train.torch.prepare_data_loader(DataLoader(
        raylab.data.blobs(n=config["samples"]), batch_size=config["global_batch"] // world, shuffle=True))
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        loader.sampler.set_epoch(epoch)
        for _, x, y in loader:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    return model


def reports_with_a_fake_clock(train_fn, config: dict, *, epoch_seconds=(0.75, 0.5)) -> dict:
    """Run ``train_fn`` once in this process as the only worker of a Train run (Ray Train's local
    mode, ``ScalingConfig(num_workers=0)``, with a gloo process group of one, so collectives such
    as ``all_gather_object`` work) while ``time.perf_counter`` is a clock that moves only inside
    ``raylab.running_example.train_epoch``: by ``epoch_seconds[k]`` in its k-th call.

    A loop that times each epoch's ``train_epoch`` call then measures exactly ``epoch_seconds``;
    a clock started once for the whole run, or a record kept from an earlier epoch, measures
    something else. Returns ``{"reports": [metrics of every ray.train.report, in order],
    "error": None or what the run raised}``.
    """
    import time

    import ray.train

    import raylab.running_example as rex
    from raylab import local_mode

    now = [1000.0]
    calls = [0]
    reports = []
    real = {"perf_counter": time.perf_counter, "train_epoch": rex.train_epoch, "report": ray.train.report}

    def fake_clock():
        return now[0]

    def timed_train_epoch(*args, **kwargs):
        out = real["train_epoch"](*args, **kwargs)
        now[0] += epoch_seconds[min(calls[0], len(epoch_seconds) - 1)]
        calls[0] += 1
        return out

    def recording_report(metrics, *args, **kwargs):
        reports.append(dict(metrics))
        return real["report"](metrics, *args, **kwargs)

    names = getattr(train_fn, "__globals__", {})
    bound = {name for name, value in names.items() if value is real["perf_counter"]}
    error = None
    time.perf_counter = fake_clock
    for name in bound:
        names[name] = fake_clock
    rex.train_epoch, ray.train.report = timed_train_epoch, recording_report
    try:
        local_mode.fit(train_fn, dict(config))
    except Exception as exc:  # noqa: BLE001 - reported to the check, which says what it means
        error = f"{type(exc).__name__}: {str(exc).strip()[-300:]}"
    finally:
        time.perf_counter = real["perf_counter"]
        for name in bound:
            names[name] = real["perf_counter"]
        rex.train_epoch, ray.train.report = real["train_epoch"], real["report"]
    return {"reports": reports, "error": error}
