"""Reading a KubeRay manifest's Pod groups the way KubeRay does: the Ray resources each Pod gives
Ray, what it asks the Kubernetes scheduler for, its volume mounts and tolerations.

Loading and schema-validating a manifest is :mod:`raylab.kuberay`'s job; this module reads what it
loaded (lab 08's cells import these readers from here).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from raylab.i18n import _
from raylab.kuberay import cluster_spec_and_path, load_manifest

# Volume kinds whose data outlives a Pod and can be mounted by Pods on several nodes (for a PVC,
# only with a ReadWriteMany volume such as EFS: the access mode lives in the PVC, not here).
SHARED_VOLUME_KINDS = ("persistentVolumeClaim", "nfs")

# The Kubernetes quantity syntax (the pattern the CRDs use for resources.limits / requests).
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_SUFFIX = {"": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "P": 1e15, "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
           "Pi": 2.0**50, "Ei": 2.0**60}
# --------------------------------------------------------------------------------------------
# Reading a manifest the way KubeRay does
# --------------------------------------------------------------------------------------------
def parse_quantity(value) -> float:
    """A Kubernetes quantity as a number: ``"500m"`` -> 0.5, ``"8Gi"`` -> 8 * 2**30, ``4`` -> 4.0."""
    if isinstance(value, bool):
        raise ValueError(_("not a quantity: {value!r}").format(value=value))
    if isinstance(value, (int, float)):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(_("not a Kubernetes quantity: {value!r}").format(value=value))
    number = float(match.group("num"))
    suffix = match.group("suffix") or ""
    if suffix[:1] in ("e", "E"):
        return number * 10.0 ** int(suffix[1:])
    return number * _SUFFIX[suffix]


def ray_cluster_spec(manifest) -> dict:
    """The RayCluster spec: ``spec`` of a RayCluster, ``spec.rayClusterSpec`` of a RayJob."""
    return cluster_spec_and_path(load_manifest(manifest))[0]


def _ray_container(group_spec: dict) -> dict:
    containers = (((group_spec.get("template") or {}).get("spec") or {}).get("containers")) or [{}]
    return containers[0]  # KubeRay treats the first container as the Ray container


def pod_ray_resources(group_spec: dict) -> dict[str, float]:
    """The logical ``CPU`` and ``GPU`` one Pod of this group gives Ray, as KubeRay decides them.

    First the group's ``resources`` field, then ``rayStartParams`` (``num-cpus``, ``num-gpus``),
    then the Ray container's ``limits`` (for CPU, ``requests`` when there is no limit; any
    ``*/gpu`` limit such as ``nvidia.com/gpu`` for GPU). KubeRay rounds quantities up to whole
    numbers. A value declared nowhere counts as 0 here (Ray would detect something, but a plan
    cannot count on it).
    """
    override = {str(k).lower(): v for k, v in (group_spec.get("resources") or {}).items()}
    params = group_spec.get("rayStartParams") or {}
    res = _ray_container(group_spec).get("resources") or {}
    limits, requests = res.get("limits") or {}, res.get("requests") or {}

    def whole(q):
        return float(math.ceil(parse_quantity(q) - 1e-9))

    if "cpu" in override:
        cpu = whole(override["cpu"])
    elif params.get("num-cpus") not in (None, ""):
        cpu = float(params["num-cpus"])
    elif "cpu" in limits:
        cpu = whole(limits["cpu"])
    elif "cpu" in requests:
        cpu = whole(requests["cpu"])
    else:
        cpu = 0.0
    gpu_override = [v for k, v in override.items() if k == "gpu" or k.endswith("/gpu")]
    gpu_limits = [v for k, v in limits.items() if str(k).endswith("/gpu")]
    if gpu_override:
        gpu = whole(gpu_override[0])
    elif params.get("num-gpus") not in (None, ""):
        gpu = float(params["num-gpus"])
    elif gpu_limits:
        gpu = whole(gpu_limits[0])
    else:
        gpu = 0.0
    return {"CPU": cpu, "GPU": gpu}


def pod_mounts(group_spec: dict) -> dict[str, str]:
    """``{mountPath: volume kind}`` of the Ray container, e.g. ``{"/mnt/results": "persistentVolumeClaim"}``
    (a trailing ``/`` dropped: ``/mnt/results/`` is the same mount point).

    The kind is the volume's source field (``persistentVolumeClaim``, ``nfs``, ``emptyDir``,
    ``hostPath``, ``configMap``, ...), ``"unknown"`` when no volume of that name exists.
    """
    pod = (group_spec.get("template") or {}).get("spec") or {}
    kinds = {}
    for vol in pod.get("volumes") or []:
        sources = [k for k in vol if k != "name"]
        kinds[vol.get("name")] = sources[0] if sources else "emptyDir"  # no source: emptyDir
    return {str(mnt["mountPath"]).rstrip("/") or "/": kinds.get(mnt.get("name"), "unknown")
            for mnt in _ray_container(group_spec).get("volumeMounts") or [] if "mountPath" in mnt}


def pod_requests(group_spec: dict) -> dict[str, float]:
    """What the Kubernetes scheduler reserves for one Pod's Ray container: ``{"cpu": cores,
    "memory": bytes}``. A resource with a limit but no request is requested at its limit (what
    Kubernetes does); one declared nowhere counts as 0."""
    res = _ray_container(group_spec).get("resources") or {}
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    out = {}
    for name in ("cpu", "memory"):
        value = requests.get(name, limits.get(name, 0))
        out[name] = parse_quantity(value)
    return out


def pod_tolerations(group_spec: dict) -> list[dict]:
    """The Pod template's ``tolerations`` (a list of dicts, possibly empty)."""
    pod = (group_spec.get("template") or {}).get("spec") or {}
    return [dict(t) for t in pod.get("tolerations") or []]


