"""KubeRay manifests offline: load them, validate them against the real CRD schemas, read them.

Nothing here talks to a Kubernetes cluster. Lab 08 teaches running Ray Train and Tune on EKS with
KubeRay as an engineering review of real artefacts, so this module provides:

* :func:`load_manifest` / :func:`load_example`: a RayJob or RayCluster manifest as a ``dict``;
* :func:`validate_manifest`: the checks the Kubernetes API server would run on ``kubectl apply``
  (the ``openAPIV3Schema`` of the KubeRay v1.7.0 CRDs vendored in ``kuberay_crds/``, unknown fields
  rejected as with ``kubectl``'s default strict field validation), reported as readable
  ``path: message`` problems;
* :func:`operator_problems`: a few checks the KubeRay operator itself makes after the API server
  accepted the object;
* :func:`cluster_spec_and_path`: the RayCluster spec of a RayCluster or a RayJob.

Readers for review code live in :mod:`raylab.kuberay_groups`: :func:`worker_groups`,
:func:`head_group` (the Ray resources each Pod gives Ray, worked out the way KubeRay does, and the
Pod's volume mounts), :func:`parse_quantity` and :func:`tolerates`. The CRD schemas and their
errors in words are :mod:`raylab.kuberay_schema`. The vocabulary of the lab's plan review
(:class:`Plan`, :class:`NodeGroup`, :class:`Finding`, :data:`FINDING_CODES`) is in
:mod:`raylab.plan_review`.

What the offline validation does *not* do: evaluate the CRDs' CEL rules
(``x-kubernetes-validations``), run admission webhooks, or check that images, PVCs, service
accounts or node groups exist. A manifest that passes here can still fail on a real cluster.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path

import yaml

from raylab.i18n import _
from raylab.kuberay_schema import (
    CRD_FILES, SchemaProblem, _problems_from_error, _validator, format_path, format_problems,
    served_versions)

KUBERAY_VERSION = "v1.7.0"
API_GROUP = "ray.io"
EXAMPLES_DIR = Path(__file__).resolve().parent / "kuberay_examples"

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------
def load_manifest(source) -> dict:
    """A manifest as a ``dict``, from a ``dict``, a path, or YAML text (exactly one document)."""
    if isinstance(source, dict):
        return copy.deepcopy(source)
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                    and source.endswith((".yaml", ".yml"))):
        source = Path(source).read_text()
    if not isinstance(source, str):
        raise TypeError(_("expected a dict, a path or YAML text, got {type}").format(type=type(source).__name__))
    docs = [d for d in yaml.safe_load_all(source) if d is not None]
    if len(docs) != 1:
        raise ValueError(_("expected exactly one YAML document, found {n}").format(n=len(docs)))
    if not isinstance(docs[0], dict):
        raise ValueError(_("a manifest is a YAML mapping, got {type}").format(type=type(docs[0]).__name__))
    return docs[0]


def cluster_spec_and_path(m: dict) -> tuple[dict, list]:
    """The RayCluster spec of a loaded manifest and its path: ``spec`` of a RayCluster,
    ``spec.rayClusterSpec`` of a RayJob."""
    spec = m.get("spec") or {}
    if m.get("kind") == "RayJob":
        return spec.get("rayClusterSpec") or {}, ["spec", "rayClusterSpec"]
    return spec, ["spec"]


def example_names() -> list[str]:
    """The example manifests that ship with the course."""
    return sorted(p.name for p in EXAMPLES_DIR.glob("*.yaml"))


def example_text(name: str) -> str:
    """The YAML text of a shipped example (``name`` as in :func:`example_names`)."""
    return (EXAMPLES_DIR / name).read_text()


def load_example(name: str) -> dict:
    return load_manifest(example_text(name))


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------
class ManifestInvalid(ValueError):
    """Raised by :func:`check_manifest`; ``.problems`` lists every problem found."""

    def __init__(self, problems: list[SchemaProblem]):
        self.problems = list(problems)
        super().__init__(format_problems(self.problems))


def validate_manifest(manifest, *, strict: bool = True) -> list[SchemaProblem]:
    """Every reason the API server would reject ``manifest``; ``[]`` means it would accept it.

    ``manifest`` is a ``dict``, a path or YAML text. Checks ``apiVersion``/``kind`` against the
    vendored KubeRay CRDs, ``metadata.name``, then the served version's ``openAPIV3Schema``.
    ``strict=False`` accepts unknown fields (the API server would then drop them silently).
    """
    m = load_manifest(manifest)
    kind = m.get("kind")
    if kind not in CRD_FILES:
        return [SchemaProblem("kind", _("expected one of {allowed}, got {value!r}").format(
            allowed=sorted(CRD_FILES), value=kind))]
    api_version = m.get("apiVersion")
    group, _slash, version = str(api_version).partition("/")
    versions = served_versions(kind)
    if group != API_GROUP or version not in versions:
        wanted = ", ".join(f"{API_GROUP}/{v}" for v in versions)
        return [SchemaProblem("apiVersion", _("expected one of {allowed}, got {value!r}").format(
            allowed=wanted, value=api_version))]
    problems = []
    meta = m.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not name:
        problems.append(SchemaProblem("metadata.name", _("required field is missing")))
    elif not isinstance(name, str) or len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        problems.append(SchemaProblem(
            "metadata.name", _("{name!r} is not a valid name (lower-case letters, digits, '-' and "
                               "'.', starting and ending with a letter or digit)").format(name=name)))
    for err in _validator(kind, version, strict).iter_errors(m):
        problems.extend(_problems_from_error(err, kind, version))
    return sorted(set(problems))


def check_manifest(manifest, *, strict: bool = True) -> dict:
    """The parsed manifest if it is valid; otherwise raise :class:`ManifestInvalid`."""
    m = load_manifest(manifest)
    problems = validate_manifest(m, strict=strict)
    if problems:
        raise ManifestInvalid(problems)
    return m


def operator_problems(manifest) -> list[SchemaProblem]:
    """A few checks the KubeRay operator makes after the API server accepted the object.

    Replica bounds (negative, ``minReplicas > maxReplicas``), Ray resources set both in
    ``rayStartParams`` and in the group's ``resources`` field, and the RayCluster/RayJob name
    (a DNS-1035 label: starts with a letter). Assumes a schema-valid manifest.
    """
    m = load_manifest(manifest)
    problems = []
    name = (m.get("metadata") or {}).get("name") or ""
    if not _DNS1035_LABEL.match(name):
        problems.append(SchemaProblem("metadata.name",
                                      _("KubeRay wants a DNS-1035 label (start with a letter, no "
                                        "'.'), got {name!r}").format(name=name)))
    spec, prefix = cluster_spec_and_path(m)
    groups = [(prefix + ["headGroupSpec"], spec.get("headGroupSpec") or {})]
    groups += [(prefix + ["workerGroupSpecs", i], g)
               for i, g in enumerate(spec.get("workerGroupSpecs") or [])]
    for path, g in groups:
        params = g.get("rayStartParams") or {}
        if g.get("resources") and any(params.get(k) for k in ("num-cpus", "num-gpus", "memory",
                                                               "resources")):
            problems.append(SchemaProblem(format_path(path), _("KubeRay rejects Ray resources set "
                                                                 "both in rayStartParams and in resources")))
        lo, hi = g.get("minReplicas"), g.get("maxReplicas")
        for key, val in (("minReplicas", lo), ("maxReplicas", hi)):
            if isinstance(val, int) and val < 0:
                problems.append(SchemaProblem(format_path(path + [key]), _("must not be negative")))
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            problems.append(SchemaProblem(format_path(path),
                                          _("minReplicas {lo} is greater than maxReplicas {hi}").format(lo=lo, hi=hi)))
    return problems

