#!/usr/bin/env python
"""Before a GPU workshop: run lab 04's DDP training path on this machine's CUDA devices.

    make gpu-check                      # or: .venv/bin/python scripts/gpu_check.py
    python scripts/gpu_check.py --workers 2 --epochs 3
    python scripts/gpu_check.py --cpu   # the same path on CPU (gloo, bfloat16): runs anywhere

It starts a private local Ray cluster with the GPUs present, trains lab 04's MLP on the blobs data
with ``TorchTrainer`` and one worker per GPU (float16 autocast with ``GradScaler``), and prints,
from inside every worker, the backend ``torch.distributed.get_backend()`` reports, the device and
the per-step times. It then checks that the backend is the expected one (NCCL on CUDA, gloo on
CPU), that every replica ended with identical parameters and that the loss went down.

Exit status: 0 when every check passed, 1 when a check failed or the run raised, 2 when no CUDA
device is present (without ``--cpu``), 3 when the run did not finish within ``--timeout``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

_SRC = Path(__file__).resolve().parent.parent / "src"
if _SRC.is_dir() and str(_SRC) not in sys.path:  # run from a checkout without installing raylab
    sys.path.insert(0, str(_SRC))

EXIT_OK, EXIT_FAILED, EXIT_NO_CUDA, EXIT_TIMEOUT = 0, 1, 2, 3


def amp_settings(device_type: str) -> dict:
    """Lab 04's mixed-precision plan: float16 + GradScaler on CUDA, bfloat16 without on CPU."""
    import torch

    if device_type == "cuda":
        return {"dtype": torch.float16, "grad_scaler": True}
    return {"dtype": torch.bfloat16, "grad_scaler": False}


def train_loop(config: dict):
    """Lab 04's training path, run by every worker; rank 0 returns every rank's record."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.utils.data import DataLoader

    import ray.train
    import ray.train.torch
    import raylab.data
    import raylab.models

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    device = ray.train.torch.get_device()
    settings = amp_settings(device.type)
    model = ray.train.torch.prepare_model(
        raylab.models.mlp(hidden=config["hidden"], seed=config["seed"]))
    loader = ray.train.torch.prepare_data_loader(DataLoader(
        raylab.data.blobs(n=config["samples"]), batch_size=config["batch_size"], shuffle=True))
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"])
    scaler = torch.amp.GradScaler(device.type, enabled=settings["grad_scaler"])

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    step_ms, losses = [], []
    for epoch in range(config["epochs"]):
        if world > 1:
            loader.sampler.set_epoch(epoch)
        for _, x, y in loader:
            sync()
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device.type, dtype=settings["dtype"]):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            sync()
            step_ms.append((time.perf_counter() - start) * 1000.0)
            losses.append(float(loss.detach()))
    plain = getattr(model, "module", model)
    record = {
        "rank": rank,
        "world_size": world,
        "backend": dist.get_backend() if dist.is_initialized() else None,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "autocast_dtype": str(settings["dtype"]).replace("torch.", ""),
        "grad_scaler": bool(settings["grad_scaler"]),
        "batch_size": config["batch_size"],
        "step_ms": step_ms,
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "param_sum": float(sum(p.detach().double().sum() for p in plain.parameters())),
    }
    records = [None] * world
    if dist.is_initialized():
        dist.all_gather_object(records, record)
    else:
        records = [record]
    ray.train.report({"steps": len(step_ms)})
    return records


def evaluate(records: list, expected_backend: str, expected_device_type: str) -> list[str]:
    """Problems found in the workers' records (an empty list means every check passed)."""
    problems = []
    if not records:
        return ["no worker returned a record"]
    for r in records:
        if r["backend"] != expected_backend:
            problems.append(f"rank {r['rank']}: backend {r['backend']!r}, expected {expected_backend!r}")
        if not str(r["device"]).startswith(expected_device_type):
            problems.append(f"rank {r['rank']}: device {r['device']}, expected {expected_device_type}")
        if not r["step_ms"]:
            problems.append(f"rank {r['rank']}: ran no training step")
    if len({round(r["param_sum"], 6) for r in records}) > 1:
        problems.append("the replicas ended with different parameters: "
                        + ", ".join(f"rank {r['rank']} {r['param_sum']:.6f}" for r in records))
    head = records[0]
    if head["first_loss"] is not None and not head["last_loss"] < head["first_loss"]:
        problems.append(f"the loss did not go down ({head['first_loss']:.4f} -> {head['last_loss']:.4f})")
    if expected_device_type == "cuda":
        devices = [r["device"] for r in records]
        if len(set(devices)) != len(devices):
            problems.append(f"two workers share a GPU: {devices}")
    return problems


