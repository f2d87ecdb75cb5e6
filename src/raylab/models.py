"""Tiny models: small enough that a 2-worker DDP run spends its time in Ray, not in maths."""
from __future__ import annotations


def linear(d_in: int = 8, d_out: int = 1, seed: int = 0):
    """``nn.Linear`` with a seeded initialisation."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Linear(d_in, d_out)


def mlp(d_in: int = 2, hidden: int = 32, d_out: int = 3, seed: int = 0, batchnorm: bool = False):
    """A two-layer MLP with a seeded initialisation.

    ``batchnorm=True`` puts a ``BatchNorm1d`` after the first layer: the same weights (BatchNorm's
    own start is fixed), but a forward pass in training mode then depends on the whole batch, which
    is what breaks "W workers = one process" in lab 04.
    """
    import torch
    from torch import nn

    torch.manual_seed(seed)
    first, last = nn.Linear(d_in, hidden), nn.Linear(hidden, d_out)
    if batchnorm:
        return nn.Sequential(first, nn.BatchNorm1d(hidden), nn.ReLU(), last)
    return nn.Sequential(first, nn.ReLU(), last)


def param_checksum(model) -> float:
    """Sum of all parameters: equal on every rank exactly when DDP kept the replicas in sync."""
    module = getattr(model, "module", model)
    return float(sum(p.detach().double().sum() for p in module.parameters()))
