"""Which device, which collective backend and which ``ScalingConfig`` a DDP run should use.

The labs run the same training code on a laptop (CPU, gloo) and on a GPU cluster (CUDA, NCCL). The
decision is made here, by pure functions that take "are there GPUs, how many" as *inputs*, so
the CUDA branches are unit-tested on a CPU-only machine (``tests/helpers/test_devices.py``).

Where the answer comes from matters. The workers run wherever Ray places them, so the question is
"does the *cluster* offer GPUs?": :func:`cluster_gpus` reads ``ray.cluster_resources()["GPU"]``
(logical GPUs of every node, as the raylets registered them) and :func:`plan_from_cluster` plans
from it. ``torch.cuda.is_available()`` (:func:`detect`) only describes the driver's machine: on a
cluster whose head has no GPU (lab 08's layout) it says "no CUDA" and the run would silently train
on CPU. The driver's view is enough only when driver and workers share one machine (a laptop, a
single GPU box started with ``ray.init()``).

The backend rule gives what Ray 2.58.0's Train V2 picks: when ``TorchConfig(backend=None)``,
``TorchTrainer.__init__`` (``ray/train/v2/torch/torch_trainer.py``) sets ``"nccl"`` if
``use_gpu=True``, ``"tpu_dist"`` for TPUs, and ``"gloo"`` otherwise; V2 refuses a GPU in
``resources_per_worker`` without ``use_gpu``, so "each worker holds a GPU" and ``use_gpu`` agree. ``ScalingConfig(use_gpu=True)`` without
``resources_per_worker`` asks for ``{"GPU": 1}`` per worker and **no CPU**.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from raylab.i18n import _

CPU_BACKEND = "gloo"
GPU_BACKEND = "nccl"


@dataclass(frozen=True)
class DevicePlan:
    """How a data-parallel run will use this machine."""

    use_gpu: bool
    device_type: str  # "cuda" or "cpu": what ray.train.torch.get_device() returns in the workers
    backend: str  # the torch.distributed backend Ray will initialise
    num_workers: int
    resources_per_worker: dict = field(default_factory=dict)
    reason: str = ""

    def scaling_kwargs(self) -> dict:
        """Keyword arguments for ``ray.train.ScalingConfig``."""
        return {"num_workers": self.num_workers, "use_gpu": self.use_gpu,
                "resources_per_worker": dict(self.resources_per_worker)}


def backend_for(gpus_per_worker: float, tpus_per_worker: float = 0) -> str:
    """The backend Ray picks when ``TorchConfig(backend=None)``: the rule of Ray 2.58.0."""
    if gpus_per_worker > 0:
        return GPU_BACKEND
    if tpus_per_worker > 0:
        return "tpu_dist"
    return CPU_BACKEND


def plan_devices(cuda_available: bool, gpu_count: int, *, num_workers: int | None = None,
                 cpu_workers: int = 2, force_cpu: bool = False) -> DevicePlan:
    """Decide device, backend and worker count from what the machine has.

    - CUDA present (and not ``force_cpu``): one worker per GPU (``num_workers`` may ask for fewer,
      never more), each worker holds 1 GPU, backend NCCL.
    - Otherwise: ``num_workers`` (default ``cpu_workers``) CPU workers of 1 CPU each, backend gloo.
    """
    if gpu_count < 0:
        raise ValueError(_("gpu_count must be >= 0, got {n}").format(n=gpu_count))
    if num_workers is not None and num_workers < 1:
        raise ValueError(_("num_workers must be >= 1, got {n}").format(n=num_workers))
    if cuda_available and gpu_count > 0 and not force_cpu:
        if num_workers is not None and num_workers > gpu_count:
            raise ValueError(_("asked for {workers} GPU workers but only {gpus} GPU(s) are visible: "
                               "one worker per GPU").format(workers=num_workers, gpus=gpu_count))
        workers = num_workers or gpu_count
        return DevicePlan(True, "cuda", GPU_BACKEND, workers, {"GPU": 1},
                          _reason(_("{n} CUDA device(s)").format(n=gpu_count), True, workers))
    if force_cpu:
        why = _("CPU forced")
    elif cuda_available:
        why = _("CUDA reports available but no device is visible")
    else:
        why = _("no CUDA device")
    workers = num_workers or cpu_workers
    return DevicePlan(False, "cpu", CPU_BACKEND, workers, {"CPU": 1}, _reason(why, False, workers))


def _reason(why: str, use_gpu: bool, workers: int) -> str:
    """A plan's reason: why this device, then what the run gets."""
    got = (_("{n} worker(s), 1 GPU each, NCCL") if use_gpu else _("{n} CPU worker(s), 1 CPU each, gloo"))
    return _("{why}: {got}").format(why=why, got=got.format(n=workers))


