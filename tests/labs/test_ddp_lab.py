"""Lab 04 behaviour: the instructor's GPU check and what DDP synchronises, on real CPU runs.

Slow tests start a local Ray cluster (one at a time); the others run in a second or two.
On a machine without CUDA the CUDA-only test skips with its reason shown in pytest's summary.
"""
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from ray import cloudpickle as _cloudpickle

# Ray workers cannot import this test module: ship its functions by value.
_cloudpickle.register_pickle_by_value(sys.modules[__name__])

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.py"


def _load_gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available()) and torch.cuda.device_count() > 0


def _run_script(*args, timeout=300):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


# --- the script's pure parts -------------------------------------------------------------------

def _record(rank, backend="gloo", device="cpu", params=1.0, first=1.0, last=0.5, steps=(3.0, 1.0, 1.0)):
    return {"rank": rank, "world_size": 2, "backend": backend, "device": device,
            "device_name": device, "autocast_dtype": "bfloat16", "grad_scaler": False,
            "batch_size": 8, "step_ms": list(steps), "first_loss": first, "last_loss": last,
            "param_sum": params}


def test_gpu_check_evaluate_accepts_a_healthy_run():
    gc = _load_gpu_check()
    assert gc.evaluate([_record(0), _record(1)], "gloo", "cpu") == []


@pytest.mark.parametrize("records, needle", [
    ([_record(0, backend="gloo"), _record(1, backend="gloo")], "expected 'nccl'"),
    ([_record(0, params=1.0), _record(1, params=2.0)], "different parameters"),
    ([_record(0, first=0.5, last=0.9), _record(1)], "did not go down"),
    ([], "no worker"),
])
def test_gpu_check_evaluate_reports_problems(records, needle):
    gc = _load_gpu_check()
    expected = "nccl" if "nccl" in needle else "gloo"
    problems = gc.evaluate(records, expected, "cuda" if expected == "nccl" else "cpu")
    assert any(needle in p for p in problems), problems


def test_gpu_check_flags_two_workers_on_one_gpu():
    gc = _load_gpu_check()
    recs = [_record(0, backend="nccl", device="cuda:0"), _record(1, backend="nccl", device="cuda:0")]
    assert any("share a GPU" in p for p in gc.evaluate(recs, "nccl", "cuda"))


def test_gpu_check_report_lines_count_every_rank_after_warmup():
    gc = _load_gpu_check()
    lines = gc.report_lines([_record(0, steps=(9.0, 9.0, 2.0, 2.0)), _record(1, steps=(9.0, 9.0, 4.0, 4.0))])
    # 2 ranks x 2 timed steps x 8 samples over the slowest rank's 8 ms = 4,000 samples/s
    assert any("4,000 samples/s over 2 worker(s)" in line for line in lines), lines
    assert sum("backend=gloo" in line for line in lines) == 2


def test_gpu_check_amp_settings():
    import torch

    gc = _load_gpu_check()
    assert gc.amp_settings("cuda") == {"dtype": torch.float16, "grad_scaler": True}
    assert gc.amp_settings("cpu") == {"dtype": torch.bfloat16, "grad_scaler": False}


def test_gpu_check_without_cuda_exits_nonzero_with_a_clear_message():
    if _has_cuda():
        pytest.skip("this machine has a CUDA device: the no-CUDA exit path cannot be observed here")
    proc = _run_script(timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-500:])
    assert "no CUDA device is visible" in proc.stderr and "--cpu" in proc.stderr
    assert "Started a local Ray instance" not in proc.stdout + proc.stderr  # fails before Ray starts


