"""The course's running example: one small dataset and model the learner carries from lab to lab.

**What it is.** Three interleaved spiral arms in the plane (2 features, 3 classes), drawn by code
from a seed, and a two-hidden-layer MLP. A linear model cannot separate the arms, a good MLP
reaches about 90 % held-out accuracy in 6 epochs, and a bad learning rate or a tiny hidden layer
stays far below: the two hyperparameters matter, which is what a tuning lab needs. One epoch over
the 2000 training points takes well under a second on one core, so a Train run's time is Ray's
start-up, not maths.

**Why made in code.** No download can fail in a classroom, every learner gets the same numbers,
and a test can make a split the learner's code never saw (another seed) to check a checkpoint.

**Why ``.npz`` files.** :func:`write_splits` writes each split as ``x`` (float32, shape ``(n, 2)``)
and ``y`` (int64, shape ``(n,)``) so a plain script (the capstone, a RayJob entrypoint) loads them
with numpy alone, without this package.

**Where the labs use it** (docs/authoring.md has every exercise):

| lab | what the running example becomes |
|---|---|
| 01 Train V2 | the learner's first driver and worker loop: a 2-worker ``TorchTrainer``, ``Result`` read back, compared with :func:`reference_fit` |
| 02 scaling | an elastic ``ScalingConfig`` with per-worker resources; the footprint Ray reserved, read from the placement group inside the run |
| 03 checkpoints, 05 failures | ``raylab.ckpt``'s job (below): made resumable, then recovered from a crash by ``FailureConfig`` |
| 04 DDP | device and backend chosen in code from the cluster's resources; 2 workers against :func:`reference_fit`; :func:`dataset` through ``DistributedSampler`` matched step for step by one process; a mixed-precision step; 1 and 2 workers timed for a speed-up table |
| 06 Tune | ``lr`` x ``hidden`` with an early-stopping scheduler on in-process trials; ``Tuner.restore`` of an interrupted experiment |
| 07 Train + Tune | the learner's own worker loop (:func:`make_splits`, :func:`build_model`) in a Train run inside every Tune trial, ``lr`` searched |
| 09 capstone | a plain script with no ``raylab``: train on 2 workers inside Tune trials, evaluate the best checkpoint |

Labs 03 and 05 train it as ``raylab.ckpt``'s job: the same MLP with a dropout layer, on a 64-point
slice of the training split, with state in five places (weights, optimizer, warm-up scheduler,
random generator, data position) that a resume must all restore; lab 03's second exercise counts
the classifier's correct points on unequal shards of the validation split for a global accuracy.
:func:`rebuild_trained_run` and :func:`rebuild_tune_results` rebuild what lab 01 and lab 06
produce, for a lab started on its own.

Checkpoints of the running example are folders holding :data:`CHECKPOINT_FILE`, the
``state_dict()`` of :func:`build_model`'s module (not of the DDP wrapper); :func:`load_model`
accepts both, because a right answer may save either.
"""
from __future__ import annotations

import math
import os
import tempfile

FEATURES = 2
CLASSES = 3
SIZES = {"train": 2000, "val": 500, "test": 500}
NOISE = 0.08
CHECKPOINT_FILE = "model.pt"
# Each split gets its own stream of random numbers: seed*10 + offset keeps splits of one seed
# apart and lets a test draw a fresh held-out split with an offset no lab uses.
_SPLIT_OFFSET = {"train": 1, "val": 2, "test": 3}
UNSEEN_OFFSET = 7


def make_split(n: int, seed: int, noise: float = NOISE):
    """``n`` points of the three spirals as tensors ``(x, y)``; the same seed gives the same points."""
    import torch

    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, CLASSES, (n,), generator=g)
    radius = torch.rand(n, generator=g).sqrt()  # sqrt: points spread evenly over the disc's area
    angle = 2 * math.pi * (radius + y.float() / CLASSES)  # one turn per arm, arms a third apart
    x = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    return x + noise * torch.randn(n, FEATURES, generator=g), y


def make_splits(seed: int = 0, sizes: dict | None = None) -> dict:
    """``{"train": (x, y), "val": ..., "test": ...}``, deterministic for a seed."""
    sizes = {**SIZES, **(sizes or {})}
    return {name: make_split(sizes[name], 10 * seed + _SPLIT_OFFSET[name]) for name in SIZES}