def scaling_plans(cuda_available: bool, gpu_count: int, counts=(1, 2)) -> list[DevicePlan]:
    """One plan per worker count of a scaling study, all on the same kind of device.

    GPUs are used when there is one GPU for every worker of the largest count; otherwise the whole
    study runs on CPU (mixing devices would compare two different machines, not two worker counts).
    """
    counts = sorted(set(int(c) for c in counts))
    if not counts or counts[0] < 1:
        raise ValueError(_("worker counts must be >= 1, got {counts}").format(counts=counts))
    on_gpu = cuda_available and gpu_count >= counts[-1]
    plans = [plan_devices(on_gpu, gpu_count if on_gpu else 0, num_workers=c) for c in counts]
    if cuda_available and gpu_count > 0 and not on_gpu:
        plans = [DevicePlan(p.use_gpu, p.device_type, p.backend, p.num_workers,
                            p.resources_per_worker,
                            _("{gpus} GPU(s) cannot hold {most} workers: CPU for the whole study, "
                              "{n} worker(s), gloo").format(gpus=gpu_count, most=counts[-1], n=p.num_workers))
                 for p in plans]
    return plans


def cluster_gpus(resources: dict) -> int:
    """Whole GPUs in a ``ray.cluster_resources()`` dict (0 when the key is absent).

    Ray counts *logical* GPUs: what each node registered (detected, or ``--num-gpus`` /
    ``ray.init(num_gpus=...)``), summed over the nodes. One Train worker per GPU needs whole GPUs,
    so a fraction left over (``{"GPU": 2.5}``) does not count.
    """
    return int(float(resources.get("GPU", 0)) + 1e-9)


def plan_from_cluster(resources: dict, *, num_workers: int | None = None, cpu_workers: int = 2,
                      force_cpu: bool = False) -> DevicePlan:
    """:func:`plan_devices` from what the cluster offers (a ``ray.cluster_resources()`` dict)."""
    gpus = cluster_gpus(resources)
    plan = plan_devices(gpus > 0, gpus, num_workers=num_workers, cpu_workers=cpu_workers,
                        force_cpu=force_cpu)
    where = _("the cluster offers {n} GPU(s)").format(n=gpus) if gpus else _("the cluster offers no GPU")
    if force_cpu:
        where = _("{where}, CPU forced").format(where=where)
    return replace(plan, reason=_reason(where, plan.use_gpu, plan.num_workers))


def driver_view_warning(driver_cuda: bool, resources: dict) -> str:
    """A sentence when deciding from the driver's ``torch.cuda.is_available()`` would be wrong
    for this cluster; ``""`` when both views agree."""
    gpus = cluster_gpus(resources)
    if gpus and not driver_cuda:
        return _("the driver sees no CUDA device but the cluster offers {n} GPU(s): "
                 "use_gpu=torch.cuda.is_available() would train on CPU").format(n=gpus)
    if driver_cuda and not gpus:
        return _("the driver sees a CUDA device but the cluster offers no GPU: "
                 "use_gpu=True would wait for GPUs that Ray cannot give")
    return ""


def detect_cluster(*, num_workers: int | None = None, cpu_workers: int = 2,
                   force_cpu: bool = False) -> DevicePlan:
    """:func:`plan_from_cluster` for the cluster this driver is connected to (``ray.init`` first)."""
    import ray

    if not ray.is_initialized():
        raise RuntimeError(_("detect_cluster() asks the running cluster: call ray.init() "
                             "(or raylab.setup()) first"))
    return plan_from_cluster(ray.cluster_resources(), num_workers=num_workers,
                             cpu_workers=cpu_workers, force_cpu=force_cpu)


def detect(*, num_workers: int | None = None, cpu_workers: int = 2,
           force_cpu: bool = False) -> DevicePlan:
    """:func:`plan_devices` for the driver's machine (asks PyTorch what it sees here).

    Right only when the workers run on this machine too; on a cluster use :func:`detect_cluster`.
    """
    import torch

    available = bool(torch.cuda.is_available())
    count = int(torch.cuda.device_count()) if available else 0
    return plan_devices(available, count, num_workers=num_workers, cpu_workers=cpu_workers,
                        force_cpu=force_cpu)


def scaling_config(plan: DevicePlan):
    """The ``ray.train.ScalingConfig`` of a plan."""
    from ray.train import ScalingConfig

    return ScalingConfig(**plan.scaling_kwargs())


def torch_config(plan: DevicePlan):
    """A ``ray.train.torch.TorchConfig`` naming the plan's backend explicitly.

    Ray would pick the same backend on its own; naming it makes a run fail fast instead of
    silently using another backend if the resources and the plan ever disagree.
    """
    from ray.train.torch import TorchConfig

    return TorchConfig(backend=plan.backend)