# --- real runs ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_gpu_check_cpu_path_runs_end_to_end():
    proc = _run_script("--cpu", "--workers", "2", "--epochs", "1", "--samples", "512",
                       "--batch-size", "32", "--hidden", "32", "--timeout", "180", timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "gpu-check: OK: 2 worker(s), backend gloo on cpu" in proc.stdout
    assert proc.stdout.count("backend=gloo") == 2  # reported from inside each worker
    assert "per-step ms:" in proc.stdout and "samples/s" in proc.stdout


@pytest.mark.slow
def test_gpu_check_cuda_path():
    if not _has_cuda():
        pytest.skip("CUDA-only: no CUDA device on this machine (run `make gpu-check` on a GPU host)")
    proc = _run_script("--epochs", "1", "--samples", "2048", timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "backend nccl on cuda" in proc.stdout


def _sync_probe(config):
    """Per-worker: the lab's MLP trained with DDP, plus what DDP synchronised."""
    import psutil
    import torch
    import torch.distributed as dist
    from torch import nn

    import ray.train
    import ray.train.torch
    import raylab.ddp

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    model = raylab.ddp.train_blobs_mlp(config)
    # buffers: a BatchNorm net, rank-dependent data; running mean at forward start vs at the end
    torch.manual_seed(rank)
    bn_net = ray.train.torch.prepare_model(nn.Sequential(nn.Linear(2, 8), nn.BatchNorm1d(8)))
    seen = []
    bn_net.module[1].register_forward_pre_hook(lambda m, a: seen.append(m.running_mean.clone()))
    bn_net(torch.randn(16, 2) + rank)
    mine = [(c.laddr.port, c.raddr.port) for c in psutil.Process().net_connections("tcp")
            if c.status == psutil.CONN_ESTABLISHED]
    everyone = [None] * world
    dist.all_gather_object(everyone, {"ports": {p for p, _ in mine}, "bn_start": seen[-1],
                                      "bn_end": bn_net.module[1].running_mean.clone()})
    others = set().union(*(e["ports"] for r, e in enumerate(everyone) if r != rank))
    links = [m for m in mine if m[1] in others]
    ray.train.report({"done": 1})
    plain = model.module
    # Ray refuses to return torch tensors from a training function: send plain lists
    return {"state": {k: v.cpu().tolist() for k, v in plain.state_dict().items()},
            "backend": dist.get_backend(), "links": links,
            "bn_start": [e["bn_start"].tolist() for e in everyone],
            "bn_end": [e["bn_end"].tolist() for e in everyone]}


def _single_process(config):
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, DistributedSampler

    import raylab.data
    import raylab.models

    ds = raylab.data.blobs(n=config["samples"])
    sampler = DistributedSampler(ds, num_replicas=1, rank=0, shuffle=True, seed=0)
    model = raylab.models.mlp(seed=config["seed"])
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        sampler.set_epoch(epoch)
        for _, x, y in DataLoader(ds, batch_size=config["global_batch"], sampler=sampler):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    return model.state_dict()


@pytest.fixture(scope="module")
def ddp_probe():
    import ray.train
    from ray.train.torch import TorchConfig, TorchTrainer

    import raylab

    config = {"samples": 256, "global_batch": 32, "epochs": 3, "lr": 0.1, "seed": 0}
    with raylab.cluster.env_vars(RAY_TRAIN_COLLECTIVE_TIMEOUT_S=60, RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S=60):
        raylab.start_cluster(quiet=False, log_to_driver=False)
        try:
            result = TorchTrainer(
                _sync_probe, train_loop_config=config,
                torch_config=TorchConfig(timeout_s=60),
                scaling_config=ray.train.ScalingConfig(num_workers=2),
                run_config=ray.train.RunConfig(
                    storage_path=tempfile.mkdtemp(prefix="lab08-test-"),
                    failure_config=ray.train.FailureConfig(controller_failure_limit=0)),
            ).fit()
        finally:
            left = raylab.stop_cluster()
    assert not left, f"Ray processes left: {left}"
    return config, result.return_value


@pytest.mark.slow
def test_c06_two_ddp_workers_reproduce_single_process_training(ddp_probe):
    config, probe = ddp_probe
    reference = _single_process(config)
    import torch

    gap = max(float((torch.tensor(probe["state"][k]) - reference[k]).abs().max()) for k in reference)
    assert set(probe["state"]) == set(reference)  # unwrapped: no "module." prefix
    assert gap < 1e-5, f"2 workers x 16 vs 1 process x 32 differ by {gap}"


@pytest.mark.slow
def test_c07_ddp_sync_uses_the_process_group_not_ray(ddp_probe):
    _, probe = ddp_probe
    assert probe["backend"] == "gloo"
    # rank 0 holds direct TCP connections to the other worker process (store + gloo pair)
    assert len(probe["links"]) >= 2, probe["links"]
    # buffers: broadcast from rank 0 at the start of the forward, then updated locally
    assert probe["bn_start"][0] == probe["bn_start"][1]
    assert probe["bn_end"][0] != probe["bn_end"][1]
