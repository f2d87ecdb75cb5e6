"""The vocabulary of lab 08's plan review: a job's plan on KubeRay/EKS and what a review finds.

A :class:`Plan` holds what a reviewer reads (the RayJob manifest, the real ``ScalingConfig``,
``FailureConfig`` and ``TuneConfig``, the storage path, the EKS node groups); a review returns
:class:`Finding` values whose codes are :data:`FINDING_CODES`. :func:`example_plan` is the lab's
clean reference plan. Reading the manifest itself is :mod:`raylab.kuberay`'s job.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from raylab.i18n import N_, Texts, _
from raylab.kuberay import load_example

FINDING_CODES = Texts({
    "BUNDLE_TOO_BIG": N_("no worker group's Pod offers the Ray resources of one Train worker bundle"),
    "MAX_REPLICAS_TOO_LOW": N_("the worker groups' maxReplicas cannot host every worker of every "
                               "concurrent trial"),
    "NO_GPU_GROUP": N_("workers ask for GPUs but no node group of the Kubernetes cluster has GPUs"),
    "POD_LOCAL_STORAGE": N_("storage_path is not storage shared by the head and every worker Pod"),
    "DELETED_BEFORE_PERSISTED": N_("the RayCluster is deleted after the job while results live only "
                                   "in its Pods"),
    "RETRIES_EXCEED_DEADLINE": N_("the worst case of the allowed retries runs past "
                                  "activeDeadlineSeconds"),
    "NO_DEADLINE": N_("the RayJob sets no activeDeadlineSeconds"),
    "HEAD_DOES_NOT_FIT": N_("no node group the head Pod may run on has the allocatable CPU and memory "
                            "the head Pod requests"),
})


class Finding(NamedTuple):
    """One problem a review found: a stable ``code`` from :data:`FINDING_CODES` and a sentence."""

    code: str
    message: str


@dataclass(frozen=True)
class NodeGroup:
    """An EKS node group: the physical supply the Kubernetes scheduler can place Pods on.

    ``cpus`` and ``gpus`` are the instance's; ``allocatable_cpu`` and ``allocatable_memory_gib``
    are what one node offers Pods after the kubelet and system reservations (``kubectl describe
    node``, "Allocatable"), always less than the instance size; ``taints`` are the keys of the
    ``NoSchedule`` taints its nodes were created with. EKS puts no taint on GPU nodes by default;
    many teams create their GPU node groups with one (often ``nvidia.com/gpu``) so that only Pods
    that tolerate it, the GPU workers, land there.
    """

    name: str
    instance_type: str
    cpus: int
    gpus: int
    max_nodes: int
    allocatable_cpu: float
    allocatable_memory_gib: float
    taints: tuple = ()


@dataclass
class Plan:
    """Everything a review of a Train (+ Tune) job on KubeRay looks at.

    ``rayjob`` is the RayJob manifest (a ``dict``); ``scaling_config``, ``failure_config`` and
    ``tune_config`` are the real ``ray.train.ScalingConfig``, ``ray.train.FailureConfig`` and
    ``ray.tune.TuneConfig`` objects (``tune_config=None`` for a plain Train job; with Tune,
    ``max_concurrent_trials`` must be set); ``storage_path`` goes to ``RunConfig(storage_path=...)``;
    ``worker_start_timeout_s`` is ``RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S``; ``attempt_s`` is how
    long one training attempt runs when nothing fails; ``health_check_timeout_s``
    (``RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S``) and ``preemption_wait_s`` are how long a failure
    can take to be noticed (Ray's defaults: 600 s and 120 s; see :mod:`raylab.retry_budget`).
    """

    rayjob: dict
    scaling_config: Any
    failure_config: Any
    storage_path: str
    node_groups: list = field(default_factory=list)
    tune_config: Any = None
    worker_start_timeout_s: float = 60.0
    attempt_s: float = 3600.0
    health_check_timeout_s: float = 600.0
    preemption_wait_s: float = 120.0

    def __post_init__(self):
        if self.tune_config is not None and self.tune_config.max_concurrent_trials is None:
            raise ValueError(_("a plan with Tune must set TuneConfig(max_concurrent_trials=...)"))


# What the kubelet of one m5.xlarge node reports as its memory capacity (kubectl describe node,
# "Capacity"), in KiB: less than the instance's 16 GiB, because the kernel keeps part of it. An
# observed value on the EKS-optimized AMI; allocatable then reads 14880156Ki.
M5_XLARGE_CAPACITY_KI = 15896988
M5_XLARGE_MAX_PODS = 58  # the EKS default for m5.xlarge: 4 ENIs x (15 IPv4 addresses - 1) + 2


def eks_kube_reserved_memory_mi(max_pods: int) -> int:
    """Memory the EKS-optimized AMI reserves for the kubelet and the container runtime:
    255 MiB plus 11 MiB per Pod the node may run (its ``maxPods``)."""
    return 255 + 11 * max_pods


def eks_kube_reserved_cpu_m(vcpus: int) -> float:
    """CPU the EKS-optimized AMI reserves, in millicores: 6 % of the first core, 1 % of the second,
    0.5 % of the third and fourth, 0.25 % of every further core."""
    shares = [60.0, 10.0, 5.0, 5.0]
    return sum(shares[:vcpus]) + 2.5 * max(vcpus - 4, 0)


def eks_allocatable_memory_gib(capacity_ki: int, max_pods: int, *, eviction_hard_mi: int = 100,
                               system_reserved_mi: int = 0) -> float:
    """A node's allocatable memory in GiB: its capacity minus kube-reserved
    (:func:`eks_kube_reserved_memory_mi`), the hard eviction threshold (``memory.available`` 100 Mi)
    and system-reserved (none on the EKS-optimized AMI unless you set it)."""
    reserved_ki = (eks_kube_reserved_memory_mi(max_pods) + eviction_hard_mi + system_reserved_mi) * 1024
    return (capacity_ki - reserved_ki) / 2**20


def eks_allocatable_cpu(vcpus: int) -> float:
    """A node's allocatable CPUs: its vCPUs minus :func:`eks_kube_reserved_cpu_m`."""
    return round(vcpus - eks_kube_reserved_cpu_m(vcpus) / 1000, 3)


def default_worker_group_start_timeout_s() -> float:
    """Ray Train's default ``RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S``, read from the installed Ray."""
    from ray.train.v2._internal import constants  # internal, pinned: Ray 2.58.0

    return float(constants.DEFAULT_WORKER_GROUP_START_TIMEOUT_S)


def example_plan() -> Plan:
    """The lab's reference plan: a Tune sweep of 2-worker GPU Train runs on EKS, reviewed clean.

    RayJob ``rayjob_tune_gpu.yaml`` (its head requests 3 CPUs and 12 GiB, which fit the
    allocatable 3.92 CPUs and about 14.19 GiB of an m5.xlarge (:func:`eks_allocatable_cpu`,
    :func:`eks_allocatable_memory_gib`), and offers Ray 3 CPUs for the 3 Tune trial
    drivers); 3 concurrent trials x 2 workers of ``{"CPU": 8, "GPU": 1}`` on tainted g5.4xlarge
    GPU nodes; results on a ReadWriteMany PVC mounted at ``/mnt/results`` in every Pod; explicit
    retry limits whose joint worst case (:func:`raylab.retry_budget.worst_case_s`, 12,720 s) fits
    the 4-hour ``activeDeadlineSeconds``. The m5.xlarge figures follow the EKS-optimized AMI's
    reservations; the GPU nodes' are typical EKS values, for the exercise. Each call builds a new, independent plan, so a caller may
    change it freely.
    """
    import ray.train
    import ray.tune

    return Plan(
        rayjob=load_example("rayjob_tune_gpu.yaml"),
        scaling_config=ray.train.ScalingConfig(num_workers=2, use_gpu=True,
                                               resources_per_worker={"CPU": 8, "GPU": 1}),
        failure_config=ray.train.FailureConfig(max_failures=2, controller_failure_limit=2,
                                               max_preemption_failures=1),
        storage_path="/mnt/results",
        node_groups=[NodeGroup("system", "m5.xlarge", cpus=4, gpus=0, max_nodes=2,
                               allocatable_cpu=eks_allocatable_cpu(4),
                               allocatable_memory_gib=eks_allocatable_memory_gib(M5_XLARGE_CAPACITY_KI,
                                                                                 M5_XLARGE_MAX_PODS)),
                     NodeGroup("gpu", "g5.4xlarge", cpus=16, gpus=1, max_nodes=6,
                               allocatable_cpu=15.89, allocatable_memory_gib=58.0,
                               taints=("nvidia.com/gpu",))],
        tune_config=ray.tune.TuneConfig(max_concurrent_trials=3),
        worker_start_timeout_s=600.0,
        attempt_s=1800.0,
    )
