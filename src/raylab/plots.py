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


def train_run_diagram(num_workers: int = 2, *, backend: str = "gloo", storage_path: str = "storage_path",
                      ax=None):
    """The processes of one Ray Train V2 run and what flows between them.

    Your driver (the notebook) calls ``fit()``; Ray starts a controller actor, which reserves one
    placement-group bundle per worker and starts the worker actors; the workers form a
    ``torch.distributed`` process group (``backend``) for gradients; ``train.report`` goes from
    every worker to the controller (the barrier), checkpoints go to ``storage_path``, and objects
    handed between processes travel through each node's shared-memory object store. Draw it
    with the numbers of a run you made (``num_workers``, the backend it used).
    """
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.2))
    shown = min(num_workers, 4)
    width = max(8.0, 2.2 * shown + 3.4)
    ax.set_xlim(0, width)
    ax.set_ylim(0, 6)
    ax.axis("off")

    def box(x, y, w, h, text, colour):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", fc=colour, ec="black", lw=1))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=8.5)
        return (x + w / 2, y, y + h)

    def arrow(a, b, text="", both=False):
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle="<|-|>" if both else "-|>", mutation_scale=10, lw=1))
        if text:
            ax.text((a[0] + b[0]) / 2 + 0.08, (a[1] + b[1]) / 2, text, fontsize=7.5, va="center")

    driver = box(0.3, 4.7, 3.0, 0.9, "driver: your notebook\nTorchTrainer(...).fit() -> Result", "#dbe9f6")
    controller = box(0.3, 2.9, 3.0, 0.9, "controller actor\n(schedules, retries, collects reports)", "#fde9c9")
    store = box(width - 2.9, 4.7, 2.6, 0.9, f"storage\n{storage_path}", "#e4f2e4")
    objects = box(width - 2.9, 0.5, 2.6, 0.9, "object store\n(shared memory, per node)", "#eeeeee")
    arrow((driver[0], driver[1]), (controller[0], controller[2]), "starts; Result back", both=True)
    xs = [0.3 + i * 2.2 for i in range(shown)]
    workers = []
    for i, x in enumerate(xs):
        label = f"worker rank {i}" if i < shown - 1 or shown == num_workers else f"... rank {num_workers - 1}"
        workers.append(box(x, 0.5, 1.9, 0.9, f"{label}\ntrain_loop_per_worker", "#f3dcef"))
        arrow((controller[0], controller[1]), (x + 0.95, 1.45), "report()" if i == 0 else "", both=True)
    if shown > 1:
        ax.plot([xs[0] + 0.95, xs[-1] + 0.95], [0.25, 0.25], color="purple", lw=2)
        ax.text(xs[0] + 0.95, 0.05, f"process group ({backend}): gradient all-reduce", fontsize=7.5, color="purple")
    arrow((xs[-1] + 1.5, 1.45), (store[0], store[1]), "checkpoints\n(rank 0 or all)")
    ax.add_patch(FancyArrowPatch((xs[-1] + 1.95, 0.95), (width - 2.95, 0.95), arrowstyle="<|-|>",
                                 mutation_scale=8, lw=0.8, ls="--", color="grey"))
    ax.set_title(f"One Ray Train run: {num_workers} worker(s), one placement-group bundle each", fontsize=10)
    return ax