def unseen_split(n: int = 1000, seed: int = 0):
    """A held-out split that :func:`make_splits` never produces (for graders and tests)."""
    return make_split(n, 10 * seed + UNSEEN_OFFSET)


def dataset(n: int = 512, seed: int = 0):
    """``n`` spiral points as a ``TensorDataset`` of rows ``(index, x, label)``, for a
    ``DataLoader`` (lab 04 shards it with ``DistributedSampler``); the same seed gives the same rows."""
    import torch
    from torch.utils.data import TensorDataset

    x, y = make_split(n, 10 * seed + _SPLIT_OFFSET["train"])
    return TensorDataset(torch.arange(n), x, y)


def write_splits(folder, seed: int = 0, sizes: dict | None = None) -> dict:
    """Write ``train.npz``, ``val.npz``, ``test.npz`` (arrays ``x`` float32, ``y`` int64) into
    ``folder``; return ``{split: absolute path}``."""
    import numpy as np

    os.makedirs(folder, exist_ok=True)
    paths = {}
    for name, (x, y) in make_splits(seed, sizes).items():
        paths[name] = os.path.abspath(os.path.join(folder, f"{name}.npz"))
        np.savez(paths[name], x=x.numpy().astype("float32"), y=y.numpy().astype("int64"))
    return paths


def load_split(path):
    """``(x, y)`` tensors from a file :func:`write_splits` wrote."""
    import numpy as np
    import torch

    with np.load(path) as f:
        return torch.from_numpy(f["x"]), torch.from_numpy(f["y"])


