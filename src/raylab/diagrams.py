"""Pictures drawn by code: the processes of a Ray Train run (lab 01).

:func:`train_run` draws who runs where in one ``TorchTrainer.fit()``: the driver (the notebook
or script), Ray Train's controller actor, one worker actor per ``num_workers`` joined by the
``torch.distributed`` process group, Ray's object store, and the storage folder that receives
reports and checkpoints. It returns the matplotlib figure and the labels it drew, so a test can
check the picture without looking at pixels.
"""
from __future__ import annotations


def train_run(num_workers: int = 2, *, ax=None):
    """Draw the processes of one Ray Train run; return ``(figure, labels drawn)``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.2, 6)
    ax.axis("off")
    labels = []

    def box(x, y, w, h, text, color):
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", fc=color, ec="0.3"))
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=9)
        labels.append(text)

    def arrow(x0, y0, x1, y1, text="", style="-|>"):
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=dict(arrowstyle=style, color="0.3"))
        if text:
            ax.text((x0 + x1) / 2 + 0.05, (y0 + y1) / 2, text, fontsize=8, color="0.25")
            labels.append(text)

    box(0.2, 4.6, 2.6, 1.0, "driver\n(your notebook: fit())", "#dbe9f6")
    box(3.8, 4.6, 2.6, 1.0, "TrainController\n(Ray actor)", "#fde6c8")
    box(7.2, 4.6, 2.6, 1.0, "storage_path/name\n(reports, checkpoints)", "#e4f2dc")
    arrow(2.8, 5.1, 3.8, 5.1, "")
    arrow(6.4, 5.1, 7.2, 5.1, "")  # the controller keeps its own record of the run there
    width = 9.4 / num_workers
    for rank in range(num_workers):
        x = 0.3 + rank * width
        box(x, 2.2, width - 0.4, 1.2,
            f"RayTrainWorker rank {rank}\n(Ray actor, 1 CPU)\nruns train_loop_per_worker", "#f3dcef")
        arrow(5.1, 4.6, x + (width - 0.4) / 2, 3.4)
        # each worker's ray.train.report copies its own checkpoint folder to storage
        arrow(x + (width - 0.4) * 0.75, 3.4, 8.5, 4.6,
              "report(): the worker uploads\nits checkpoint" if rank == num_workers - 1 else "", style="->")
    box(0.3, 1.0, 9.4, 0.6, "torch.distributed process group (gloo on CPU): DDP's gradient all-reduce",
        "#eeeeee")
    box(0.3, 0.0, 9.4, 0.6, "Ray object store: the pickled train function and config going in; "
        "small results coming back", "#fff7c2")
    ax.set_title(f"One TorchTrainer.fit() with ScalingConfig(num_workers={num_workers})", fontsize=10)
    return ax.figure, labels
