"""The running example as a training job whose state lives in five places (labs 03 and 05).

:func:`build` returns a :class:`Job` that trains the course's spiral classifier
(``raylab.running_example``: 2 features, 3 classes, a 2 -> hidden -> hidden -> 3 MLP) on the first
``n`` points of its training split, with

- a dropout layer added to the model (so the random-number generator is part of the state),
- SGD with momentum (the optimizer keeps a buffer per parameter),
- a warm-up learning-rate scheduler (it counts the steps it has taken),
- a :class:`BatchCursor` (where the data stream is: epoch and offset),

and :meth:`Job.train_step` runs one step (lab 05; in lab 03 learners write the step themselves,
drawing each batch from ``job.cursor``). Everything is deterministic given ``config["seed"]``:
a run that is interrupted and resumed with its *complete* state ends exactly where an
uninterrupted run ends, and leaving out any one piece changes the result.

Fault injection: with ``config["fail_at_step"] = k`` (or a list of steps) and a
``config["fail_marker"]`` path prefix, the job's cursor raises :class:`InjectedFailure` the first
time it is asked for batch ``k`` (step ``k``'s batch), before it moves, creating the file
``<fail_marker>.step<k>`` first so a retried attempt gets past it (one machine, as in the labs;
without a marker every attempt fails). A loop that draws its batches from the cursor cannot miss
it, whoever wrote the step. ``config["trace"]``: every step appends ``pid step loss`` to that
file; ``config["batch_log"]``: the cursor appends ``pid batch`` for every batch it hands out.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field

from raylab.i18n import _

DEFAULTS = {
    "seed": 0, "steps": 8, "lr": 0.05, "momentum": 0.9, "warmup": 6, "warmup_start": 0.2,
    "batch_size": 16, "n": 64,  # 4 batches an epoch: a job of a few steps crosses an epoch boundary
    "hidden": 16, "dropout": 0.25,
}

STATE_FILE = "state.pt"
STATE_KEYS = ("model", "optimizer", "scheduler", "rng", "cursor", "step")
NOT_IN_REFERENCE = ("fail_at_step", "trace", "batch_log")  # the in-process references skip these


class InjectedFailure(RuntimeError):
    """The failure a lab injects on purpose (a stand-in for a crashed process or a lost node)."""


def settings(config: dict | None = None) -> dict:
    """``DEFAULTS`` overridden by the keys of ``config`` (unknown keys are kept too)."""
    merged = dict(DEFAULTS)
    merged.update(config or {})
    return merged


class BatchCursor:
    """Position in a shuffled data stream: ``epoch`` and ``offset`` within that epoch.

    Each epoch visits the samples in an order drawn from its own generator seeded with
    ``(seed, epoch)``, so the position alone (two integers) says which batch comes next. It does
    not touch PyTorch's global random-number generator.
    """

    def __init__(self, n: int, batch_size: int, seed: int = 0):
        if not 0 < batch_size <= n:
            raise ValueError(_("batch_size must be in 1..{n}, got {batch_size}").format(n=n, batch_size=batch_size))
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self.epoch, self.offset = 0, 0
        self.on_batch = None  # called with `position` before each batch (the job's fault injection)

    @property
    def position(self) -> int:
        """How many batches the stream has handed out: the number of the next one."""
        return self.epoch * (self.n // self.batch_size) + self.offset // self.batch_size

    def _order(self, epoch: int):
        import torch

        g = torch.Generator().manual_seed(10_007 * self.seed + epoch)
        return torch.randperm(self.n, generator=g)

    def next_indices(self):
        """Indices of the next batch; moves the cursor (a new epoch starts when one is used up)."""
        if self.on_batch is not None:
            self.on_batch(self.position)
        if self.offset + self.batch_size > self.n:
            self.epoch, self.offset = self.epoch + 1, 0
        idx = self._order(self.epoch)[self.offset:self.offset + self.batch_size]
        self.offset += self.batch_size
        return idx

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "offset": self.offset}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.offset = int(state["epoch"]), int(state["offset"])


@dataclass
class Job:
    """Model, optimizer, scheduler, data cursor and data of one training job."""

    model: object
    optimizer: object
    scheduler: object
    cursor: BatchCursor
    x: object
    y: object
    config: dict = field(default_factory=dict)

    def __post_init__(self):
        self.cursor.on_batch = self._on_batch

    def train_step(self, step: int) -> float:
        """Run training step ``step`` (0-based) and return its loss."""
        import torch

        idx = self.cursor.next_indices()  # raises here when a failure is planned for this batch
        self.model.train()
        loss = torch.nn.functional.cross_entropy(self.model(self.x[idx]), self.y[idx])
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        value = float(loss.detach())
        trace = self.config.get("trace")
        if trace:
            with open(trace, "a") as f:
                f.write(f"{os.getpid()} {step} {value!r}\n")
        return value

    def _on_batch(self, batch: int) -> None:
        self._maybe_fail(batch)
        log = self.config.get("batch_log")
        if log:
            with open(log, "a") as f:
                f.write(f"{os.getpid()} {batch}\n")

    def _maybe_fail(self, step: int) -> None:
        at = self.config.get("fail_at_step")
        if at is None or step not in fail_steps(at):
            return
        marker = self.config.get("fail_marker")
        if marker:
            done = f"{marker}.step{step}"
            if os.path.exists(done):
                return
            with open(done, "w") as f:
                f.write(f"failed once at step {step} in pid {os.getpid()}\n")
        raise InjectedFailure(_("injected failure at step {step} (pid {pid})").format(step=step, pid=os.getpid()))


def fail_steps(at) -> list[int]:
    """``config["fail_at_step"]`` as a list: one step or several."""
    return [int(s) for s in (at if isinstance(at, (list, tuple)) else [at])]


def build(config: dict | None = None) -> Job:
    """A fresh job: seeds PyTorch's global generator, then builds model, optimizer and scheduler."""
    import torch

    from raylab import running_example

    cfg = settings(config)
    x, y = running_example.make_splits(cfg["seed"])["train"]
    x, y = x[:cfg["n"]], y[:cfg["n"]]
    # build_model seeds PyTorch's global generator, which the dropout masks then draw from
    model = running_example.build_model(cfg["hidden"], seed=cfg["seed"], dropout=cfg["dropout"])
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["momentum"])
    # A warm-up: the learning rate grows for `warmup` steps. The scheduler counts its own steps.
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=cfg["warmup_start"],
                                                  end_factor=1.0, total_iters=cfg["warmup"])
    cursor = BatchCursor(cfg["n"], cfg["batch_size"], cfg["seed"])
    return Job(model, optimizer, scheduler, cursor, x, y, cfg)


