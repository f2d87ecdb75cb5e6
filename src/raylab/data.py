"""Tiny deterministic datasets the labs train on (made in code: nothing is downloaded)."""
from __future__ import annotations


def regression(n: int = 256, d: int = 8, seed: int = 0, noise: float = 0.0):
    """A linear-regression TensorDataset of ``(index, x, y)`` rows with ``y = x @ [0..d-1] + noise``.

    The index column lets a lab check which samples each rank saw.
    """
    import torch
    from torch.utils.data import TensorDataset

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.arange(float(d)).unsqueeze(1)
    y = x @ w + noise * torch.randn(n, 1, generator=g)
    return TensorDataset(torch.arange(n), x, y)


def blobs(n: int = 512, d: int = 2, classes: int = 3, seed: int = 0, spread: float = 0.6):
    """A classification TensorDataset of ``(index, x, label)``: Gaussian blobs around fixed centres."""
    import torch
    from torch.utils.data import TensorDataset

    g = torch.Generator().manual_seed(seed)
    centres = 3.0 * torch.randn(classes, d, generator=g)
    labels = torch.arange(n) % classes
    x = centres[labels] + spread * torch.randn(n, d, generator=g)
    return TensorDataset(torch.arange(n), x, labels)


def split(dataset, val_fraction: float = 0.25, seed: int = 0):
    """Deterministic train/validation split of a dataset."""
    import torch
    from torch.utils.data import random_split

    n_val = int(len(dataset) * val_fraction)
    g = torch.Generator().manual_seed(seed)
    return random_split(dataset, [len(dataset) - n_val, n_val], generator=g)