def report_lines(records: list, warmup_steps: int = 2) -> list[str]:
    """Human-readable per-rank lines plus the run's throughput (all ranks, after warm-up)."""
    lines = []
    for r in records:
        ms = r["step_ms"]
        timed = ms[warmup_steps:] or ms
        lines.append(
            f"rank {r['rank']}/{r['world_size']}  backend={r['backend']}  device={r['device']} "
            f"({r['device_name']})  autocast={r['autocast_dtype']}  grad_scaler={r['grad_scaler']}")
        lines.append(
            f"    {len(ms)} steps; first step {ms[0]:.2f} ms; after {warmup_steps} warm-up steps: "
            f"median {statistics.median(timed):.2f} ms, mean {statistics.fmean(timed):.2f} ms")
        lines.append("    per-step ms: " + " ".join(f"{v:.2f}" for v in ms[:40])
                     + (" ..." if len(ms) > 40 else ""))
    timed = [r["step_ms"][warmup_steps:] or r["step_ms"] for r in records]
    samples = sum(r["batch_size"] * len(t) for r, t in zip(records, timed))
    seconds = max(sum(t) for t in timed) / 1000.0
    if seconds > 0:
        lines.append(f"throughput: {samples / seconds:,.0f} samples/s over {len(records)} worker(s) "
                     f"(every rank's samples / slowest rank's time, warm-up left out)")
    return lines


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu", action="store_true",
                   help="run the same path on CPU workers with gloo (for machines without CUDA)")
    p.add_argument("--workers", type=int, default=None,
                   help="number of workers (default: one per GPU; 2 with --cpu)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--batch-size", type=int, default=256, help="per-worker batch size")
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds before a run that has not finished is abandoned")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch

    import raylab.devices

    # The driver's view is the right one here, and only here: this script starts its own local
    # cluster on this machine, so the workers see the GPUs PyTorch sees. A driver connected to a
    # remote cluster must ask the cluster instead (raylab.devices.detect_cluster, lab 04).
    cuda = bool(torch.cuda.is_available())
    gpus = int(torch.cuda.device_count()) if cuda else 0
    if not args.cpu and gpus == 0:
        print("gpu-check: FAILED: no CUDA device is visible to PyTorch "
              f"(torch {torch.__version__}, torch.version.cuda={torch.version.cuda}, "
              f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}).\n"
              "Check the driver (nvidia-smi) and that a CUDA build of torch is installed, or run "
              "'python scripts/gpu_check.py --cpu' to test the same path on CPU.", file=sys.stderr)
        return EXIT_NO_CUDA
    try:
        plan = raylab.devices.plan_devices(cuda, gpus, num_workers=args.workers, force_cpu=args.cpu)
    except ValueError as exc:
        print(f"gpu-check: FAILED: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"gpu-check: {plan.reason}")
    if plan.use_gpu:
        for i in range(gpus):
            print(f"  cuda:{i} {torch.cuda.get_device_name(i)}")

    # Bound every wait; these variables reach Ray's controller and workers.
    os.environ.setdefault("RAY_TRAIN_COLLECTIVE_TIMEOUT_S", str(int(args.timeout)))
    os.environ.setdefault("RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S", "120")
    os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")
    os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.1")

    import ray
    import ray.train
    from ray.train.torch import TorchTrainer

    config = {"samples": args.samples, "batch_size": args.batch_size, "hidden": args.hidden,
              "epochs": args.epochs, "lr": 0.05, "seed": 0}
    cpus = max(plan.num_workers if not plan.use_gpu else 1, os.cpu_count() or 1)
    ray.init(address="local", num_cpus=cpus, num_gpus=gpus if plan.use_gpu else 0,
             include_dashboard=False, log_to_driver=False)
    code = EXIT_FAILED
    try:
        trainer = TorchTrainer(
            train_loop,
            train_loop_config=config,
            torch_config=raylab.devices.torch_config(plan),
            scaling_config=raylab.devices.scaling_config(plan),
            run_config=ray.train.RunConfig(
                name="gpu-check", storage_path=tempfile.mkdtemp(prefix="gpu-check-"),
                failure_config=ray.train.FailureConfig(max_failures=0, controller_failure_limit=0)),
        )
        started = time.perf_counter()
        result = _fit_with_deadline(trainer, args.timeout)
        if result is None:
            print(f"gpu-check: FAILED: the run did not finish within {args.timeout:.0f} s",
                  file=sys.stderr)
            return EXIT_TIMEOUT
        print(f"fit() took {time.perf_counter() - started:.1f} s")
        records = result.return_value or []
        for line in report_lines(records):
            print(line)
        problems = evaluate(records, plan.backend, plan.device_type)
        for problem in problems:
            print(f"gpu-check: FAILED: {problem}", file=sys.stderr)
        if not problems:
            print(f"gpu-check: OK: {len(records)} worker(s), backend {plan.backend} on "
                  f"{plan.device_type}, replicas identical, loss went down")
            code = EXIT_OK
    except Exception as exc:  # noqa: BLE001 - an instructor needs the reason, not a traceback
        print(f"gpu-check: FAILED: {type(exc).__name__}: {str(exc).strip()[:2000]}", file=sys.stderr)
        code = EXIT_FAILED
    finally:
        ray.shutdown()
    return code


def _fit_with_deadline(trainer, timeout_s: float):
    """``trainer.fit()`` in a thread; ``None`` if it has not returned after ``timeout_s``."""
    import threading

    box = {}

    def target():
        try:
            box["result"] = trainer.fit()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return None
    if "error" in box:
        raise box["error"]
    return box["result"]


if __name__ == "__main__":
    sys.exit(main())