def moves_on_a_described_gpu(train_fn, config: dict, *, device: str = "cuda:1") -> dict:
    """Run ``train_fn`` once in Ray Train's local mode (``ScalingConfig(num_workers=0)``, in this
    process) as a GPU worker whose ``ray.train.torch.get_device()`` is ``device``, on a machine
    without a GPU, and record where its tensors and modules were sent.

    Ray's ``get_device`` / ``get_devices`` answer ``device`` (so ``prepare_model`` moves the model
    there too); every ``Tensor.to`` / ``.cuda`` and ``Module.to`` / ``.cuda`` toward CUDA is
    recorded and left on the CPU, so the loop runs to its end here. Returns ``{"tensors": [(shape,
    device), ...], "modules": [(class name, device), ...], "error": None or what the run raised}``.
    """
    import torch

    from raylab import local_mode

    seen = {"tensors": [], "modules": [], "error": None}
    with _described_gpu(torch.device(device), seen):
        try:
            local_mode.fit(train_fn, dict(config))
        except Exception as exc:  # noqa: BLE001 - reported to the check, which says what it means
            seen["error"] = f"{type(exc).__name__}: {str(exc).strip()[-300:]}"
    return seen


@contextmanager
def _described_gpu(target, seen: dict):
    """While inside: Ray Train's devices are ``[target]``, moves toward CUDA are recorded in
    ``seen`` instead of made, and nothing opens a CUDA stream or selects a CUDA device."""
    import torch
    import ray.train.torch
    import ray.train.torch.train_loop_utils as v1_loop_utils
    import ray.train.v2.torch.train_loop_utils as loop_utils

    tensor_to, tensor_cuda = torch.Tensor.to, torch.Tensor.cuda
    module_to, module_cuda = torch.nn.Module.to, torch.nn.Module.cuda
    saved = {"loop_get_devices": loop_utils.get_devices, "torch_get_devices": ray.train.torch.get_devices}
    manager_for = v1_loop_utils.get_torch_device_manager_by_device_type
    set_device = torch.cuda.set_device
    torch.Tensor.to, torch.Tensor.cuda, torch.nn.Module.to, torch.nn.Module.cuda = _recording_moves(
        seen, tensor_to, module_to)
    loop_utils.get_devices = ray.train.torch.get_devices = lambda: [target]
    # prepare_data_loader's wrapper would open a CUDA stream for the copies: a CPU manager instead
    v1_loop_utils.get_torch_device_manager_by_device_type = lambda device_type: manager_for("cpu")
    torch.cuda.set_device = lambda device: None  # a described GPU only
    try:
        yield
    finally:
        torch.Tensor.to, torch.Tensor.cuda = tensor_to, tensor_cuda
        torch.nn.Module.to, torch.nn.Module.cuda = module_to, module_cuda
        loop_utils.get_devices = saved["loop_get_devices"]
        ray.train.torch.get_devices = saved["torch_get_devices"]
        torch.cuda.set_device = set_device
        v1_loop_utils.get_torch_device_manager_by_device_type = manager_for


def _recording_moves(seen: dict, tensor_to, module_to):
    """Stand-ins for ``Tensor.to``, ``Tensor.cuda``, ``Module.to`` and ``Module.cuda`` that note a
    move toward CUDA in ``seen`` and return the object unmoved (other moves go to ``tensor_to`` /
    ``module_to``)."""

    def t_to(self, *args, **kwargs):
        dev = _cuda_target(args, kwargs)
        if dev is None:
            return tensor_to(self, *args, **kwargs)
        seen["tensors"].append((tuple(self.shape), dev))
        return self

    def t_cuda(self, device=None, *args, **kwargs):
        seen["tensors"].append((tuple(self.shape), _cuda_name(device)))
        return self

    def m_to(self, *args, **kwargs):
        dev = _cuda_target(args, kwargs)
        if dev is None:
            return module_to(self, *args, **kwargs)
        seen["modules"].append((type(self).__name__, dev))
        return self

    def m_cuda(self, device=None):
        seen["modules"].append((type(self).__name__, _cuda_name(device)))
        return self

    return t_to, t_cuda, m_to, m_cuda


def _cuda_target(args, kwargs) -> str | None:
    """The CUDA device a ``.to(...)`` call names (positionally or as ``device=``), or None."""
    import torch

    for value in list(args) + [kwargs.get("device")]:
        if isinstance(value, (str, torch.device)):
            try:
                dev = torch.device(value)
            except (RuntimeError, TypeError):
                continue
            if dev.type == "cuda":
                return str(dev)
    return None


def _cuda_name(device) -> str:
    """The device a ``.cuda(device)`` call sends to: an index, a name or the current CUDA device."""
    import torch

    return str(torch.device("cuda", device) if isinstance(device, int) else torch.device(device or "cuda"))
