"""The KubeRay v1.7.0 CRDs as schemas a JSON Schema validator can run, and its errors in words.

:mod:`raylab.kuberay` validates manifests with these; the CRD files are vendored in
``kuberay_crds/`` (KubeRay's ``config/crd/bases``). A problem reads ``path: message``, written for
someone who just typed the YAML (``spec.workerGroupSpecs[0].maxReplicas: expected an integer, got
the string '2' (write the number without quotes)``).
"""
from __future__ import annotations

import copy
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from raylab.i18n import N_, _

CRD_DIR = Path(__file__).resolve().parent / "kuberay_crds"
CRD_FILES = {"RayJob": "ray.io_rayjobs.yaml", "RayCluster": "ray.io_rayclusters.yaml"}


@functools.lru_cache(maxsize=None)
def _crd(kind: str) -> dict:
    if kind not in CRD_FILES:
        raise KeyError(_("no CRD for kind {kind!r}; known: {known}").format(kind=kind, known=sorted(CRD_FILES)))
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is 5x faster here
    with open(CRD_DIR / CRD_FILES[kind]) as fh:
        return yaml.load(fh, Loader=loader)


def crd(kind: str) -> dict:
    """The CustomResourceDefinition of ``kind`` (``"RayJob"`` or ``"RayCluster"``), a copy."""
    return copy.deepcopy(_crd(kind))


def served_versions(kind: str) -> dict[str, bool]:
    """``{version: deprecated}`` for every version the CRD serves (``v1`` is the storage one)."""
    return {v["name"]: bool(v.get("deprecated")) for v in _crd(kind)["spec"]["versions"]
            if v.get("served")}


def crd_schema(kind: str, version: str = "v1") -> dict:
    """The ``openAPIV3Schema`` of one served version of the CRD, unchanged (a copy)."""
    for v in _crd(kind)["spec"]["versions"]:
        if v["name"] == version and v.get("served"):
            return copy.deepcopy(v["schema"]["openAPIV3Schema"])
    raise KeyError(_("{kind} CRD does not serve version {version!r}").format(kind=kind, version=version))


def _adapt(node, strict: bool):
    """Make a Kubernetes structural schema usable by a JSON Schema validator.

    * ``nullable: true`` becomes a ``"null"`` alternative of ``type``;
    * with ``strict``, an object that lists its ``properties`` and neither has
      ``additionalProperties`` nor ``x-kubernetes-preserve-unknown-fields`` rejects other keys
      (the API server prunes them silently; ``kubectl apply`` rejects them by default);
    * ``x-kubernetes-int-or-string`` needs nothing: the CRDs spell it out as
      ``anyOf: [integer, string]`` and JSON Schema applies ``pattern`` to strings only;
    * other ``x-kubernetes-*`` keys are kept (a validator ignores unknown keywords): the error
      formatter reads them, CEL rules are not evaluated.
    """
    if isinstance(node, list):
        return [_adapt(x, strict) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _adapt(v, strict) if k not in ("enum", "default", "example") else v
           for k, v in node.items()}
    if node.get("nullable") and isinstance(node.get("type"), str):
        out["type"] = [node["type"], "null"]
    if (strict and node.get("type") == "object" and "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


@functools.lru_cache(maxsize=None)
def _validator(kind: str, version: str, strict: bool):
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())

    @checker.checks("int32")
    def _int32(value):  # noqa: ANN001 - jsonschema's format-check signature
        return not isinstance(value, int) or -2**31 <= value < 2**31

    @checker.checks("int64")
    def _int64(value):  # noqa: ANN001
        return not isinstance(value, int) or -2**63 <= value < 2**63

    schema = _adapt(crd_schema(kind, version), strict)
    return jsonschema.Draft7Validator(schema, format_checker=checker)


@dataclass(frozen=True, order=True)
class SchemaProblem:
    """One reason a manifest would be rejected: where (a dotted path) and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '<manifest>'}: {self.message}"


def format_path(parts) -> str:
    """``["spec", "workerGroupSpecs", 0, "maxReplicas"]`` -> ``spec.workerGroupSpecs[0].maxReplicas``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(part)):
            text += ("." if text else "") + str(part)
        else:
            text += f"[{str(part)!r}]"
    return text


def format_problems(problems) -> str:
    if not problems:
        return "no problems"
    lines = [f"{len(problems)} problem(s):"] + [f"  - {p}" for p in problems]
    return "\n".join(lines)


_JSON_TYPE = {"string": N_("a string"), "integer": N_("an integer"), "number": N_("a number"),
              "boolean": N_("a boolean (true/false)"), "object": N_("a mapping"), "array": N_("a list")}


def _yaml_kind(value) -> str:
    if isinstance(value, bool):
        return _("the boolean {value}").format(value=str(value).lower())
    if isinstance(value, int):
        return _("the integer {value}").format(value=value)
    if isinstance(value, float):
        return _("the number {value}").format(value=value)
    if isinstance(value, str):
        return _("the string {value!r}").format(value=value)
    if value is None:
        return "null"
    if isinstance(value, dict):
        return _("a mapping")
    if isinstance(value, list):
        return _("a list")
    return type(value).__name__


def _problems_from_error(err, kind: str, version: str) -> list[SchemaProblem]:
    path = list(err.absolute_path)
    value = err.instance
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "additionalProperties" and isinstance(value, dict):
        known = set(schema.get("properties", {}))
        return [SchemaProblem(format_path(path + [k]),
                              _("unknown field (the {kind} {version} schema has no such field; "
                                "check the spelling and the indentation)").format(kind=kind, version=version))
                for k in sorted(set(value) - known)]
    if err.validator == "required" and isinstance(value, dict):
        return [SchemaProblem(format_path(path + [k]), _("required field is missing"))
                for k in err.validator_value if k not in value]
    if err.validator == "type":
        wanted = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        wanted_text = _(" or ").join(_(_JSON_TYPE[t]) if t in _JSON_TYPE else t for t in wanted if t != "null")
        msg = _("expected {wanted}, got {value}").format(wanted=wanted_text, value=_yaml_kind(value))
        if "string" in wanted and isinstance(value, (bool, int, float)):
            quoted = str(value).lower() if isinstance(value, bool) else str(value)
            msg += _(' (quote it in YAML: "{quoted}")').format(quoted=quoted)
        elif "integer" in wanted and isinstance(value, str):
            msg += _(" (write the number without quotes)")
        return [SchemaProblem(format_path(path), msg)]
    if err.validator == "pattern" and schema.get("x-kubernetes-int-or-string"):
        return [SchemaProblem(format_path(path),
                              _("{value!r} is not a Kubernetes quantity (write e.g. 8, \"500m\" "
                                "or \"32Gi\")").format(value=value))]
    if err.validator == "anyOf" and schema.get("x-kubernetes-int-or-string"):
        return [SchemaProblem(format_path(path),
                              _("expected an integer or a string, got {value}").format(value=_yaml_kind(value)))]
    if err.validator == "enum":
        return [SchemaProblem(format_path(path),
                              _("{value!r} is not one of {allowed}").format(value=value, allowed=list(err.validator_value)))]
    if err.validator == "format":
        return [SchemaProblem(format_path(path),
                              _("{value!r} does not fit the {format} format").format(value=value, format=err.validator_value))]
    return [SchemaProblem(format_path(path), err.message)]