@dataclass(frozen=True)
class GroupInfo:
    """What a review needs to know about one group of Ray Pods."""

    name: str
    min_replicas: int
    max_replicas: int
    num_of_hosts: int  # Pods per replica (multi-host groups); 1 for ordinary groups
    ray_resources: dict  # {"CPU": float, "GPU": float} one Pod gives Ray
    mounts: dict  # {mountPath: volume kind} of the Ray container
    requests: dict = field(default_factory=dict)  # {"cpu": cores, "memory": bytes} for the scheduler
    tolerations: tuple = ()  # the Pod's tolerations, as dicts


def _group_info(name: str, g: dict, head: bool) -> GroupInfo:
    return GroupInfo(
        name=name,
        min_replicas=1 if head else int(g.get("minReplicas", 0) or 0),
        max_replicas=1 if head else int(g.get("maxReplicas", 2**31 - 1)),
        num_of_hosts=1 if head else int(g.get("numOfHosts", 1) or 1),
        ray_resources=pod_ray_resources(g),
        mounts=pod_mounts(g),
        requests=pod_requests(g),
        tolerations=tuple(pod_tolerations(g)),
    )


def tolerates(group: GroupInfo, taint_key: str) -> bool:
    """Whether the group's Pods may run on nodes tainted ``taint_key`` (effect ``NoSchedule``,
    no value): a toleration with that key, or an ``Exists`` toleration without a key."""
    for t in group.tolerations:
        key, op = t.get("key"), t.get("operator", "Equal")
        if t.get("effect") not in (None, "", "NoSchedule"):
            continue
        if key == taint_key or (not key and op == "Exists"):
            return True
    return False


def head_group(manifest) -> GroupInfo:
    spec = ray_cluster_spec(manifest)
    return _group_info("head", spec.get("headGroupSpec") or {}, head=True)


def worker_groups(manifest) -> list[GroupInfo]:
    spec = ray_cluster_spec(manifest)
    return [_group_info(g.get("groupName", f"group-{i}"), g, head=False)
            for i, g in enumerate(spec.get("workerGroupSpecs") or [])]