def build_model(hidden: int = 64, seed: int = 0, dropout: float = 0.0):
    """The running example's model: 2 -> hidden -> hidden -> 3 with ReLUs, seeded. ``dropout`` > 0
    adds a dropout layer after the first ReLU (``raylab.ckpt``'s job: the random draws become part
    of the training state); it has no weights, so the initial weights do not change."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    first = [nn.Linear(FEATURES, hidden), nn.ReLU()] + ([nn.Dropout(dropout)] if dropout else [])
    return nn.Sequential(*first, nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))


def load_model(state_or_folder):
    """A model rebuilt from a ``state_dict`` (or a checkpoint folder holding :data:`CHECKPOINT_FILE`).

    The hidden width is read from the weights, and a ``module.`` prefix (a DDP model's state) is
    dropped, so any checkpoint of the running example loads whichever width was tuned.
    """
    import torch

    state = state_or_folder
    if isinstance(state_or_folder, (str, os.PathLike)):
        state = torch.load(os.path.join(state_or_folder, CHECKPOINT_FILE), map_location="cpu",
                           weights_only=True)
    state = {k.removeprefix("module."): v for k, v in state.items()}
    model = build_model(hidden=state["0.weight"].shape[0])
    model.load_state_dict(state)
    return model.eval()


def accuracy(model, x, y) -> float:
    """Share of points whose predicted class is right."""
    import torch

    with torch.no_grad():
        return float((model(x).argmax(dim=1) == y).float().mean())


def train_epoch(model, optimizer, x, y, *, epoch: int, batch_size: int = 32, seed: int = 0) -> float:
    """One pass over ``(x, y)`` in a shuffled order fixed by ``(seed, epoch)``; returns the mean loss."""
    import torch

    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(1000 * seed + epoch))
    total = 0.0
    model.train()
    for start in range(0, len(x), batch_size):
        idx = order[start:start + batch_size]
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += float(loss.detach()) * len(idx)
    model.eval()
    return total / len(x)


def reference_fit(lr: float = 0.05, hidden: int = 64, epochs: int = 6, seed: int = 0,
                  splits: dict | None = None) -> dict:
    """The single-process PyTorch run every Ray version is compared with.

    Adam, batch 32, one validation accuracy per epoch. Returns ``{"model", "val_accuracy": [...],
    "test_accuracy"}``.
    """
    import torch

    splits = splits or make_splits(seed)
    (x, y), (xv, yv), (xt, yt) = splits["train"], splits["val"], splits["test"]
    model = build_model(hidden, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for epoch in range(epochs):
        train_epoch(model, optimizer, x, y, epoch=epoch, seed=seed)
        history.append(accuracy(model, xv, yv))
    return {"model": model, "val_accuracy": history, "test_accuracy": accuracy(model, xt, yt)}


# --- the Ray Train loop of the running example ----------------------------------------------------

def train_loop_per_worker(config: dict) -> None:
    """What each Ray Train worker runs: its slice of the training split, DDP, one report per epoch.

    ``config``: ``data_dir`` (from :func:`write_splits`), ``lr``, ``hidden``, ``epochs``. Without
    ``data_dir`` the splits of ``config["seed"]`` (default 0) are made in memory: the same points
    :func:`write_splits` would write. Every rank reports ``loss`` (its share's training loss) and
    ``val_accuracy`` on the whole validation split; rank 0 adds a checkpoint folder with
    :data:`CHECKPOINT_FILE`.
    """
    import torch

    import ray.train
    from ray.train.torch import prepare_model

    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    if "data_dir" in config:
        x, y = load_split(os.path.join(config["data_dir"], "train.npz"))
        xv, yv = load_split(os.path.join(config["data_dir"], "val.npz"))
    else:
        splits = make_splits(config.get("seed", 0))
        (x, y), (xv, yv) = splits["train"], splits["val"]
    x, y = x[rank::world], y[rank::world]  # each rank its own half; DDP averages the gradients
    model = prepare_model(build_model(config.get("hidden", 64)))
    optimizer = torch.optim.Adam(model.parameters(), lr=config.get("lr", 0.05))
    for epoch in range(config.get("epochs", 6)):
        loss = train_epoch(model, optimizer, x, y, epoch=epoch)
        metrics = {"epoch": epoch, "loss": loss, "val_accuracy": accuracy(model, xv, yv)}
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = None
            if rank == 0:
                torch.save(getattr(model, "module", model).state_dict(), os.path.join(folder, CHECKPOINT_FILE))
                checkpoint = ray.train.Checkpoint.from_directory(folder)
            ray.train.report(metrics, checkpoint=checkpoint)


# --- rebuild what an earlier lab produced (so every lab after 00 stands alone) -------------------

def rebuild_trained_run(storage_path: str, *, name: str = "running-example", num_workers: int = 1,
                        epochs: int = 4, data_dir: str | None = None):
    """A finished Ray Train run of the running example, written by Ray Train itself.

    Needs the lab's cluster (``raylab.setup``). Returns the ``Result``: ``result.checkpoint`` is a
    folder with :data:`CHECKPOINT_FILE`, ``result.path`` the run folder under ``storage_path``.
    Takes Ray's start-up time for one Train run (seconds on 2 cores).
    """
    import ray.train
    from ray.train.torch import TorchTrainer

    data_dir = data_dir or os.path.join(storage_path, "data")
    write_splits(data_dir)
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config={"data_dir": data_dir, "epochs": epochs, "lr": 0.05, "hidden": 64},
        scaling_config=ray.train.ScalingConfig(num_workers=num_workers),
        run_config=ray.train.RunConfig(name=name, storage_path=storage_path),
    )
    return trainer.fit()


def _tune_trial(config: dict) -> None:
    """A Tune trial that trains the running example in its own process (no Train run inside)."""
    import torch

    from ray import tune

    splits = make_splits(config.get("seed", 0))
    (x, y), (xv, yv) = splits["train"], splits["val"]
    model = build_model(config["hidden"])
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        train_epoch(model, optimizer, x, y, epoch=epoch)
        with tempfile.TemporaryDirectory() as folder:
            torch.save(model.state_dict(), os.path.join(folder, CHECKPOINT_FILE))
            tune.report({"epoch": epoch, "val_accuracy": accuracy(model, xv, yv)},
                        checkpoint=tune.Checkpoint.from_directory(folder))


def rebuild_tune_results(storage_path: str, *, name: str = "running-example-tune", epochs: int = 4):
    """A small finished Tune experiment of the running example (lr x hidden, 4 trials, ASHA).

    Needs the lab's cluster. Returns the ``ResultGrid``; the experiment folder is
    ``<storage_path>/<name>`` (``ResultGrid.experiment_path``), ready for reading or
    ``Tuner.restore``. Trials train in-process, so this takes seconds.
    """
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    tuner = tune.Tuner(
        _tune_trial,
        param_space={"lr": tune.grid_search([0.05, 0.002]), "hidden": tune.grid_search([64, 8]),
                     "epochs": epochs},
        tune_config=tune.TuneConfig(metric="val_accuracy", mode="max", max_concurrent_trials=1,
                                    scheduler=ASHAScheduler(max_t=epochs, grace_period=1)),
        run_config=tune.RunConfig(name=name, storage_path=storage_path, verbose=0),
    )
    return tuner.fit()
