"""Labelled matplotlib figures the labs show instead of tables of numbers."""
from __future__ import annotations


def _plt():
    import matplotlib

    if matplotlib.get_backend().lower() == "agg" or not _in_notebook():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        return get_ipython() is not None
    except ImportError:
        return False


def curves(series: dict, *, title: str, xlabel: str, ylabel: str, ax=None, marker: str = "o"):
    """One line per key of ``series`` (``{label: [(x, y), ...]}`` or ``{label: [y, ...]}``)."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    for label, points in series.items():
        points = list(points)
        if points and not isinstance(points[0], (tuple, list)):
            points = list(enumerate(points))
        xs, ys = zip(*points) if points else ((), ())
        ax.plot(xs, ys, marker=marker, label=str(label))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if series:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return ax


def bars(values: dict, *, title: str, xlabel: str, ylabel: str, ax=None):
    """A labelled bar chart of ``{label: value}``."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    labels = [str(k) for k in values]
    ax.bar(labels, list(values.values()))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return ax


def stacked_bars(parts: dict, *, title: str, xlabel: str, ylabel: str, ax=None, limit: float | None = None,
                 limit_label: str = "limit"):
    """Horizontal stacked bars, one colour per segment: ``{segment: {bar label: value}}``.

    Bars follow the order of the first segment's keys, top to bottom; a segment that lacks a bar
    adds 0 to it. ``limit`` draws a dashed vertical line (a capacity, say) labelled ``limit_label``.
    ``xlabel`` names the value axis, ``ylabel`` the bars.
    """
    plt = _plt()
    labels = []
    for values in parts.values():
        labels += [str(k) for k in values if str(k) not in labels]
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 1.2 + 0.55 * max(len(labels), 1)))
    left = [0.0] * len(labels)
    for segment, values in parts.items():
        widths = [0.0] * len(labels)
        for key, value in values.items():
            widths[labels.index(str(key))] = float(value)
        ax.barh(labels, widths, left=left, label=str(segment))
        left = [a + b for a, b in zip(left, widths)]
    if limit is not None:
        ax.axvline(limit, color="black", linestyle="--", linewidth=1.2, label=limit_label)
    if labels:
        ax.invert_yaxis()  # the first bar on top, as in the dictionary
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if parts or limit is not None:
        ax.legend(fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    return ax