# --- the complete state (what lab 05 hands learners; lab 03 has them write it) -----------------

def full_state(job: Job, next_step: int) -> dict:
    """Everything needed to continue ``job`` at ``next_step`` exactly as if it never stopped."""
    import torch

    return {"model": job.model.state_dict(), "optimizer": job.optimizer.state_dict(),
            "scheduler": job.scheduler.state_dict(), "rng": torch.get_rng_state(),
            "cursor": job.cursor.state_dict(), "step": int(next_step)}


def restore(job: Job, state: dict, parts=STATE_KEYS) -> int:
    """Load the chosen ``parts`` of ``state`` into ``job``; return the step to continue at.

    Leaving a part out is how lab 03 shows what each one is for; ``"step"`` left out means
    "start counting from 0 again".
    """
    import torch

    parts = set(parts)
    unknown = parts - set(STATE_KEYS)
    if unknown:
        raise ValueError(_("unknown state parts {parts}; choose from {keys}").format(parts=sorted(unknown), keys=STATE_KEYS))
    if "model" in parts:
        job.model.load_state_dict(state["model"])
    if "optimizer" in parts:
        job.optimizer.load_state_dict(state["optimizer"])
    if "scheduler" in parts:
        job.scheduler.load_state_dict(state["scheduler"])
    if "rng" in parts:
        torch.set_rng_state(state["rng"])
    if "cursor" in parts:
        job.cursor.load_state_dict(state["cursor"])
    return int(state["step"]) if "step" in parts else 0


def save_state(job: Job, next_step: int, directory: str) -> str:
    """Write :func:`full_state` to ``directory/state.pt``; return the file's path."""
    import torch

    path = os.path.join(directory, STATE_FILE)
    torch.save(full_state(job, next_step), path)
    return path


def load_state(directory: str) -> dict:
    """Read the ``state.pt`` that :func:`save_state` (or a learner's code) wrote."""
    import torch

    return torch.load(os.path.join(directory, STATE_FILE), weights_only=False)


# --- in-process references (no Ray) -------------------------------------------------------------

@contextmanager
def single_thread():
    """Run PyTorch on one thread, like a Ray worker that holds 1 CPU (``OMP_NUM_THREADS=1``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def reference_run(config: dict | None = None, steps: int | None = None) -> dict:
    """The uninterrupted run, in this process: ``{"losses": [...], "state": full_state}``."""
    cfg = {k: v for k, v in settings(config).items() if k not in NOT_IN_REFERENCE}
    steps = cfg["steps"] if steps is None else steps
    with single_thread():
        job = build(cfg)
        losses = [job.train_step(s) for s in range(steps)]
        return {"losses": losses, "state": full_state(job, steps)}


def interrupted_run(config: dict | None = None, *, stop_after: int, parts=STATE_KEYS) -> dict:
    """Run ``stop_after`` steps, keep the full state, start a *fresh* job, restore only ``parts``
    and train until ``config["steps"]`` are done, all in this process.

    Returns ``{"losses": [...], "state": ..., "resumed_at": step}``; ``losses`` holds the steps the
    first part ran followed by those the resumed part ran.
    """
    cfg = {k: v for k, v in settings(config).items() if k not in NOT_IN_REFERENCE}
    with single_thread():
        job = build(cfg)
        losses = [job.train_step(s) for s in range(stop_after)]
        saved = full_state(job, stop_after)
        job = build(cfg)  # the new process: everything back to its initial value
        start = restore(job, saved, parts)
        losses += [job.train_step(s) for s in range(start, cfg["steps"])]
        return {"losses": losses, "state": full_state(job, cfg["steps"]), "resumed_at": start}


def max_param_diff(state_a: dict, state_b: dict) -> float:
    """Largest absolute difference between two model ``state_dict``s (inf if their keys differ)."""
    if set(state_a) != set(state_b):
        return float("inf")
    return max(float((state_a[k].double() - state_b[k].double()).abs().max()) for k in state_a)


def read_trace(path: str) -> list[list[tuple[int, float]]]:
    """The attempts recorded in a trace file: one list of ``(step, loss)`` per process, in order."""
    return [[(int(step), float(loss)) for step, loss in rows] for rows in _by_process(path)]


def read_batch_log(path: str) -> list[list[int]]:
    """The attempts recorded in a ``batch_log`` file: the batches each process drew, in order."""
    return [[int(batch) for (batch,) in rows] for rows in _by_process(path)]


def _by_process(path: str) -> list[list[list[str]]]:
    attempts, last_pid = [], None
    if not os.path.exists(path):
        return attempts
    with open(path) as f:
        for line in f:
            pid, *rest = line.split()
            if pid != last_pid:
                attempts.append([])
                last_pid = pid
            attempts[-1].append(rest)
    return attempts

